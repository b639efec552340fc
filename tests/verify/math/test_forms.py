"""The forms answers come in, read as a careful competition grader reads them: one table per
phenomenon, ``(gold, prediction, expected)``, each with unequal cases beside the equal ones (a form
read too loosely is a reward to farm).

Conventions (a ratio against a fraction, an antiderivative's constant, bare digits against a gold
in a base, a remainder against a residue class) have their defaults tested here and their options
in :func:`test_conventions_can_be_switched`.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from rlvr import verify_math
from rlvr.verify.math.conventions import Conventions
from rlvr.verify.math.extract import before_check
from rlvr.verify.math.forms import bases, labelled_parts, repeating
from rlvr.verify.math.quantities import compound_quantity
from rlvr.verify.math.words import parse_cjk_number, parse_number_words
from rlvr.verify.math.words_languages import parse_foreign_number

UNITS = [
    ("7", r"The answer is $7\,\mathrm{N\cdot m}$.", True),  # a product of units inside \mathrm
    ("7", r"The answer is $8\,\mathrm{N\cdot m}$.", False),
    ("7", r"\boxed{\SI{7}{\kilo\meter}}", True),
    ("4.5", r"\boxed{\qty{4.5}{m/s^2}}", True),
    ("4.5", r"\boxed{\qty{4.6}{m/s^2}}", False),
    ("2000", r"\boxed{\num{2e3}}", True),
    ("30", r"\boxed{30\ \mathrm{kg\,m^{2}\,s^{-2}}}", True),
    ("8", r"\boxed{8 \mathrm{~m}^3}", True),
    ("95", r"\boxed{1 \text{ hour } 35 \text{ minutes}}", True),  # the gold in minutes
    (r"\frac{19}{12}", r"\boxed{1 \text{ h } 35 \text{ min}}", True),  # the gold in hours
    ("80", "The tour lasts 1 hr 20 min.", True),
    ("13", "The shelf is 1 foot 1 inch long.", True),
    ("96", r"\boxed{1 \text{ hour } 35 \text{ minutes}}", False),
    ("71", "She is 5 feet 11 inches tall.", True),
    ("71", "The answer: 5 ft 11 in", True),
    ("70", "The answer: 5 ft 11 in", False),
    ("2350", r"\boxed{2 \text{ kg } 350 \text{ g}}", True),
    ("2350", r"\boxed{2 \text{ kg } 350 \text{ cm}}", False),  # two dimensions: no quantity
]

SCIENTIFIC = [
    ("0.00034", "The concentration is 3.4E-4", True),
    ("340000", "The answer is 3.4 x 10^5", True),
    ("0.00034", "The answer is 3.4 × 10^(-4)", True),
    ("0.00034", "The answer is 3.5e-4", False),
]

RATIOS_AND_CHANCES = [
    ("5:3", r"\boxed{10:6}", True),
    ("5:2", "The ratio is 10 : 4.", True),  # spaced colon, as the last value in prose
    ("5:2", "The ratio is 10 : 5.", False),
    ("5:3", r"\boxed{3:5}", False),
    ("5:3", "So the ratio of boys to girls is 5 to 3.", True),
    ("5:3", "So the ratio of boys to girls is 3 to 5.", False),
    (r"\frac{5}{3}", r"\boxed{5:3}", True),  # convention: a ratio is its value
    ("5:3", r"\boxed{\frac{5}{3}}", True),
    (r"\frac{2}{9}", "So the probability is 2 in 9.", True),
    (r"\frac{2}{9}", "The chance is 2 out of 9.", True),
    (r"\frac{1}{8}", "There is a 1 in 8 chance of rain.", True),
    (r"\frac{2}{9}", "The chance is 2 out of 7.", False),
    ("9:30", r"\boxed{19:60}", False),  # a time as the gold is read as written
    ("9:30", r"\boxed{9:30}", True),
    ("2:5", r"\boxed{6:15}", True),  # an unreduced ratio with a time's shape is still a ratio
    ("4:7", "Final answer: 8 to 14", True),  # a whole answer that is "k to n" is a ratio in words
    ("4:7", "Final answer: 7 to 4", False),
    ("4", "The answer is 4 to 7.", False),  # never one of its numbers
    ("3:2", "The odds in favour are 3 to 2.", True),
]

NUMBER_WORDS = [
    (r"\frac{9}{4}", "答案是二又四分之一", True),  # a mixed number in CJK numerals
    ("15", "答えは十五です。", True),  # a Japanese copula after the value
    ("15", "答えは十六です。", False),
    ("36", "The answer is three dozen", True),
    ("6", "The answer is half a dozen", True),
    ("4/7", "The answer is four sevenths", True),
    ("3/100", "The answer is three hundredths", True),
    ("7000000", "The answer is 7 million", True),
    ("7500000", "The answer is 7.5 million", True),
    ("7500000", "The answer is 7.6 million", False),
    ("-8", "The answer is negative eight", True),
    ("57", r"\boxed{五十七}", True),
    ("2008", "答案是二千零八", True),
    ("30000", r"\boxed{三万}", True),
    ("-2/5", r"\boxed{负五分之二}", True),
    ("57", r"\boxed{五十八}", False),
    ("2", "three seconds", False),  # "seconds" is time, never halves
]

REPEATING = [
    ("4/3", "The answer is 1.3 repeating.", True),  # the digits after the point in words
    ("1/7", "The answer is 0.142857 recurring.", True),
    ("4/3", "The answer is 1.3.", False),
    ("1/3", "The answer is 0.3\u0304", True),  # a combining macron
    (r"\frac{5}{33}", "The answer is 0.1515...", True),  # a two-digit block shown twice
    (r"\frac{5}{33}", "The answer is 0.15...", False),  # shown once: a truncation
    (r"\frac{7}{9}", "The answer is 0.7\u0305.", True),  # a combining overline
    (r"\frac{1}{6}", "The answer is 0.1[6].", True),  # the block in brackets
    ("2/9", r"\boxed{0.222...}", True),
    ("2/9", r"\boxed{0.(2)}", True),
    ("2/9", r"\boxed{0.\bar{2}}", True),
    ("2/9", r"\boxed{0.\dot{2}}", True),
    ("7/12", r"\boxed{0.58\overline{3}}", True),
    ("7/12", r"\boxed{0.58(3)}", True),
    ("7/12", r"\boxed{0.58333\ldots}", True),
    ("5/37", r"\boxed{0.\dot{1}3\dot{5}}", True),
    ("2/9", r"\boxed{0.22}", False),
    (r"\frac{1}{7}", r"\boxed{0.142...}", False),  # a truncation, not a repetition: read as a decimal
]

INTERVALS_AND_SETS = [
    (r"\mathbb{R}", "Each real number is a solution.", True),
    (r"\emptyset", "Each real number is a solution.", False),
    ("(2, 5]", r"\boxed{]2, 5]}", True),
    ("[2, 5)", r"\boxed{[2; 5[}", True),
    ("[2, 5)", r"\boxed{]2; 5[}", False),
    (r"(-\infty, -1) \cup (4, \infty)", "(-oo, -1) U (4, oo)", True),
    (r"(-\infty, -1) \cup (4, \infty)", "(-oo, -1) U (5, oo)", False),
    (r"(-\infty, 7)", "(-infinity, 7)", True),
    (r"\{3, 8\}", r"\boxed{\{3\} \cup \{8\}}", True),
    (r"\{3, 8\}", r"\boxed{\{3\} \cup \{9\}}", False),
    (r"[3, \infty)", "[3, oo)", True),
    (r"[2, 4]", r"\boxed{[0, 4] \cap [2, 9]}", True),
    (r"[0, 2)", r"\boxed{[0, 4] \setminus [2, 4]}", True),
    (r"\mathbb{R}", "All real numbers.", True),
    (r"(-\infty, \infty)", r"\boxed{\text{all reals}}", True),
    (r"\text{no solution}", r"Since the discriminant is negative, \boxed{\emptyset}", True),
    (r"\text{No real solutions}", "Trying x = 3 fails, and so the equation has no solution.", True),
    (r"\text{No solution}", "x = 3 is the only solution.", False),
    (r"\text{DNE}", "Both one-sided limits differ, so the limit does not exist.", True),
    (r"(-\infty, 5) \cup (5, \infty)", r"\boxed{\text{all real numbers except } 5}", True),
    (r"(-\infty, 5) \cup (5, \infty)", r"\boxed{\text{all real numbers except } 4}", False),
    ("(2, 5)", "The solution set is ]2, 5[.", True),  # in prose, no answer phrase: the last value read whole
    ("[1, 4]", "The solution set is [1; 4].", True),
    ("[1, 4]", "The solution set is [1; 5].", False),
]

INEQUALITIES = [
    (r"x \ge 2", "The answer is x ≧ 2.", True),
    (r"x \le 2", "The answer is x ≦ 2.", True),
    (r"x \le 2", "The answer is x ≧ 2.", False),
    (r"x \ge -3", r"\boxed{x \geqq -3}", True),
    (r"x \le -3", r"\boxed{x \leqslant -3}", True),
    (r"x \ge -3", "x ⩾ -3", True),
    (r"-2 < x \le 6", r"\boxed{x > -2 \text{ and } x \le 6}", True),
    (r"-2 < x \le 6", "x > -2 and x <= 6", True),
    (r"-2 < x \le 6", "x > -2 and x < 6", False),
    # a bound with no left side bounds the unknown: never the value itself; an approximation reads as
    # "about 12" does
    ("12", r"\boxed{\geq 12}", False),
    ("12", r"\boxed{> 12}", False),
    (r"x \ge 12", r"\boxed{\geq 12}", True),
    (r"(-\infty, 5)", r"\boxed{< 5}", True),
    ("12", r"\boxed{\approx 12}", True),
    ("12", r"\boxed{\approx 13}", False),
]

VECTORS = [
    ("(4,-1,2)", "The answer is 4i - j + 2k.", True),  # unit vectors in plain text
    ("(4,-1,2)", "The answer is 4i + j + 2k.", False),
    ("(4,-1)", "The answer is 4i - j.", True),
    ("4+3i", "The answer is 4+3j.", True),  # Python's complex number, not a vector
    (r"\begin{pmatrix}4\\-1\end{pmatrix}", "The answer is [4, -1]^T.", True),  # transposed row: a column
    (r"\begin{pmatrix}4\\-1\end{pmatrix}", r"$(-1, 4)^{\top}$", False),
    ("(4, -1, 2)", r"\boxed{\langle 4, -1, 2 \rangle}", True),
    ("(4, -1, 2)", r"\boxed{4\mathbf{i} - \mathbf{j} + 2\mathbf{k}}", True),
    ("(4, -1, 2)", r"\boxed{4\hat{i} - \hat{j} + 2\hat{k}}", True),
    ("(4, -1, 2)", r"\boxed{4\mathbf{i} + \mathbf{j} + 2\mathbf{k}}", False),
    (r"\begin{pmatrix} 4 \\ -1 \end{pmatrix}", r"\boxed{[[4], [-1]]}", True),
    (r"\begin{pmatrix} 4 \\ -1 \end{pmatrix}", r"\boxed{\langle 4, -1 \rangle}", True),
    (r"\begin{pmatrix} 4 \\ -1 \end{pmatrix}", r"\boxed{(-1, 4)}", False),
    ("(6, 1)", "<6, 1>", True),
    ("(6, 1)", r"\boxed{Q(6, 1)}", True),
    ("(6, 1)", r"\boxed{Q(1, 6)}", False),
    ("(2, -1, 3)", "The answer is ⟨2, -1, 3⟩.", True),  # Unicode angle brackets
    (r"\begin{pmatrix}2\\-1\\3\end{pmatrix}", "The answer is 〈2, -1, 3〉.", True),
    ("(2, 1, 3)", "The answer is ⟨2, -1, 3⟩.", False),
    ("(2, 5)", "The point is P(2, 5).", True),  # a named point as the last value in prose
    ("(2, 5)", "The point is P(5, 2).", False),
    ("9", "so f(2, 5) = 9", True),  # a call is no point
]

COMPLEX = [
    ("5-2i", r"\boxed{5-2j}", True),
    ("5-2i", "complex(5, -2)", True),
    ("5-2i", r"\boxed{5+2j}", False),
    ("5-2i", "5 - 2im", True),  # Julia
    ("4+7i", r"\boxed{4+7\mathrm{i}}", True),
    ("11", r"\boxed{4+7\mathrm{i}}", False),  # an upright i is the imaginary unit, never a unit to drop
    ("-3", r"\boxed{3\,\text{cis}(\pi)}", True),
    ("3i", r"\boxed{3 \angle 90^\circ}", True),
    ("3i", r"\boxed{3 \angle 45^\circ}", False),
    # as programs print them: function names, pi and a power in parentheses in plain text
    ("-2", "The answer is 2 exp(i*pi)", True),
    (r"\sqrt{2}+\sqrt{2}i", "The answer is 2(cos(pi/4) + i sin(pi/4))", True),
    (r"\sqrt{2}+\sqrt{2}i", "The answer is 2(cos(pi/4) - i sin(pi/4))", False),
    ("2i", "The answer is 2 e^(i pi/2)", True),
    ("2i", "The answer is 2∠90°", True),
    ("2i", "The answer is 2∠60°", False),
    ("2i", "The answer is 2 cis 90°.", True),
    ("2i", "The answer is 2 cis 45°.", False),
    ("12", r"\boxed{\small 12}", True),  # a font size is how it looks, not what it is
]
PLAIN_TEXT_MATHS = [
    (r"3\pi", "The answer is 3pi.", True),
    (r"3\pi", "The answer is 3*pi", True),
    (r"\frac{\pi}{4}", "Final answer: pi/4", True),
    (r"\frac{\pi}{4}", "Final answer: pi/3", False),
    (r"\frac{\sqrt{3}}{2}", "The answer is cos(pi/6).", True),
    ("2", "The answer is log(9)/log(3).", True),
    (r"\ln 5", "The answer is ln(5).", True),
    (r"\ln 5", "The answer is ln(6).", False),
    ("1", "The answer is e^(0).", True),
    ("1", "The spinning top is 1 unit tall.", True),  # a word that holds "pi" is no constant
    # LaTeX written without math delimiters after an answer phrase is read whole
    (r"\langle 3, -1 \rangle", r"The final answer is \langle 3, -1 \rangle.", True),
    (r"\langle 3, -1 \rangle", r"The final answer is \langle -1, 3 \rangle.", False),
    (r"\frac{x^2}{2}", r"The answer is \frac{x^2}{2} + C.", True),
    (r"(1,\infty)", r"The answer is \{x \in \mathbb{R} : x > 1\}.", True),
    (r"(-\infty,0)\cup(1,\infty)", "The answer is (-oo, 0) U (1, oo).", True),
    (r"(-\infty,0)\cup(1,\infty)", "The answer is (-oo, 0) U (2, oo).", False),
    ("12", "The answer is 12 (the two sides are 3 and 4).", True),  # an aside in words is still cut
    (r"\mathbb{R}\setminus\{-1\}", "So x may be any real number except -1.", True),
    (r"\mathbb{R}\setminus\{-1, 4\}", "So the domain is all real numbers except -1 and 4.", True),
    (r"\mathbb{R}\setminus\{-1, 4\}", "So the domain is all real numbers except -1 and 5.", False),
    ("4, 9", "The answers are 4 and 9.", True),
    ("4, 9", "The solutions are 4 and 9.", False),  # no answer phrase: the last number, 9
]

PLUS_MINUS = [
    (r"1 \pm \sqrt{5}", "1 +/- sqrt(5)", True),
    (r"1 \pm \sqrt{5}", "1 +/- sqrt(6)", False),
    (r"\pm 4", "+-4", True),
]

CONGRUENCES = [
    (r"n \equiv 5 \pmod{9}", r"\boxed{n \equiv 5 \pmod 9}", True),
    (r"n \equiv 5 \pmod{9}", r"\boxed{n \equiv 14 \pmod{9}}", True),
    (r"n \equiv 5 \pmod{9}", r"\boxed{n \equiv 5 \pmod{8}}", False),
    (r"n \equiv 5 \pmod{9}", "n ≡ 5 (mod 9)", True),
    ("5", r"\boxed{n \equiv 5 \pmod{9}}", True),  # convention: the remainder is the class
    ("14", r"\boxed{n \equiv 5 \pmod{9}}", False),
]

LABELS = [
    (r"\sin x + C", r"\boxed{\sin x + K}", True),
    (r"\sin x + C", r"\boxed{\sin x}", True),  # convention: the constant is optional
    (r"\sin x", r"\boxed{\sin x + C}", True),
    (r"\sin x + C", r"\boxed{\cos x + C}", False),
    ("a + b + c", r"\boxed{a + b}", False),  # a lower-case c is a given constant unless both carry it
    (r"\frac{x+3}{4}", r"\boxed{f^{-1}(x) = \frac{x+3}{4}}", True),
]

MULTI_PART = [
    ("4, 9", "(a) 4 (b) 9", True),
    ("4, 9", "Part (a): 4; Part (b): 9", True),
    ("4, 9", "(i) 4 (ii) 9", True),
    ("4, 9", r"(a) \boxed{4} (b) \boxed{9}", True),  # a box per part: one answer of two parts
    ("9", r"(a) \boxed{4} (b) \boxed{9}", False),
    ("4, 9", "(a) 9 (b) 4", False),  # the gold's parts in their order
    ("(4, 9)", "(a) 4 (b) 9", True),
    ("4, 9", "(a) 4 (b) 8", False),
]

CHECK_AFTER = [
    ("6", "x = 6. Substituting back: 2(6) + 1 = 13.", True),
    ("6", "So x = 6.\nOther values such as 9 and 12 appear later in the list.", True),
    ("3", "The least one is 3. Further values are 8, 13, 18.", True),
    ("6", "Check x = 5: 11, too small. Checking x = 6: 13 works. So x = 6.", True),
    ("5", "Check x = 5: 11, too small. Checking x = 6: 13 works. So x = 6.", False),
    ("6", "x = 6 ✓ since 2·6 + 1 = 13 ✓", True),
]

GROUPING = [
    ("25000", "The answer is 25_000.", True),  # Python's digit separator
    ("101", r"The answer is $101_{2}$.", False),  # a base subscript is still a base
    ("2345678", "The answer is 23,45,678", True),
    ("300000", "The answer is 3,00,000", True),
    ("2345678", "The answer is 2.345.678", True),
    ("2345678", "The answer is 2'345'678", True),
    ("2.345", "The answer is 2.345", True),  # one dot: a decimal point
]

BASES = [
    ("11", r"\boxed{1011_2}", True),
    ("1011_2", r"\boxed{11}", False),  # convention: bare digits against a gold in base 2 are base-2 digits
    ("1011", r"\boxed{1011_2}", False),  # a base subscript is never ignored
    ("11", r"\boxed{0b1011}", True),
    ("171", r"\boxed{0xAB}", True),
    ("171", r"\boxed{AB_{16}}", True),
    ("15", r"\boxed{17_8}", True),
    ("15", r"\boxed{17_9}", False),
    ("31_7", r"\boxed{31}", True),  # convention: bare digits against a gold in a base are its digits
    ("31_7", r"\boxed{22}", False),  # ... never its decimal value
]

DEGREES_MINUTES = [
    ("30.25", "The angle is 30 degrees 15 minutes.", True),
    ("30.25", "The angle is 30 degrees and 20 minutes.", False),
    ("30.26", "The angle is 30 degrees 15 minutes 36 seconds.", True),  # seconds too, as the normaliser reads
    ("45.75", r"\boxed{45^\circ 45'}", True),
    (r"45.75^\circ", "45°45′", True),
    ("45.75", r"\boxed{45^\circ 46'}", False),
]

ENVIRONMENTS = [
    ("x=3, y=-2", r"$\begin{cases} x = 3 \\ y = -2 \end{cases}$", True),  # a system's solution
    ("x=3, y=-2", r"$\begin{cases} x = 3 \\ y = 2 \end{cases}$", False),
    ("9", r"\boxed{\begin{aligned} y &= 9 \end{aligned}}", True),
    ("(2, 7)", r"\boxed{\begin{array}{l} x = 2 \\ y = 7 \end{array}}", True),
    ("(2, 7)", r"\boxed{\begin{array}{l} x = 7 \\ y = 2 \end{array}}", False),
]

TABLES = {
    "units": UNITS,
    "scientific": SCIENTIFIC,
    "ratios-and-chances": RATIOS_AND_CHANCES,
    "number-words": NUMBER_WORDS,
    "repeating-decimals": REPEATING,
    "intervals-and-sets": INTERVALS_AND_SETS,
    "inequalities": INEQUALITIES,
    "vectors": VECTORS,
    "complex": COMPLEX,
    "plus-minus": PLUS_MINUS,
    "congruences": CONGRUENCES,
    "labels": LABELS,
    "multi-part": MULTI_PART,
    "plain-text-maths": PLAIN_TEXT_MATHS,
    "check-after": CHECK_AFTER,
    "grouping": GROUPING,
    "bases": BASES,
    "degrees-minutes": DEGREES_MINUTES,
    "environments": ENVIRONMENTS,
}


@pytest.mark.parametrize(
    ("gold", "prediction", "expected"),
    [pytest.param(*case, id=f"{name}-{i}") for name, table in TABLES.items() for i, case in enumerate(table)],
)
def test_forms(gold: str, prediction: str, expected: bool) -> None:
    v = verify_math(prediction, gold)
    assert v.correct is expected, (gold, prediction, v)


def test_conventions_can_be_switched() -> None:
    strict = Conventions(
        ratio_as_fraction=False, integration_constant="required", base_digits=False, remainder_as_residue=False
    )
    for prediction, gold in (
        (r"\boxed{5:3}", r"\frac{5}{3}"),
        (r"\boxed{\sin x}", r"\sin x + C"),
        (r"\boxed{31}", "31_7"),
        (r"\boxed{n \equiv 5 \pmod{9}}", "5"),
    ):
        assert verify_math(prediction, gold).correct, (prediction, gold)
        assert not verify_math(prediction, gold, conventions=strict).correct, (prediction, gold)
    # bare digits as a decimal number, off the base_digits convention
    assert verify_math(r"\boxed{11}", "1011_2", conventions=strict).correct
    assert not verify_math(r"\boxed{11}", "1011_2").correct
    # an angle in the other unit: wrong by default, one angle under degrees_as_radians
    either = Conventions(degrees_as_radians=True)
    for prediction, gold in (
        (r"\boxed{45^\circ}", r"\frac{\pi}{4}"),
        ("The answer is 60 degrees.", r"\frac{\pi}{3}"),
        (r"\boxed{\frac{2\pi}{3}}", r"120^\circ"),
        ("The answer is π/6.", "30°"),
    ):
        assert not verify_math(prediction, gold).correct, (prediction, gold)
        assert verify_math(prediction, gold, conventions=either).correct, (prediction, gold)
    for prediction, gold in ((r"\boxed{60^\circ}", r"\frac{\pi}{4}"), (r"\boxed{45}", r"\frac{\pi}{4}")):
        assert not verify_math(prediction, gold, conventions=either).correct, (prediction, gold)
    assert verify_math(r"\boxed{45^\circ}", "45", conventions=either).correct
    # what no convention touches reads the same either way
    assert verify_math(r"\boxed{10:6}", "5:3", conventions=strict).correct
    assert verify_math(r"\boxed{\sin x + K}", r"\sin x + C", conventions=strict).correct


def test_readers() -> None:
    assert compound_quantity("3 days 12 hours") == (3.5, 84)
    assert compound_quantity("12 hours 3 days") is None  # units out of order: not one quantity
    assert parse_number_words("a dozen") == 12 and parse_number_words("2 dozen") == 24
    assert parse_cjk_number("一千零一") == 1001 and parse_cjk_number("1万") == 10000
    assert parse_cjk_number("十二个") is None
    # other languages: cardinals from the libraries, signs, fractions, halves and decimals read here
    assert parse_foreign_number("dreihundertvierundsechzig") == 364 and parse_foreign_number("cento e três") == 103
    assert parse_foreign_number("moins deux tiers") == Fraction(-2, 3) and parse_foreign_number("zweieinhalb") == 2.5
    assert parse_foreign_number("две пятых") == Fraction(2, 5)
    assert parse_foreign_number("tre virgola uno quattro") == Fraction("3.14")
    assert parse_number_words("veinte") == 20 == parse_number_words("двадцать")  # through the one entry point
    for not_a_number in ("once", "elf", "non", "null", "second", "cuarto", "doce manzanas", "la", "y", "et", "минус"):
        assert parse_foreign_number(not_a_number) is None, not_a_number
    assert repeating("0.1666...") == r"\frac{15}{90}" and repeating("1.25...") == "1.25..."
    assert bases("0x1G") == "0x1G" and bases("129_8") == "129_8"
    assert labelled_parts("(a) 1 (c) 2") is None
    assert before_check("No number here. Check: 1 + 1 = 2") == "No number here. Check: 1 + 1 = 2"


def test_a_config_sets_the_conventions_its_rewards_verify_with() -> None:
    """``rewards.conventions`` reaches every verdict of the process its rewards are built in (and the
    rewards' own cache keeps verdicts of other conventions apart); a misspelt convention is refused
    with its name, before any work."""
    from rlvr.config import load_config
    from rlvr.errors import ConfigError
    from rlvr.rewards.combine import Total

    ratio = [r"\boxed{5:3}"]
    try:
        cfg = load_config(None, ["rewards.conventions.ratio_as_fraction=false", "rewards.weights={accuracy: 1.0}"])
        total = Total.from_config(cfg.rewards)
        assert not verify_math(ratio[0], r"\frac{5}{3}").correct
        assert total(ratio, answer=[r"\frac{5}{3}"]) == [0.0]
        total = Total.from_config(load_config(None, ["rewards.weights={accuracy: 1.0}"]).rewards)
        assert verify_math(ratio[0], r"\frac{5}{3}").correct
        assert total(ratio, answer=[r"\frac{5}{3}"]) == [1.0]
    finally:
        Total.from_config(load_config(None, []).rewards)  # the defaults again, for the tests after this one
    with pytest.raises(ConfigError, match="ratio_as_fractions"):
        load_config(None, ["rewards.conventions.ratio_as_fractions=false"])
    with pytest.raises(ConfigError, match="integration_constant"):
        load_config(None, ["rewards.conventions.integration_constant=sometimes"])


def test_the_config_section_holds_every_convention_with_its_default() -> None:
    """``rewards.conventions`` (config) and :class:`Conventions` (the verifier) name the same choices
    with the same defaults: one cannot gain a convention the other lacks."""
    from dataclasses import fields

    from rlvr.config import ConventionsConfig

    assert ConventionsConfig().model_dump() == {f.name: f.default for f in fields(Conventions)}
