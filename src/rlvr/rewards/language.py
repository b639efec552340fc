"""``language_consistency``: is the completion written in the prompt's language?

R1-Zero mixed languages inside one answer; R1 added a reward for the share of the
text in the target language. We measure that share over *letters* only (numbers,
LaTeX, code and punctuation are language-neutral):

1. strip math (``$...$``, ``\\(...\\)``, ``\\[...\\]``, ``\\boxed{..}``), code blocks and tags;
2. split the rest into runs of one script (Han, kana, Hangul, Cyrillic, Arabic,
   Latin, ...) and then into sentences;
3. a run in a different script from the target's is other-language outright; a
   Latin-script sentence of at least ``min_letters`` letters is identified with
   py3langid (an offline, maintained fork of langid.py, 97 languages); shorter
   ones are too short to identify and count as the target (benefit of the doubt);
4. the reward is the share of letters judged to be in the target language.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from rlvr.rewards.base import Reward, Scored, column, prompt_text, register

_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|\\\(.*?\\\)|\\\[.*?\\\]|```.*?(```|$)|<[^>]{1,20}>|\\[a-zA-Z]+", re.DOTALL)
_VARIABLE = re.compile(r"(?<![^\W\d_])[A-Za-z](?![^\W\d_])")
_SENTENCE = re.compile(r"(?<=[.!?;:。！？；：\n])\s*")

#: Scripts that identify their language outright.
_SCRIPT_LANG = {
    "Han": "zh",
    "Kana": "ja",
    "Hangul": "ko",
    "Arabic": "ar",
    "Hebrew": "he",
    "Thai": "th",
    "Greek": "el",
    "Devanagari": "hi",
}
#: The script of languages not written in Latin letters.
_LANG_SCRIPT = {
    **{v: k for k, v in _SCRIPT_LANG.items()},
    "ru": "Cyrillic",
    "uk": "Cyrillic",
    "bg": "Cyrillic",
    "sr": "Cyrillic",
    "mk": "Cyrillic",
    "be": "Cyrillic",
    "kk": "Cyrillic",
}


def script_of(ch: str) -> str | None:
    """The writing system of one letter (``None`` for non-letters)."""
    if not ch.isalpha():
        return None
    o = ord(ch)
    if 0x3040 <= o <= 0x30FF:
        return "Kana"
    if 0x3400 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF:
        return "Han"
    if 0xAC00 <= o <= 0xD7AF or 0x1100 <= o <= 0x11FF:
        return "Hangul"
    name = unicodedata.name(ch, "")
    for script in ("LATIN", "CYRILLIC", "ARABIC", "HEBREW", "GREEK", "THAI", "DEVANAGARI"):
        if name.startswith(script):
            return script.capitalize()
    return "Other"


@lru_cache(maxsize=1)
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def _runs(text: str) -> list[tuple[str, str]]:
    """``(script, text)`` runs; non-letters join the run they sit in; kanji next to kana is Japanese."""
    runs: list[tuple[str, list[str]]] = []
    for ch in text:
        s = script_of(ch)
        if runs and s is not None and {s, runs[-1][0]} == {"Han", "Kana"}:
            runs[-1] = ("Kana", runs[-1][1])
            s = "Kana"
        if s is None or (runs and runs[-1][0] == s):
            if runs:
                runs[-1][1].append(ch)
            continue
        runs.append((s, [ch]))
    return [(s, "".join(cs)) for s, cs in runs]


def _letters(s: str) -> int:
    return sum(c.isalpha() for c in s)


def letters_by_language(text: str, min_letters: int = 15) -> dict[str, int]:
    """Letters per language: an ISO code, ``?`` for Latin sentences too short to identify,
    or a script name (``Cyrillic``, ``Other``) where the script alone does not say."""
    counts: dict[str, int] = {}
    for script, run in _runs(_MATH.sub(" ", text)):
        if script == "Latin":
            run = _VARIABLE.sub(" ", run)  # x, y, n: maths, not language
            for sent in _SENTENCE.split(run):
                if n := _letters(sent):
                    lang = str(_identifier().classify(sent)[0]) if n >= min_letters else "?"
                    counts[lang] = counts.get(lang, 0) + n
        else:
            lang = _SCRIPT_LANG.get(script, script)
            counts[lang] = counts.get(lang, 0) + _letters(run)
    return counts


def detect_language(text: str, min_letters: int = 15) -> str | None:
    """The dominant language of ``text``: an ISO code, or a script name (``Latin``,
    ``Cyrillic``) when the text is too short to tell which language of that script;
    ``None`` when it has no letters."""
    by_script: dict[str, list[str]] = {}
    for script, run in _runs(_MATH.sub(" ", text)):
        by_script.setdefault(script, []).append(run)
    if not by_script:
        return None
    top = max(by_script, key=lambda s: sum(map(_letters, by_script[s])))
    if top in _SCRIPT_LANG:
        return _SCRIPT_LANG[top]
    body = " ".join(by_script[top])
    if _letters(body) < 2 * min_letters:
        return top
    return str(_identifier().classify(body)[0])


def consistency(text: str, target: str, min_letters: int = 15) -> tuple[float, dict[str, int]]:
    """Share of ``text``'s letters in ``target`` (a language code or a script name), 1.0 when it has
    no letters; also the per-language letter counts."""
    counts = letters_by_language(text, min_letters)
    total = sum(counts.values())
    if total == 0:
        return 1.0, counts
    is_script = target[:1].isupper()
    script = target if is_script else _LANG_SCRIPT.get(target, "Latin")

    def same(code: str) -> bool:
        if code == target:
            return True
        if script == "Latin":  # unidentified Latin counts as the target; identified must match
            return code == "?" or (is_script and code.islower() and code not in _LANG_SCRIPT)
        return code == script or (code in _LANG_SCRIPT and _LANG_SCRIPT[code] == script and is_script)

    ok = sum(n for code, n in counts.items() if same(code))
    return ok / total, counts


@register("language_consistency", "language")
class LanguageConsistency(Reward):
    """Share of the completion's letters in the target language, in ``[0, 1]``.

    The target is the row's ``language`` column when there is one, else
    ``language=`` given here, else the language detected in the prompt; a row with
    none of these gets ``None``.

    Args:
        language: an ISO 639-1 code (``en``, ``zh``...) to require for every row.
        min_letters: Latin-script sentences shorter than this are not identified.
    """

    name = "language_consistency"

    def __init__(self, *, language: str | None = None, min_letters: int = 15) -> None:
        super().__init__()
        self.language, self.min_letters = language, min_letters

    def _score(self, texts: list[str], columns: Mapping[str, Any]) -> list[Scored]:
        n = len(texts)
        langs = column(columns, "language", n) or [self.language] * n
        prompts = column(columns, "prompt", n) or column(columns, "prompts", n) or [None] * n
        out = []
        for text, lang, prompt in zip(texts, langs, prompts):
            target = lang or detect_language(prompt_text(prompt), self.min_letters)
            if not target:
                out.append(Scored(None, info={"problem": "no target language (no language column or prompt)"}))
                continue
            share, counts = consistency(text, target, self.min_letters)
            out.append(Scored(share, info={"target": target, "letters": counts}))
        return out
