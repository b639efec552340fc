"""Property tests: a value always equals itself written another way."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr import verify_math
from rlvr.verify import grader_talk as grader_talk_module

ints = st.integers(min_value=-(10**9), max_value=10**9)
small = st.integers(min_value=1, max_value=10**6)


@settings(max_examples=60, deadline=None)
@given(ints)
def test_integer_with_thousands_separators(n: int) -> None:
    assert verify_math(rf"\boxed{{{n:,}}}", str(n)).correct


@settings(max_examples=60, deadline=None)
@given(ints, small)
def test_fraction_forms(p: int, q: int) -> None:
    f = Fraction(p, q)
    latex = rf"\frac{{{abs(f.numerator)}}}{{{f.denominator}}}"
    latex = "-" + latex if f < 0 else latex
    assert verify_math(rf"\boxed{{{latex}}}", f"{f.numerator}/{f.denominator}").correct


@settings(max_examples=60, deadline=None)
@given(ints, small)
def test_decimal_against_exact_fraction(p: int, q: int) -> None:
    f = Fraction(p, q)
    assert verify_math(rf"\boxed{{{float(f):.12g}}}", f"{f.numerator}/{f.denominator}").correct


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=10**6))
def test_percent_equals_its_fraction(n: int) -> None:
    assert verify_math(rf"\boxed{{{n}\%}}", str(Fraction(n, 100))).correct


@settings(max_examples=60, deadline=None)
@given(ints, ints)
def test_different_integers_are_wrong(a: int, b: int) -> None:
    v = verify_math(rf"\boxed{{{a}}}", str(b))
    assert v.correct == (a == b)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(min_value=-99, max_value=99), min_size=1, max_size=5, unique=True), st.randoms())
def test_solution_lists_are_unordered(xs: list[int], rnd) -> None:
    shuffled = xs[:]
    rnd.shuffle(shuffled)
    gold = " or ".join(f"x = {x}" for x in xs)
    assert verify_math(rf"\boxed{{{', '.join(map(str, shuffled))}}}", gold).correct


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab 1.2;\n!?.\u0663x", max_size=120), st.data())
def test_the_answers_clause_starts_where_the_clause_pattern_says(text: str, data: st.DataObject) -> None:
    """The backward search for the answer's clause (the fast path) agrees with one forward pass of
    the clause-end pattern, decimal points and long runs of them included."""
    from rlvr.verify.math.commitment import _CLAUSE_END, _clause_start

    at = data.draw(st.integers(min_value=0, max_value=len(text)))
    assert _clause_start(text, at) == max((m.end() for m in _CLAUSE_END.finditer(text, 0, at)), default=0)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80) | st.text(alphabet="Kein_ é3.a", max_size=30))
def test_an_ascii_clauses_words_are_what_the_word_pattern_finds(clause: str) -> None:
    """The commitment rules' word prefilter splits an ASCII clause as bytes (the fast path): the same
    words as ``\\w+`` on the lower-cased clause; a clause that is not ASCII is not split at all."""
    import re

    from rlvr.verify.math.commitment import _ascii_words

    if not clause.isascii():
        assert _ascii_words(clause) is None
        return
    low = clause.lower()
    expected = frozenset(re.findall(r"\w+", low)) | ({"no"} if "kein" in low else set())
    assert _ascii_words(clause) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="$\\5 ab\n.", max_size=60))
def test_price_dollars_are_masked_where_the_lookbehind_pattern_finds_them(text: str) -> None:
    """mask_currency skips a "$" after "\\" or "$" by hand (the fast path): the same text as the
    reading with the pattern's own lookbehind."""
    import re

    from rlvr.verify.math import extract

    def reference(t: str) -> str:
        out, pos = [], 0
        for m in re.finditer(r"(?<![\\$])\$(?=\d)", t):
            if m.start() < pos:
                continue
            close, line = t.find("$", m.end()), t.find("\n", m.end())
            unclosed = close == -1 or (line != -1 and line < close)
            inside = "" if unclosed else t[m.end() : close]
            prose = extract._CURRENCY_PROSE
            if unclosed or (prose.search(inside) and prose.search(extract._latex_free(inside))):
                out.append(t[pos : m.start()] + " ")
                pos = m.end()
            else:
                out.append(t[pos : close + 1])
                pos = close + 1
        return "".join(out) + t[pos:]

    assert extract.mask_currency(text) == reference(text)


@pytest.mark.parametrize("rule", range(len(grader_talk_module._RULES)))
def test_grader_talk_searches_a_rule_wherever_it_can_match(rule: int) -> None:
    """grader_talk searches a rule's regex only where the words it needs occur: every text the
    regex matches (Hypothesis writes them from the regex itself) must hold those words."""
    g = grader_talk_module
    what, pattern, alternatives = g._RULES[rule]

    @settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(pattern))
    def holds_the_words(text: str) -> None:
        low = text.lower()
        if pattern.search(low) is None:  # lower-casing can undo a match ("\u0130" and the like)
            return
        words = set(g._words(low))
        assert not g._ANY_FIRST.isdisjoint(words), text
        assert any(all(not words.isdisjoint(group) for group in ways) for ways in alternatives), (what, text)

    holds_the_words()


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(['"', "“", "”", "«", "»", "\\boxed{7}", "\\fbox{8}", "boxed", " a", "\n"]), max_size=8
    ).map("".join)
)
def test_a_quoted_box_is_dropped_where_the_pattern_finds_one(text: str) -> None:
    """unquoted looks for a quotation only in text holding a box and a quote mark (the fast path):
    the same text as the pattern's substitution everywhere."""
    from rlvr.verify import model_text as m

    assert m.unquoted(text) == m._QUOTED_BOX.sub(" ", text)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["<|im_end|>", "<|x|>", "</s>", "<eos>", "<end_of_turn>", "<start_of_turn>", "[INST]", "[/INST]"]
            + ["<<SYS>>", "<<4*2=8>>", "<", "[", "|>", "INST", "a", " 7", "<answer>", "_of_turn>", "’"]
        ),
        max_size=8,
    ).map("".join)
)
def test_model_part_cuts_where_the_control_pattern_first_matches(text: str) -> None:
    """model_part skips texts holding no control token's literal (the fast path): it cuts exactly where
    a search of the whole pattern first matches."""
    from rlvr.verify import model_text as m

    first = m._CONTROL.search(text)
    assert m.model_part(text) == (text[: first.start()] if first else text)


@settings(max_examples=500, deadline=None)
@given(
    st.text(
        alphabet="12 .a*_’é“\u00a0\u202f\u2009\u2212\u2012\u2013\ufe63\uff0d\u2044\u2215"
        "½⅓\u2189\uff11\u0663\u096a\u0e52ﬁ²",
        max_size=40,
    )
)
def test_plain_unicode_skips_only_text_that_no_step_changes(text: str) -> None:
    """plain_unicode takes a text holding none of the characters its steps rewrite as it is (the fast
    path, for "farmer’s"-like text): the same result as running every step."""
    import re

    from rlvr.verify import model_text as m

    fast = m.plain_unicode(text)
    every_step, m._REWRITTEN = m._REWRITTEN, re.compile("")  # matches every text: every step runs
    try:
        assert fast == m.plain_unicode(text)
    finally:
        m._REWRITTEN = every_step


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="12.,a \u0663", max_size=40))
def test_locale_prefilters_find_what_their_plain_patterns_find(text: str) -> None:
    """The locale rewrite's prefilters are searched from the mark (fast): they find a match exactly
    when the plain patterns ``\\d[.,]\\d`` and ``\\.\\d{3}|\\d,\\d`` do."""
    import re

    from rlvr.verify import model_text as m

    assert bool(m._DECIMAL_LIKE.search(text)) == bool(re.search(r"\d[.,]\d", text))
    assert bool(m._HAS_LOCAL_FORM.search(text)) == bool(re.search(r"\.\d{3}|\d,\d", text))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(["die", "La", "EST", "und", "réponse", "é", "the", "answer", "x_la", "2der", "l'est", "ответ"])
        | st.text(alphabet="ab_ 1,.;-'\u00e9\n", max_size=6),
        max_size=10,
    ).map(" ".join)
)
def test_the_decimal_comma_language_is_read_from_the_words_the_regex_reads(text: str) -> None:
    """ASCII text's words are split as bytes (the fast path): the same verdict as the letter-run
    regex and the Cyrillic check, which other text still takes."""
    import re

    from rlvr.verify import model_text as m

    reference = bool(re.search(r"[\u0400-\u04ff]", text)) or not m._COMMA_WORDS.isdisjoint(
        re.findall(r"[^\W\d_]+", text.lower())
    )
    assert m._writes_decimal_comma(text) == reference


# plain numbers, and spans one character away from one ("12.", "1.2.3", "+5", "1,000", "٣")
_PLAIN_NUMBERS = st.from_regex(r"\A[ \t]{0,2}-?[0-9]{1,25}(\.[0-9]{1,8})?[ \t]{0,2}\Z") | st.text(
    alphabet="0123456789.-+, %$\\e\u0663\u00a0", min_size=1, max_size=8
)


@settings(max_examples=400, deadline=None)
@given(_PLAIN_NUMBERS)
def test_a_plain_number_is_normalised_as_every_rewrite_would(span: str) -> None:
    """normalize() returns a plain number as it stands (the fast path): every rewrite agrees."""
    from rlvr.verify.math import normalize as n

    assert n.normalize(span) == n._canonical(span.strip())


@settings(max_examples=400, deadline=None)
@given(_PLAIN_NUMBERS | st.from_regex(r"\A\s{0,3}-?[0-9]{290,310}(\.[0-9])?\s{0,3}\Z"))
def test_a_plain_number_gold_is_read_as_every_rule_would_read_it(gold: str) -> None:
    """A gold that is a plain number gets its first candidate and its bracket check directly (the
    fast path): the same candidates, in the same order, and the same check as the general path."""
    from rlvr.verify.math import compare as c

    assert list(c._gold_candidates(gold)) == list(c.iter_candidates(gold, gold=True))
    general = c.is_bare_answer(gold, gold=True) and not c.find_boxes(gold) and c.is_malformed(gold)
    assert c._Gold(gold).bare_malformed() == bool(general)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(["(", ")", "[", "]", "{", "}", "\\{", "\\}", "\\boxed{", "x", "1", " ", ", ", "\n\n"])
        | st.sampled_from(
            ["\\frac{1}{2", "the answer is", "forty-two", "a" * 290, "1" * 150, "x+" * 60, "$", "\\text{cm}"]
        ),
        max_size=10,
    ).map("".join)
)
def test_a_malformed_gold_is_found_whatever_order_the_tests_run_in(gold: str) -> None:
    """bare_malformed runs its cheap tests first (the fast path): the same answer as the bare-answer
    test, the box test and the bracket test in their first order."""
    from rlvr.verify.math import compare as c

    general = c.is_bare_answer(gold, gold=True) and not c.find_boxes(gold) and c.is_malformed(gold)
    assert c._Gold(gold).bare_malformed() == bool(general)


@settings(max_examples=400, deadline=None)
@given(_PLAIN_NUMBERS)
def test_a_plain_number_is_read_as_the_full_reader_reads_it(span: str) -> None:
    """parse_alts() reads a plain number directly (the fast path): the same single reading."""
    from rlvr.errors import Refused
    from rlvr.verify.math import parse

    def outcome(read: object) -> object:
        try:
            return read(span)  # type: ignore[operator]
        except Refused as e:
            return str(e)

    assert outcome(parse.parse_alts) == outcome(parse._read)


@settings(max_examples=500, deadline=None)
@given(st.integers(-(10**40), 10**40), st.integers(1, 10**40))
def test_a_rational_s_value_is_the_one_evaluation_gives(p: int, q: int) -> None:
    """A rational's value is read directly (the nearest double), not evaluated at 30 digits and
    then rounded: the same double."""
    import sympy

    from rlvr.verify.math import equivalence as e

    x = sympy.Rational(p, q)
    assert e._numeric(x) == e._evaluated(x)
