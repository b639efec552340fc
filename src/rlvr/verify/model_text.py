"""What part of a completion is the model's answer text, written the way a reader reads it.

Verifiers see raw decoded text. Before any answer is looked for, these are settled here, each a
rule of its own with its own tests:

* :func:`final_section`: in the reasoning formats whose markers are control tokens or brackets
  (OpenThoughts, gpt-oss channels, ``[THINK]``, ``◁think▷``) only the final section is the answer.
* :func:`model_part`: text after the model's own end-of-turn marker (``<|im_end|>``,
  ``<|endoftext|>``, ``</s>``, ``<|eot_id|>``, ``<end_of_turn>``...) or inside a turn it made up
  for someone else (``<|im_start|>user ...``, ``[INST]``) is not the model's answer: it ends
  where the first chat-control token stands.
* :func:`visible_latex`: LaTeX that does not render is not written: ``\\phantom{..}`` (and its
  ``h``/``v`` forms), ``\\iffalse ... \\fi``, a group coloured white (``{\\color{white} ..}``,
  ``\\textcolor{white}{..}``) and ``%`` comments.
* :func:`plain_unicode`: what chat models print for arithmetic reads as ASCII: the Unicode
  minus and dashes used as minus signs, vulgar fractions (``½``, ``2½`` -> ``2 1/2``), the
  fraction slash, the digits of every script (full-width, Arabic-Indic, Devanagari...); and
  Markdown emphasis around an answer (``**42**``).
* :func:`visible_markup`: markup a reader does not see is not written: HTML comments, Markdown
  image alt text, HTML attributes (an ``<img alt="...">``).
* :func:`local_numbers`: numbers as the text's own locale writes them: digit groups joined by a
  no-break or narrow no-break space (``1 234 567``), a decimal comma with dot grouping
  (``1.234,5``), a decimal comma in text of a language that writes one (German, Spanish, French,
  Italian, Portuguese, Russian...), LaTeX's ``2{,}5``.
* :func:`unquoted`: what the model mentions is not what it says: a box inside a quotation (a
  restatement of the question), and an answer phrase inside a quotation that stands in a sentence
  of its own ("a common mistake is to say "the answer is 12"", 有人说“答案是12”); a quotation that
  is the whole sentence, or follows only a connective ("So, "the answer is 12".") is the model's.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# ChatML, Llama 3, Phi, Qwen and friends: <|anything|>; SentencePiece's </s>; Gemma's turns;
# Llama 2's [INST]. Any of them ends what the model said (or starts a turn it had no business writing).
_CONTROL = re.compile(
    r"<\|[A-Za-z0-9_.:\- ]{1,40}\|>|</s>|<eos>|<end_of_turn>|<start_of_turn>|\[/?INST\]|<<SYS>>",
)


# Reasoning formats whose markers are chat-control tokens or brackets: the final section is the answer.
_SOLUTION = re.compile(r"<\|begin_of_solution\|>(.*?)(?:<\|end_of_solution\|>|$)", re.DOTALL)
_FINAL_CHANNEL = re.compile(
    r"<\|channel\|>\s*final\s*(?:<\|constrain\|>[^<]*)?<\|message\|>(.*?)(?:<\|(?:end|return|call)\|>|$)", re.DOTALL
)
_BRACKET_THINK = (("[THINK]", "[/THINK]"), ("◁think▷", "◁/think▷"))


def final_section(text: str) -> str:
    """The final (answer) section of the reasoning formats models write, the reasoning left out:
    OpenThoughts' ``<|begin_of_solution|>`` (after ``<|begin_of_thought|>``), gpt-oss's ``final``
    channel (after ``analysis``), Magistral's ``[THINK]...[/THINK]``, Kimi's ``◁think▷...◁/think▷``
    (``<think>`` is :func:`rlvr.verify.math.extract.strip_reasoning`'s). Reasoning that never
    reached its final section gives ``""``: a value only in the reasoning is not the answer.
    Other text is returned as it is.

    Examples:
        >>> final_section("<|begin_of_thought|>3?<|end_of_thought|><|begin_of_solution|>It is 4.<|end_of_solution|>")
        'It is 4.'
        >>> final_section("<|channel|>analysis<|message|>7?<|end|><|channel|>final<|message|>8<|return|>")
        '8'
        >>> final_section("[THINK]is it 5?[/THINK]The answer is 6."), final_section("[THINK]5, surely")
        ('The answer is 6.', '')
    """
    if "<|" not in text and "THINK]" not in text and "think▷" not in text:
        return text  # most texts: none of the formats' markers
    if "<|" in text:
        if "begin_of_thought|>" in text or "begin_of_solution|>" in text:
            found = _SOLUTION.findall(text)
            return found[-1] if found else ""
        if "<|channel|>" in text:
            found = _FINAL_CHANNEL.findall(text)
            return found[-1] if found else ""
    for open_, close in _BRACKET_THINK:
        if open_ in text or close in text:
            at = text.rfind(close)
            return text[at + len(close) :] if at >= 0 else ""
    return text


def model_part(text: str) -> str:
    """The completion up to its first chat-control token.

    Examples:
        >>> model_part("The answer is 41.<|im_end|>The answer is 42.")
        'The answer is 41.'
    """
    # every control token holds one of these literals: most texts hold none (GSM8K's "<<4*2=8>>"
    # annotations are not one), and the pattern is never tried
    if "INST]" not in text and (
        "<" not in text
        or not ("<|" in text or "</s>" in text or "<eos>" in text or "_of_turn>" in text or "<<SYS>>" in text)
    ):
        return text
    # the pattern is tried only where a token can open (a search of the whole pattern over a long
    # solution cost more than the rest of the text rules together)
    cut = len(text)
    for opener in ("<", "["):
        i = text.find(opener)
        while i != -1 and i < cut:
            if _CONTROL.match(text, i):
                cut = i
                break
            i = text.find(opener, i + 1)
    return text[:cut]


_PHANTOM = re.compile(r"\\[hv]?phantom\s*(?=\{)")
_IFFALSE = re.compile(r"\\iffalse\b.*?(?:\\fi\b|$)", re.DOTALL)
# a comment: "%" opening a line or after a word (never "25%" or "25 %"), then a space or a command,
# hiding LaTeX (never an answer tag: "%o0<answer>7</answer>" is not LaTeX)
_COMMENT = re.compile(r"(?:(?m:^)|(?<=[^\d\s\\]\s))%(?=[\s\\])(?=[^\n]*\\[a-zA-Z])(?![^\n]*</?answer)[^\n]*")
_WHITE = r"\s*\{\s*(?:white|#?fff(?:fff)?|ffffff)\s*\}"
# the commands an answer is read through, redefined (\renewcommand{\boxed}..., \def\boxed, \let\fbox)
_REDEFINED = re.compile(
    r"\\(?:re)?newcommand\*?\s*\{?\s*\\(?:boxed|fbox|text\w*|d?frac|color|textcolor|phantom)\b"
    r"|\\(?:def|let|gdef|edef)\s*\\(?:boxed|fbox|text\w*|frac|color|textcolor)\b"
)
_COMMENT_ENV = re.compile(r"\\begin\{comment\}.*?(?:\\end\{comment\}|$)", re.DOTALL)
# a group scaled to nothing; the brace group after the match (the content) is dropped with it
_ZERO_SIZE = re.compile(
    r"\\scalebox\s*\{\s*0*\.?0*\s*\}|\\resizebox\*?\s*\{\s*0*\.?0*\s*(?:pt|em|ex|cm|mm|in)?\s*\}\s*\{[^{}]*\}"
    r"|\{\s*\\fontsize\s*\{\s*0*\.?0*\s*(?:pt)?\s*\}"
)
_COLOR_GROUP = re.compile(r"\{\s*\\color" + _WHITE, re.IGNORECASE)
_TEXTCOLOR = re.compile(r"\\(?:textcolor|colorbox)" + _WHITE + r"\s*(?=\{)", re.IGNORECASE)


def _close(s: str, i: int) -> int:
    """Index just past the brace group opening at ``s[i]`` (the end of ``s`` when it never closes)."""
    depth = 0
    j = i
    while j < len(s):
        c = s[j]
        if c == "\\":
            j += 2
            continue
        depth += c == "{"
        depth -= c == "}"
        if depth == 0:
            return j + 1
        j += 1
    return len(s)


def _drop_groups(s: str, pattern: re.Pattern[str]) -> str:
    """Remove each match of ``pattern`` with the brace group that it opens or that follows it."""
    while m := pattern.search(s):
        brace = m.start() if s[m.start()] == "{" else m.end()
        s = s[: m.start()] + " " + s[_close(s, brace) :]
    return s


def visible_latex(text: str) -> str:
    r"""The text as LaTeX would render it, as far as an answer is concerned.

    Examples:
        >>> visible_latex(r"\boxed{41} {\color{white}\boxed{42}} \phantom{\boxed{43}}").split()
        ['\\boxed{41}']
    """
    if "\\" not in text and "%" not in text:
        return text
    if ("command" in text or "def" in text or "\\let" in text) and (m := _REDEFINED.search(text)) is not None:
        text = text[: m.start()]  # past a redefinition nothing reads as written
    s = _IFFALSE.sub(" ", text) if "\\iffalse" in text else text
    s = _COMMENT_ENV.sub(" ", s) if "{comment}" in s else s
    if "scalebox" in s or "resizebox" in s or "fontsize" in s:  # scaled to nothing: \scalebox{0}{..}
        s = _drop_groups(s, _ZERO_SIZE)
    s = _COMMENT.sub("", s) if "%" in s else s
    s = _drop_groups(s, _PHANTOM) if "phantom" in s else s
    if "color" in s:  # \color, \textcolor, \colorbox
        s = _drop_groups(_drop_groups(s, _COLOR_GROUP), _TEXTCOLOR)
    return s


_MINUS = str.maketrans(
    {
        "\u2212": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\ufe63": "-",
        "\uff0d": "-",
        "\u2044": "/",
        "\u2215": "/",
        "\u00a0": " ",
        "\u202f": " ",
        "\u2009": " ",
    }
)
_VULGAR_CHARS = r"\u00bc-\u00be\u2150-\u215e\u2189"  # ¼-¾, ⅐-⅞, ↉
_VULGAR = re.compile(rf"(\d?)([{_VULGAR_CHARS}])")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
# decimal digits of other scripts (Arabic-Indic, Devanagari, Bengali, Thai...): read as the digits they are
_OTHER_DIGITS = re.compile(r"[\u0660-\u0669\u06f0-\u06f9\u0966-\u096f\u09e6-\u09ef\u0e50-\u0e59\uff10-\uff19]")
# every character a step of plain_unicode rewrites (the minus table, vulgar fractions, full-width and
# other digits): a text without one of them only loses its Markdown emphasis
_REWRITTEN = re.compile("[" + "".join(re.escape(chr(c)) for c in _MINUS) + _VULGAR_CHARS + _OTHER_DIGITS.pattern[1:])


@lru_cache(maxsize=64)
def _vulgar(ch: str) -> str:
    """``½`` -> ``1/2`` from the character's own decomposition (``<fraction> 1 ⁄ 2``)."""
    parts = unicodedata.decomposition(ch).split()[1:]
    return "".join(chr(int(p, 16)) for p in parts).replace("\u2044", "/")


def plain_unicode(text: str) -> str:
    """Unicode maths and Markdown emphasis as a reader takes them.

    The en dash counts as a minus only between a space or an operator and a digit (``x = –2``),
    never between two numbers (``2–3`` stays a range).

    Examples:
        >>> plain_unicode("x = −2, add 2½ cups and **42**")
        'x = -2, add 2 1/2 cups and 42'
    """
    if text.isascii() or not _REWRITTEN.search(text):  # "farmer’s": nothing below changes it
        return _BOLD.sub(r"\2", text) if ("**" in text or "__" in text) else text
    if "\u00a0" in text or "\u202f" in text or "\u2009" in text:  # digit groups a no-break space joins
        text = _NBSP_GROUPS.sub(lambda m: re.sub(r"\D", "", m.group(0)), text)
    text = re.sub(r"(?<=\d)\u2013(?=\d)", "\u2014", text)  # 2–3: a range, kept apart from the minus
    text = text.translate(_MINUS)
    text = _VULGAR.sub(lambda m: (m.group(1) + " " if m.group(1) else "") + _vulgar(m.group(2)), text)
    text = unicodedata.normalize("NFKC", text) if re.search(r"[\uff10-\uff19]", text) else text
    text = _OTHER_DIGITS.sub(lambda m: str(unicodedata.digit(m.group(0))), text)  # ١٢, १२ -> 12
    return _BOLD.sub(r"\2", text) if ("**" in text or "__" in text) else text


_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
_MD_IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)")
# a Markdown link whose target is an address or hides an answer: only its text is shown
_MD_LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\((?=[^)\n]*(?:[:/#]|\\boxed))[^)\s]*\)")
# elements a browser does not render: <template>, hidden, display:none, visibility:hidden
_HIDDEN_ELEMENT = re.compile(
    r"<(template|(\w+)[^<>]*?(?:\shidden\b|display\s*:\s*none|visibility\s*:\s*hidden)[^<>]*)>.*?(?:</(?:template|\2)\s*>|$)",
    re.DOTALL | re.IGNORECASE,
)
_HTML_TAG = re.compile(
    r"<(?!/?(?:answer|think)\b)[a-zA-Z][^<>\n]*\b(?:alt|title|data-[\w-]+)\s*=\s*(['\"]).*?\1[^<>]*>"
)


def visible_markup(text: str) -> str:
    """The text without the markup a reader does not see.

    Examples:
        >>> visible_markup('It is 7. <!-- it is 12 --> ![12](x.png) <img alt="12" src="y">').split()
        ['It', 'is', '7.']
    """
    if "<" not in text and "](" not in text:
        return text
    text = _HTML_COMMENT.sub(" ", text) if "<!--" in text else text
    text = _MD_IMAGE.sub(" ", text) if "![" in text else text
    text = _MD_LINK.sub(r"\1", text) if "](" in text else text  # a link's target is not shown
    if "<" in text:
        low = text.lower()  # one pass in C: most texts with a "<" (an inequality) hold none of these
        if "hidden" in low or "template" in low or "none" in low:
            text = _HIDDEN_ELEMENT.sub(" ", text)
    return _HTML_TAG.sub(" ", text) if "<" in text else text


# a language that writes a decimal comma: a few of its most common words (or Cyrillic script); a set
# of words, not one alternation regex, which cost more than the rest of the reader together
_COMMA_WORDS = frozenset(
    "die der das ist und nicht antwort ergebnis la el es los las respuesta resultado est une réponse "
    "résultat donc il è risposta risultato quindi não resposta então são är och het een antwoord "
    "odpowiedź wynik".split()
)
_WORD = re.compile(r"[^\W\d_]+")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_DECIMAL_LIKE = re.compile(r"[.,](?<=\d[.,])\d")  # \d[.,]\d, found from its mark: 3x faster


#: Text split into its words as UTF-8 bytes: every byte but an ASCII letter to a space (a non-ASCII
#: character's bytes are all >= 0x80, so it separates words), 4x faster than a regex findall.
NOT_LETTER_TO_SPACE = bytes.maketrans(
    bytes(b for b in range(256) if not (b < 128 and chr(b).isalpha())),
    b" " * sum(not (b < 128 and chr(b).isalpha()) for b in range(256)),
)
_ASCII_COMMA_WORDS = frozenset(w.encode() for w in _COMMA_WORDS if w.isascii())


def _writes_decimal_comma(text: str) -> bool:
    """Whether the text is in a language that writes a decimal comma."""
    if text.isascii():  # no Cyrillic; the words are its runs of letters
        return not _ASCII_COMMA_WORDS.isdisjoint(text.lower().encode().translate(NOT_LETTER_TO_SPACE).split())
    return bool(_CYRILLIC.search(text)) or not _COMMA_WORDS.isdisjoint(_WORD.findall(text.lower()))


_NBSP_GROUPS = re.compile(r"(?<![\d.,])\d{1,3}(?:[\u00a0\u202f\u2009]\d{3})+(?![\d])")
_DOT_GROUPS_COMMA = re.compile(r"(?<![\d.,])\d{1,3}(?:\.\d{3})+,\d+(?![\d]|[.,]\d)")
_DOT_GROUPS = re.compile(r"(?<![\d.,])\d{1,3}(?:\.\d{3})+(?![\d]|[.,]\d)")
_COMMA_DECIMAL = re.compile(r"(?<![\d.,])(\d+),(\d+)(?![\d]|[.,]\d|\s*\d)")
_LATEX_COMMA = re.compile(r"(\d)\{,\}(\d+)")
# what each rewrite needs somewhere in the text (a literal scan; the patterns' leading lookbehind
# makes the regex engine try every position, 40x slower): without it the rewrite changes nothing
_HAS_DOT_GROUPS_COMMA = re.compile(r"\.\d{3},\d")
_HAS_LOCAL_FORM = re.compile(r"[.,](?:(?<=\d,)\d|(?<=\.)\d{3})")  # \.\d{3}|\d,\d, from the mark


def local_numbers(text: str) -> str:
    """Numbers written the way the text's locale writes them, as a reader of that locale reads them.

    Examples:
        >>> local_numbers("Die Antwort ist 1.234,5 und nicht 3,75; total 1\u00a0000\u00a0000")
        'Die Antwort ist 1234.5 und nicht 3.75; total 1000000'
        >>> local_numbers("The points (3,5) and 1.234 stay as written; $2{,}5$ and $1{,}000$")
        'The points (3,5) and 1.234 stay as written; $2.5$ and $1000$'
    """
    if "\u00a0" in text or "\u202f" in text or "\u2009" in text:
        text = _NBSP_GROUPS.sub(lambda m: re.sub(r"\D", "", m.group(0)), text)
    if "{,}" in text:
        text = _LATEX_COMMA.sub(lambda m: m.group(1) + ("" if len(m.group(2)) == 3 else ".") + m.group(2), text)
    if not _DECIMAL_LIKE.search(text):
        return text
    if _HAS_DOT_GROUPS_COMMA.search(text):
        text = _DOT_GROUPS_COMMA.sub(lambda m: m.group(0).replace(".", "").replace(",", "."), text)
    # a decimal comma, and dot-grouped thousands, in its own words
    if _HAS_LOCAL_FORM.search(text) and _writes_decimal_comma(text):
        text = _DOT_GROUPS.sub(lambda m: m.group(0).replace(".", ""), text)
        text = _COMMA_DECIMAL.sub(r"\1.\2", text)
    return text


_QUOTED_BOX = re.compile(
    r"\"[^\"\n]*\\(?:boxed|fbox)[^\"\n]*\"|“[^”\n]*\\(?:boxed|fbox)[^”\n]*”|«[^»\n]*\\(?:boxed|fbox)[^»\n]*»"
)
#: A quotation on one line, in the marks the languages rlvr reads write.
_QUOTATION = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|«[^»\n]*»|„[^“”\n]*[“”]|「[^」\n]*」|『[^』\n]*』")
_QUOTE_MARKS = ('"', "“", "«", "„", "「", "『")

# (one "answer" alternative, the plural of a several-part answer inside it: "the answers are 3 and 5")
_ENGLISH_ANSWER_IS = r"(?:final\s+|the\s+)?answer(?:\s*(?:is\b|:|=|(?=\$|\\[(\[]))|s\s*(?:are\b|:|=))\s*(?::\s*)?"
_ENGLISH_ONLY = re.compile(_ENGLISH_ANSWER_IS, re.IGNORECASE)
#: "The answer is" / "Final answer:" in the languages models answer in.
ANSWER_IS = re.compile(
    _ENGLISH_ANSWER_IS + r"|(?:最终答案|最終答案|答案|答え|解答)\s*(?:是|为|為|は|:|：)\s*[:：]?\s*"
    r"|(?:la\s+respuesta(?:\s+final)?\s+es|la\s+r[ée]ponse(?:\s+finale)?\s+est|die\s+(?:endg[üu]ltige\s+)?antwort\s+"
    r"(?:ist|lautet)|ist\s+die\s+(?:endg[üu]ltige\s+)?antwort|a\s+resposta(?:\s+final)?\s+[ée]|la\s+risposta(?:\s+finale)?\s+[èe]|(?:окончательный\s+)?ответ"
    r"(?:\s*(?::|—|-|равен)|\s+(?!(?:на|в|к|не)\s)(?=\S))"  # "ответ 12", "ответ двенадцать": not "ответ на"
    # a label with a colon: "Respuesta: 12", "Réponse finale : 12", "Endgültige Antwort: 12"
    r"|(?:(?:endg[üu]ltige\s+)?antwort|(?:respuesta|r[ée]ponse|risposta|resposta)(?:\s+finale?)?)\s*:)\s*:?\s*",
    re.IGNORECASE,
)
# a word every marker of ANSWER_IS holds: a text with none of them is not scanned
_OTHER_ANSWER_WORDS = ("spuesta", "ponse", "sposta")


def answer_pattern(text: str) -> re.Pattern[str] | None:
    """The pattern of "the answer is" markers to scan ``text`` with: None when it holds no word every
    marker holds, the English markers alone when it holds no other language's (a third of the cost)."""
    folded = text.casefold()
    other = (
        (not folded.isascii() and ("答" in folded or "ответ" in folded))
        or any(word in folded for word in _OTHER_ANSWER_WORDS)
        or "ntwort" in folded  # German's word has no "po"
    )
    if other:
        return ANSWER_IS
    return _ENGLISH_ONLY if "answer" in folded else None


#: Words that join a sentence to the one before it without saying anything of their own: a quotation
#: after one of them alone is still the model's own sentence.
_CONNECTIVE = re.compile(
    r"(?:so|thus|hence|therefore|then|finally|and|overall|in\s+(?:short|summary|conclusion)|"
    r"donc|ainsi|así\s+que|por\s+lo\s+tanto|entonces|also|daher|somit|итак|поэтому|所以|因此|故|综上所述|よって|したがって)?",
    re.IGNORECASE,
)


def _embedded(text: str, start: int, end: int) -> bool:
    """Whether the quotation ``text[start:end]`` stands inside a sentence of the model's (words of
    its own before it in its sentence, or after it on its line), rather than being the sentence."""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start]
    ends = [m.end() for m in re.finditer(r"[.!?。！？;；](?=\s|$)|[。！？；]", before)]
    before = before[ends[-1] :] if ends else before
    before = re.sub(r"[\s,:，：*_>-]+", " ", before).strip()
    if before and not _CONNECTIVE.fullmatch(before):
        return True
    line_end = text.find("\n", end)
    after = text[end : line_end if line_end >= 0 else len(text)]
    after = re.split(r"(?<=[.!?。！？;；])\s", after, maxsplit=1)[0]
    return re.search(r"[^\W\d_]", after) is not None


def unquoted(text: str) -> str:
    r"""The text without what the model mentions rather than says: quotations that hold a box (the
    question restated, a problem quoted) and quotations inside a sentence that hold an answer
    phrase (a mistake named, someone's claim reported, a form described).

    Examples:
        >>> unquoted('The problem says "show that \\boxed{12} is the answer"; I find x = 7.').split()
        ['The', 'problem', 'says', ';', 'I', 'find', 'x', '=', '7.']
        >>> unquoted('A common mistake is to say "the answer is 12". It is 14.').split()
        ['A', 'common', 'mistake', 'is', 'to', 'say', '.', 'It', 'is', '14.']
        >>> unquoted('So, "the answer is 14".')
        'So, "the answer is 14".'
    """
    if not any(mark in text for mark in _QUOTE_MARKS):
        return text
    if "boxed" in text or "fbox" in text:
        text = _QUOTED_BOX.sub(" ", text)  # each quotation the pattern takes opens with one of these
    if (pattern := answer_pattern(text)) is None:
        return text
    drop = [
        (q.start(), q.end())
        for q in _QUOTATION.finditer(text)
        if pattern.search(q.group(0)[1:-1]) and _embedded(text, q.start(), q.end())
    ]
    for start, end in reversed(drop):
        text = text[:start] + " " + text[end:]
    return text


def answer_text(text: str) -> str:
    """All of them, in the order a reader applies them."""
    return local_numbers(plain_unicode(unquoted(visible_markup(visible_latex(model_part(final_section(text)))))))
