"""Issue 47's phenomena, each a rule with its own table ``(completion, gold, correct?)``.

The held-back set that found them is kept outside the project; these are other instances of the
same shapes, near-misses among them (they must stay unequal). Commitment is judged as a careful
grader would: a value named but taken back, hedged, hidden, quoted or flooded is not an answer.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.types import Status
from rlvr.verify.math.verifier import verify_math


def judged(completion: str, gold: str) -> bool:
    return verify_math(completion, gold).status is Status.CORRECT


LOCALE_NUMBERS = [
    ("Die Antwort ist 2.345,6 Meter.", "2345.6", True),
    ("La respuesta es 7.500,25.", "7500.25", True),
    ("La réponse est 4,25 kg.", "4.25", True),
    ("Il risultato è 45.000 abitanti.", "45000", True),
    ("A resposta é R$ 2.990,00.", "2990", True),
    ("Ответ: 0,125", "0.125", True),
    ("Total: 2\u00a0500\u00a0000 units.", "2500000", True),  # no-break spaces join the groups
    ("It holds 3\u202f250 litres.", "3250", True),  # narrow no-break space
    (r"Hence $p = 0{,}75$.", "0.75", True),  # LaTeX's decimal comma
    (r"Hence $n = 12{,}500$.", "12500", True),  # LaTeX's grouping comma
    ("Die Antwort ist 2.345,6 Meter.", "2.3456", False),
    ("Die Antwort ist 1.250 Stück.", "1.25", False),  # dot grouping in German: one thousand two hundred fifty
]
MULTIPLE_CHOICE_IN_PROSE = [
    ("Nach Prüfung aller Fälle: die richtige Antwort ist B.", "B", True),
    ("Por lo tanto, la respuesta correcta es la D.", "D", True),
    ("Donc la bonne réponse est A.", "A", True),
    ("Portanto, a resposta correta é a alternativa C.", "C", True),
    ("Quindi la risposta corretta è E.", "E", True),
    ("Итак, правильный ответ: C", "C", True),
    ("所以正确答案是 B。", "B", True),
    ("La respuesta correcta no es la A, es la C.", "A", False),
    ("The answer is **C**.", r"\text{(C)}", True),
]
LABELLED_VALUES = [
    ("**Answer:** 36 cm (each of the 4 sides is 9 cm)", "36", True),
    ("The answer is 84 (that is, 7 × 12).", "84", True),
    ("| Quantity | Value |\n|---|---|\n| Final answer | 48 |\n| Check | 96 |", "48", True),
    ("Final answer: 17\n\nVerification: 17 - 5 = 12 and 12 + 5 = 17.", "17", True),
    ("<answer>The interval is (−2, 7].</answer>", "(-2,7]", True),  # a Unicode minus, in a sentence
    ("<answer>The total price is $12.75 per box.</answer>", "12.75", True),
    ("**Answer:** 36 cm (each of the 4 sides is 9 cm)", "4", False),
]
REPEATING_DECIMALS_AND_FORMS = [
    (r"\boxed{0.\overline{6}}", "2/3", True),
    (r"\boxed{0.8\overline{3}}", "5/6", True),
    (r"\boxed{1.\overline{27}}", "14/11", True),
    (r"\boxed{0.\overline{6}}", "0.6", False),
    (r"\boxed{{7 \choose 3}}", "35", True),
    (r"\boxed{\sqrt[3]{-27}}", "-3", True),  # the real cube root, not the complex principal one
    (r"\boxed{\sqrt[5]{-32}}", "-2", True),
    (r"\boxed{x = \frac{\pi}{6} + 2k\pi, k \in \mathbb{Z}}", r"\frac{\pi}{6} + 2k\pi", True),
    (r"\boxed{i}", "i", True),  # a gold of i is the imaginary unit, not option I
]
HEDGES = [
    ("The answer might be 15.", "15", False),
    ("It could be 15, but I'm not sure.", "15", False),
    ("Maybe 15? I can't be certain.", "15", False),
    ("Perhaps the answer is 15.", "15", False),
    ("My best guess is 15.", "15", False),
    ("Vielleicht ist es 15.", "15", False),
    ("The area that could be covered is 15.", "15", True),  # a modal that is not about the answer
    ("It is not hard to see that the answer is 15.", "15", True),
    # a hedge about an earlier value the text then corrects is not about the answer
    ("My guess at first was 12, but it is 15.", "15", True),
    ("I thought maybe 12 but the answer is 15.", "15", True),
    ("I'm not sure about 12, but the answer is 15.", "15", True),
    ("Vielleicht 12, aber die Antwort ist 15.", "15", True),
    ("我猜是12，但其实答案是15。", "15", True),
    # ... while a hedge with no earlier value, or a new one after the turn, still hedges
    ("Not sure, but 15.", "15", False),
    ("It might be 12 but it could also be 15.", "15", False),
    ("My guess at first was 12, but it might be 15.", "15", False),
    ("It was 12 before, but I'm not sure it is 15.", "15", False),
    ("The answer is 15, but I'm not sure.", "15", False),
    ("我猜是12，但也许是15。", "15", False),
    ("Final answer: 15, probably.", "15", False),  # doubt right after the value
    ("The total could conceivably be 15.", "15", False),
    ("The total is most likely 15.", "15", False),
    ("So 15, which seems plausible.", "15", False),
    ("The total is 15 (unless I've made an arithmetic slip).", "15", False),
    ("About 15, but don't hold me to it.", "15", False),
    (r"\boxed{15} (maybe)", "15", False),
    ("La respuesta es 15, quizás.", "15", False),
    ("The answer is 15, probably the simplest count.", "15", False),
    ("The answer is 15. Probably the hardest step was the second.", "15", True),  # another clause
    # a modal in the other languages, and a guess in other words
    ("El resultado podría ser 15.", "15", False),
    ("Le résultat pourrait être 15.", "15", False),
    ("Das Ergebnis könnte 15 sein.", "15", False),
    ("Il risultato potrebbe essere 15.", "15", False),
    ("Ответ может быть 15.", "15", False),
    ("If I have to guess: 15.", "15", False),
    ("15 will be my guess.", "15", False),
    ("I can't say for certain, but it is 15.", "15", False),
    ("Ich konnte zeigen, dass das Ergebnis 15 ist.", "15", True),  # "konnte": was able to, no doubt
]
NEGATIONS = [
    ("The total can't be 15.", "15", False),
    ("El total no puede ser 15.", "15", False),
    ("Le total ne peut pas être 15.", "15", False),
    ("Итог не может быть 15.", "15", False),
    ("15 fails the second condition.", "15", False),
    ("15 does not satisfy the equation.", "15", False),
    ("15は正解ではありません。", "15", False),
    ("It can't be 14, so the total is 15.", "15", True),
    ("The answer is not 15.", "15", False),
    ("15 cannot be right, so I stop here.", "15", False),
    ("It is 15? No: 15 is wrong.", "15", False),
    ("La respuesta no es 15.", "15", False),
    ("Die Lösung ist nicht 15.", "15", False),
    ("La réponse n'est pas 15.", "15", False),
    ("La risposta non è 15.", "15", False),
    ("Ответ не 15.", "15", False),
    ("It's not 10, it's 15.", "15", True),  # the negation is of the 10
]
# the statement that names the value denied, or the value excluded (other wordings than the probes')
DENIALS_AND_EXCLUSIONS = [
    ("It is not the case that x equals 15.", "15", False),
    ("It is true that the total is 15.", "15", True),
    ("It is correct to say the total is 15.", "15", True),
    ("It would be a mistake to conclude that the total is 15.", "15", False),
    ("It's untrue that the count is 15.", "15", False),
    ("We have to rule out the value 15.", "15", False),
    ("After checking, 15 must be excluded.", "15", False),
    ("The count is anything other than 15.", "15", False),
    ("Incorrect: 15", "15", False),
    ("No es cierto que el total sea 15.", "15", False),
    ("Ce n'est pas vrai que le total vaut 15.", "15", False),
    ("Es ist nicht wahr, dass die Summe 15 ist.", "15", False),
    ("Неправда, что сумма равна 15.", "15", False),
    ("Não é verdade que a soma é 15.", "15", False),
    # a denial or an exclusion of another value, then the answer: committed
    ("It is not true that y = 4, so the total is 15.", "15", True),
    ("It is false that 2 works; the answer is 15.", "15", True),
    ("Ruling out 6 and 9 leaves 15.", "15", True),
    ("Excluding x = 1, the sum is 15.", "15", True),
    ("The answer is 15 (we rejected 3 earlier).", "15", True),
    # the saying of it denied, and a value said to be impossible
    ("We would not conclude that it is 15.", "15", False),
    ("I can't claim the total is 15.", "15", False),
    ("No one can say the total is 15.", "15", False),
    ("15 is not possible here.", "15", False),
    ("15 is not an option.", "15", False),
    ("The answer is 15, since 14 is not possible.", "15", True),
    ("We cannot conclude that x = 4, so the total is 15.", "15", True),
]
# forms the last-number fallback reads whole
LAST_VALUES = [
    ("Putting it together, the ratio works out to 5:7.", "5:7", True),
    ("Putting it together, the ratio works out to 5:7.", "5/7", True),  # ratio_as_fraction
    ("so the probability is 0.1666...", "1/6", True),
    ("which is roughly 2.71...", "2.71", True),
    ("In all, the baker sold 24 loaves (she baked 30 and kept 6).", "24", True),  # a closing aside
    ("In all, the baker sold 24 loaves (she baked 30 and kept 6).", "6", False),
    ("So the midpoint lands at (2, -5).", "(2,-5)", True),  # a tuple in plain text
    ("So the midpoint lands at (2, -5).", "-5", False),
    ("So the midpoint lands at (2, -5) (we averaged both ends).", "(2,-5)", True),
    ("The meeting starts at 10:45", "10:45", True),
]
# the same refusals in each language models answer in (cue lists per language), and commitments
# that mention a cue word elsewhere
LANGUAGES = [
    ("答案不是15。", "15", False),  # Chinese: a negation before the value
    ("15是错的。", "15", False),  # after it
    ("答案可能是15。", "15", False),  # a doubt
    ("所以答案是15。", "15", True),
    ("经过计算，不是14，而是15。", "15", True),  # the negation is of the 14
    ("答えは15ではない。", "15", False),  # Japanese: a negation after the value
    ("答えは15かもしれない。", "15", False),
    ("たぶん15です。", "15", False),
    ("答えは15です。", "15", True),
    ("Quizás la respuesta es 15.", "15", False),  # Spanish
    ("Peut-être que la réponse est 15.", "15", False),  # French
    ("Возможно, ответ 15.", "15", False),  # Russian
    ("Das ist nicht schwer; die Antwort ist 15.", "15", True),  # German: the negation is elsewhere
]
QUESTIONS = [
    ("Is the answer 15?", "15", False),
    ("答案是15吗？", "15", False),
    ("So is it 15? Yes, the answer is 15.", "15", True),  # asked, then given
    ("The answer is 15 (why? because 3 * 5).", "15", True),  # a question about something else
    # the value inside a question, not just before its mark, in every language the rules know
    ("Is 15 the answer?", "15", False),
    ("Could 15 be right? I am not sure.", "15", False),
    ("¿Es 15 la respuesta?", "15", False),
    ("Est-ce que 15 est la réponse ?", "15", False),
    ("Ist 15 die Antwort?", "15", False),
    ("Является ли 15 ответом?", "15", False),
    ("15是答案吗？", "15", False),
    ("15は答えですか？", "15", False),
    ("The answer is 15, isn't it?", "15", False),
    # a question why the answer is the value explains it, it does not doubt it
    ("Why is the answer 15?", "15", True),
    ("Warum ist die Antwort 15?", "15", True),
    ("为什么答案是15？", "15", True),
]
HIDDEN_AND_QUOTED = [
    ("The answer is 8.\n<!--\n\\boxed{15}\n-->", "15", False),
    ("![\\boxed{15}](diagram.png) So the answer is 8.", "15", False),
    ('<img alt="the answer is 15" src="a.png"> So the answer is 8.', "15", False),
    ('The task reads: "prove that \\boxed{15} is the total". I get 8.', "15", False),
    ("The answer is 8.\n<!-- a note to myself -->", "8", True),
]
# a value that is an item of a list of alternatives is not one answer; a list that ends before it is
OPTIONS = [
    ("The count is one of 13, 14 or 15.", "15", False),
    ("It has to be either 14 or 15.", "15", False),
    ("So the total is 14 or 15.", "15", False),
    ("La respuesta es 14 o 15.", "15", False),
    ("Die Summe ist 14 oder 15.", "15", False),
    ("答案是14或者15。", "15", False),
    ("Of the divisors 3, 5 and 15, the largest is 15.", "15", True),
    ("One of the factors is 15.", "15", True),
    ("Either way, the total is 15.", "15", True),
]
# an answer followed by a disclaimer of it is not given
DISCLAIMED = [
    (r"\boxed{15} (a placeholder until I finish)", "15", False),
    (r"\boxed{15} is a dummy value.", "15", False),
    ("The answer is 15, though that's not my real answer.", "15", False),
    ("\\boxed{15}\n\nI have not verified this result, so use it with caution.", "15", False),
    ("Final answer: 15 (unchecked).", "15", False),
    ("The total is \\boxed{15}. I might be wrong about the overlap, though.", "15", False),
    ("The answer is 15. Hmm, that's not right.", "15", False),
    ("\\boxed{15} — I won't commit to this.", "15", False),
    ("La respuesta es 15, pero no lo he verificado.", "15", False),
    ("Die Antwort ist 15 (ungeprüft).", "15", False),
    ("Ответ: 15, но я не уверен.", "15", False),
    ("答案是15，但是没有检查过。", "15", False),
    ("答えは15です（未確認）。", "15", False),
    ("15, as a rough guess.", "15", False),
    ("Final Answer: The final answer is $15$. I hope it is correct.", "15", True),
    ("The answer is 15.\n\nCheck: 3 * 5 = 15, which is verified.", "15", True),
    ("Having checked every case, the answer is \\boxed{15}.", "15", True),
]
# an answer phrase after the answer tag is a claim of its own: disagreeing, no answer is committed to
TAG_AND_PHRASE = [
    ("<answer>15</answer> The answer is 14.", "15", False),
    ("<answer>15</answer>\nSo the final answer is $15$.", "15", True),
]
# an answer phrase inside a quotation that stands in a sentence is mentioned, not said; a value
# quoted for emphasis, or a quotation that is the sentence, is the model's own
MENTIONED_AND_EMPHASISED = [
    ('Beginners often write "the final answer is 15" at this point.', "15", False),
    ("Writing “the answer is 15” would ignore the remainder.", "15", False),
    ('"The answer is 15" is what the first draft said; the correct count is 9.', "15", False),
    ("La tentation est d'écrire « la réponse est 15 », mais c'est faux.", "15", False),
    ("Sie hat „die Antwort ist 15“ notiert, was nicht stimmt.", "15", False),
    ("老师在黑板上写了“最终答案是15”，但那是另一题。", "15", False),
    ("先生は「答えは15」と言いましたが、これは違う問題です。", "15", False),
    ('Avoid "the answer is 15": it counts the corner twice. The answer is 14.', "14", True),
    ("The final answer is “15”.", "15", True),
    ("Final answer: «15»", "15", True),
    ("La respuesta es «15».", "15", True),
    ("Die Antwort ist „15“.", "15", True),
    ("答案是“15”。", "15", True),
    ("答えは「15」です。", "15", True),
    ('Checking every case gives 15.\n"The answer is 15."', "15", True),
    ('Therefore, "the answer is 15".', "15", True),
    # German's answer phrase is read as one (it was left to the last-number fallback)
    ("Die endgültige Antwort lautet 15, wobei wir 3 Fälle prüften.", "15", True),
    # the value before a clause that explains it is the answer, not the clause's last number
    ("The answer is 15, because the other 4 cases repeat.", "15", True),
    ("The answer is 15, because the other 4 cases repeat.", "4", False),
    ("答案是15，其中有4种情况重复。", "15", True),
    ("The answer is (2, 5), as both equations hold.", "(2, 5)", True),
    ("The answer is 2, 5, 9.", "\\{2, 5, 9\\}", True),
]
HOMOGLYPHS_AND_FLOODS = [
    ("The answer is not ١٥; it is 8.", "15", False),  # Arabic-Indic digits in a wrong statement
    ("The answer is not １５.", "15", False),  # full-width digits
    ("So the answer is ١٥.", "15", True),  # the same digits, committed to
    ("<answer>" + "15 " * 5000 + "</answer>", "15", False),
    ("\\boxed{15}" + " is wrong." * 40, "15", False),
    ("<answer>15</answer>", "15", True),
]
# the value the answer would be under a condition the problem does not give
COUNTERFACTUALS = [
    (r"If the tank were twice as large, it would hold \boxed{40} litres.", "40", False),
    ("The total would be 40 if every guest came, but only half did.", "40", False),
    (r"Had the wind not changed, we would have arrived in \boxed{40} minutes.", "40", False),
    ("Si el tanque fuera el doble, la respuesta sería 40.", "40", False),
    ("Si la cuve était deux fois plus grande, la réponse serait 40.", "40", False),
    ("Wenn der Tank doppelt so groß wäre, wäre die Antwort 40.", "40", False),
    ("Если бы бак был вдвое больше, ответ был бы 40.", "40", False),
    ("假如水箱大一倍，答案就是40。", "40", False),
    # a condition that is given, or a "would" without one, commits
    (r"If we add the two parts, we get \boxed{40}.", "40", True),
    (r"If x = 5, then y = 40. So the answer is \boxed{40}.", "40", True),
    ("如果把两部分相加，得到40。", "40", True),
    # a contracted conditional, and a condition said after the value not to be given
    ("Were the tank full, we'd have 40 litres.", "40", False),
    ("If each box holds 8, the total is 40. But the box size is not given.", "40", False),
    ("假如每箱8个，一共40个。可是每箱的个数题目没有给出。", "40", False),
    ("Hypothetically, with 8 per box, the total is 40.", "40", False),
    ("For the sake of argument take 8 per box; then the total is 40.", "40", True),  # its own clause
    ("Wenn jede Kiste 8 enthält, sind es 40. Die Größe ist aber nicht gegeben.", "40", False),
    ("If each box holds 8, the total is 40.", "40", True),  # the condition is the problem's
    ("The total is 40. The box count is not given, so we found it first.", "40", True),  # no condition
]

# someone else's claim is not the model's answer
ATTRIBUTED = [
    ("The teacher's answer is 15, but I get 16.", "15", False),
    ("My friend's result was 15.", "15", False),
    ('The textbook says "40", but that is a misprint.', "40", False),
    ("My classmate claims the answer is 40.", "40", False),
    ("According to the key, the answer is 40.", "40", False),
    ("Mi amigo dice que la respuesta es 40.", "40", False),
    ("他说答案是40。", "40", False),
    # the model's own claim, the problem's givens restated, a conclusion after the report: committed
    ("I think the answer is 40.", "40", True),
    ("我认为答案是40。", "40", True),
    (r"The problem states that the sum is 80, so each half is \boxed{40}.", "40", True),
    (r"Bob says the sum is 80, so each half is \boxed{40}.", "40", True),
]

SECOND_SET = [
    ("<answer>The solution set is (−∞, −1).</answer>", r"(-\infty,-1)", True),
    ("<answer>The price per ticket is $8.25.</answer>", "8.25", True),
    ("The answer is 63 (9 rows of 7 seats).", "63", True),
]


@pytest.mark.parametrize(
    ("completion", "gold", "expected"),
    LOCALE_NUMBERS
    + MULTIPLE_CHOICE_IN_PROSE
    + LABELLED_VALUES
    + REPEATING_DECIMALS_AND_FORMS
    + HEDGES
    + NEGATIONS
    + DENIALS_AND_EXCLUSIONS
    + LAST_VALUES
    + LANGUAGES
    + QUESTIONS
    + HIDDEN_AND_QUOTED
    + MENTIONED_AND_EMPHASISED
    + OPTIONS
    + DISCLAIMED
    + TAG_AND_PHRASE
    + HOMOGLYPHS_AND_FLOODS
    + SECOND_SET
    + COUNTERFACTUALS
    + ATTRIBUTED,
)
def test_issue_47_phenomena(completion: str, gold: str, expected: bool) -> None:
    assert judged(completion, gold) is expected, verify_math(completion, gold)


@pytest.mark.parametrize(
    ("completion", "rule"),
    [
        ("The answer is not 15.", "negated"),
        ("The answer might be 15.", "hedged"),
        ("\\boxed{15}" + " is wrong." * 3, "negated"),
        ("答えは15ではない。", "negated"),
        ("答案可能是15。", "hedged"),
        ("Is the answer 15?", "questioned"),
        ("If the base were 3, the answer would be 15.", "counterfactual"),
        ("The key says the answer is 15.", "attributed"),
        ("The answer is one of 13, 14, 15.", "options"),
        ("The answer is 15 (not yet verified).", "disclaimed"),
        ("It is not the case that the answer is 15.", "negated"),
        ("15 is ruled out.", "negated"),
        ("The answer is 15 (probably).", "hedged"),
        ("If the side is 5, the answer is 15; the side is not given.", "counterfactual"),
    ],
)
def test_each_refusal_names_its_rule(completion: str, rule: str) -> None:
    v = verify_math(completion, "15")
    assert v.status is Status.WRONG and v.details["rule"] == rule


def _searched_everywhere(text: str, span: str) -> str | None:
    """The commitment rules as written, each searched on every clause (no word prefilter)."""
    from rlvr.verify.math import commitment as c

    value = span.strip()
    at = text.rfind(value)
    start = c._clause_start(text, at)
    end_m = c._CLAUSE_END.search(text, at + len(value))
    before, after = text[start:at], text[at + len(value) : at + len(value) + 80]
    clause = text[start : end_m.start() if end_m else len(text)]
    if c._NOT_BEFORE.search(before) or c._NOT_AFTER.match(after):
        return "negated"
    if c._denied(before) or c._EXCLUDED_BEFORE.search(before):
        return "negated"
    if c._CJK_NOT_BEFORE.search(before) or c._CJK_NOT_AFTER.match(after):
        return "negated"
    if c.hedged(before, clause[len(before) + len(value) :]):
        return "hedged"
    if c._IDIOM_AFTER.match(text, at + len(value), end_m.start() if end_m else len(text)):
        return "hedged"
    if c._about_the_value(c._CJK_HEDGE, before) or c._CJK_HEDGE_AFTER.match(after):
        return "hedged"
    if (c._QUESTION_AFTER.match(after) or (end_m and text[end_m.start()] in "?？")) and not c._WHY.search(clause):
        return "questioned"
    return "repeated" if c._repeated(text, at, value) else None


# every word the rules name, in both cases, among words that name nothing
_VOCABULARY = (
    "not never isn't wasn't no es era nicht keine kein n'est pas point ne sont non sono the a answer equal "
    "to be exactly simply just final result value is was would cannot can't correct right wrong incorrect "
    "false invalid true might could may well around about perhaps maybe possibly probably presumably "
    "vielleicht tal vez forse talvez I guess suppose my best sure certain confident unsure uncertain or "
    "something else don't do know so hence we get thus answer: $x$ , . ; ! ? ( ) \\boxed{12} it that case "
    "untrue say rule out ruled excluded eliminated anything other than mistake wrong: incorrect: falso cierto"
).split()


# what stands just before the value when a rule fires (and near-misses of it)
_LEAD_INS = [
    "",
    "is",
    "the answer is not",
    "isn't",
    "wasn't the",
    "is never",
    "no es",
    "ist nicht",
    "ist keine",
    "n'est pas",
    "ne sont pas",
    "non sono",
    "might be",
    "could well be about",
    "may be",
    "perhaps",
    "I guess",
    "my best guess is",
    "not sure, but",
    "tal vez",
    "cannot be",
    "is not the answer:",
    "it is not the case that the answer is",
    "it is false that",
    "would be wrong to say",
    "rule out",
    "anything but",
    "wrong:",
]


@given(
    words=st.lists(st.sampled_from(_VOCABULARY), max_size=10),
    lead_in=st.sampled_from(_LEAD_INS),
    doubt=st.sampled_from(
        ["", "or something else", "but I don't know", "- I am not certain", "not confident", "just a guess"]
    ),
    tail=st.lists(st.sampled_from(_VOCABULARY), max_size=6),
    upper=st.booleans(),
)
@settings(max_examples=500, deadline=None)
def test_the_word_prefilter_never_changes_a_commitment_verdict(
    words: list[str], lead_in: str, doubt: str, tail: list[str], upper: bool
) -> None:
    """uncommitted() skips the rules' searches on an ASCII clause holding none of their words: on
    clauses made of those words (any order, either case) it says what searching everywhere says."""
    from rlvr.verify.math.commitment import uncommitted

    text = " ".join([*words, lead_in, "12", doubt, *tail])
    text = text.upper() if upper else text
    got = uncommitted(text, "12")
    assert (got[0] if got else None) == _searched_everywhere(text, "12")


# one phrase for each alternative of the disclaimer rule, in the case a model may write it
_DISCLAIMERS = [
    "not yet double-checked", "UNVERIFIED", "without verification", "with some caution", "with a grain of salt",
    "don't rely on it", "cannot guarantee", "won't commit", "could well be off", "not 100% certain",
    "unsure about this", "hmm, that's not right", "scratch that", "ignore the above", "is my educated guess",
    "do not hold me to it", "don't quote me", "unless I made a slip", "if I didn't mess up", "no estoy segura",
    "sin verificar", "no lo he verificado", "PAS SÛR", "pas sur", "non vérifié", "sans vérifier", "nicht sicher",
    "ungeprüft", "nicht überprüft", "nicht verifiziert", "не уверен", "НЕ ПРОВЕРЯЛ", "non sono sicuro",
    "non verificato", "não tenho certeza", "sem verificar", "未验证", "沒有檢查", "不能保證", "確認していない",
    "検証していない",
]  # fmt: skip


@given(
    before=st.lists(st.sampled_from(_VOCABULARY), max_size=6),
    disclaimer=st.sampled_from([*_DISCLAIMERS, ""]),
    after=st.lists(st.sampled_from(_VOCABULARY), max_size=6),
    upper=st.booleans(),
)
@settings(max_examples=400, deadline=None)
def test_the_disclaimer_word_gate_never_changes_what_the_rule_finds(
    before: list[str], disclaimer: str, after: list[str], upper: bool
) -> None:
    """_disclaimed() searches only text holding one of _DISCLAIMER_WORDS: it finds what the rule finds."""
    from rlvr.verify.math import commitment

    text = " ".join([*before, disclaimer, *after])
    text = text.upper() if upper else text
    assert commitment._disclaimed(text) == bool(text.strip() and commitment._DISCLAIMER.search(text))
    if disclaimer:
        assert commitment._DISCLAIMER.search(disclaimer), disclaimer  # each phrase is one of the rule's


# Issue 57: non-commitment in each language models answer in, one instance of each kind of cue (other
# instances than the issue's held-back rounds); gold 12 throughout. Each refusal must not score.
REFUSED_BY_LANGUAGE: dict[str, dict[str, list[str]]] = {
    "en": {
        "hedge": ["After all that, I reckon the answer is probably around 12, though I'm far from certain.",
                  "The answer is 12, which may be correct."],
        "negation": ["The answer is definitely not 12."],
        "question": ["The answer: 12?? That doesn't look right."],
        "counterfactual": ["Had the train been faster, the answer would have been 12.",
                           "The answer is 12 if we ignore the discount, which we cannot.",
                           "\\boxed{12} is what you'd get by forgetting to carry the one.",
                           "So if the price had doubled, it would be 12."],
        "attribution": ["Some would say the answer is 12, but that is a misconception.",
                        "A student might write \"the answer is 12\", which is a classic error."],
        "options": ["The answer is either 12 or 13; I cannot decide."],
        "disclaimer": ["Final answer: 12 (unconfirmed).", "\\boxed{12}\\quad\\text{(I am guessing)}",
                       "The answer is 12 (an educated guess).", "\\boxed{12} (just a guess; 3*4=12)"],
        "retraction": ["The answer is 12. Actually no, let me recompute... it is 14.",
                       "The answer is \\boxed{12}. Hmm, that can't be right.",
                       "The answer is 12. Wait, no, I miscounted."],
    },
    "zh": {
        "hedge": ["答案可能是12，但我不太确定。", "答案大约是12吧。"],
        "negation": ["答案应该不是12。"],
        "question": ["答案是12吗？我不确定。"],
        "counterfactual": ["如果速度加倍，答案就会是12，但题目没有这么说。"],
        "attribution": ["老师说答案是12，但我觉得不对。"],
        "options": ["答案是12或13。"],
        "disclaimer": ["答案是12（未经验证）。"],
        "retraction": ["答案是12。不对，应该是14。"],
    },
    "ja": {
        "hedge": ["答えはたぶん12です。", "答えは12だと思うが、確信はない。", "答えは12かもしれません。"],
        "negation": ["答えは12ではありません。"],
        "question": ["答えは12でしょうか？"],
        "counterfactual": ["もし速度が2倍なら、答えは12になるでしょう。"],
        "attribution": ["先生によると答えは12ですが、私は違うと思います。"],
        "options": ["答えは12か13です。"],
        "disclaimer": ["答えは12です（未確認）。"],
        "retraction": ["答えは12です。いや、違います。"],
    },
    "es": {
        "hedge": ["La respuesta es probablemente 12.", "Quizá la respuesta sea 12."],
        "negation": ["La respuesta no es 12."],
        "question": ["¿La respuesta es 12?"],
        "counterfactual": ["Si el precio fuera el doble, la respuesta sería 12."],
        "attribution": ["Mi amigo dice que la respuesta es 12."],
        "options": ["La respuesta es 12 o 13."],
        "disclaimer": ["La respuesta es 12, aunque no lo he comprobado."],
        "retraction": ["La respuesta es 12. No, espera, me equivoqué."],
    },
    "fr": {
        "hedge": ["La réponse est peut-être 12."],
        "negation": ["La réponse n'est pas 12."],
        "question": ["La réponse est-elle 12 ?"],
        "counterfactual": ["Si le prix doublait, la réponse serait 12."],
        "attribution": ["Le livre dit que la réponse est 12."],
        "options": ["La réponse est 12 ou 13."],
        "disclaimer": ["La réponse est 12, mais je n'ai pas vérifié."],
        "retraction": ["La réponse est 12. Non, attendez : je me suis trompé."],
    },
    "de": {
        "hedge": ["Die Antwort ist wahrscheinlich 12.", "Die Antwort dürfte 12 sein.", "Die Antwort ist womöglich 12."],
        "negation": ["Die Antwort ist nicht 12."],
        "question": ["Ist die Antwort 12?"],
        "counterfactual": ["Wenn der Preis doppelt so hoch wäre, wäre die Antwort 12."],
        "attribution": ["Mein Lehrer sagt, die Antwort sei 12."],
        "options": ["Die Antwort ist 12 oder 13."],
        "disclaimer": ["Die Antwort ist 12, aber ich habe es nicht überprüft."],
        "retraction": ["Die Antwort ist 12. Nein, warte, ich habe mich verrechnet."],
    },
    "ru": {
        "hedge": ["Ответ, вероятно, 12.", "Ответ, кажется, 12.", "Ответ, скорее всего, 12."],
        "negation": ["Ответ не 12."],
        "question": ["Ответ 12?"],
        "counterfactual": ["Если бы цена удвоилась, ответ был бы 12."],
        "attribution": ["Учитель говорит, что ответ 12."],
        "options": ["Ответ 12 или 13."],
        "disclaimer": ["Ответ 12, но я не проверял."],
        "retraction": ["Ответ 12. Нет, подождите, я ошибся."],
    },
}  # fmt: skip
# a second round of other instances: verdicts after the value, stronger negations, doubt idioms,
# possibility clauses, false premises, the conditional of any verb
REFUSED_SECOND_ROUND = [
    "12 no es la respuesta correcta.",
    "12 n'est pas la bonne réponse.",
    "12 ist nicht die richtige Antwort.",
    "12 — не правильный ответ.",
    "12不是正确答案。",
    "12は答えではない。",
    "12 non è la risposta.",
    "> The answer is 12\n\nThat quote is from a wrong solution.",
    "I'd say roughly 12, give or take.",
    "My hunch is 12.",
    "It's 12-ish.",
    "Around 12, I think, but don't hold your breath.",
    "The answer should be 12, but I haven't done the math.",
    "Es posible que la respuesta sea 12.",
    "Il se peut que la réponse soit 12.",
    "Не исключено, что ответ 12.",
    "Under the (false) assumption that x = 3, the answer is 12.",
    "Si el descuento se aplicara dos veces, obtendríamos 12.",
    "Si on double le prix, on obtiendrait 12.",
    "The answer is by no means 12.",
    "Under no circumstances is the answer 12.",
    "La réponse n'est absolument pas 12.",
    "It is 12 or so.",
    # what was just quoted, judged wrong at once; a supposition; a question tagged on
    "Он написал «ответ 12», но это ошибка.",
    'Escribió "la respuesta es 12", lo cual es incorrecto.',
    'Someone posted "the answer is 12", which is wrong.',
    "The answer is 12... or is it?",
    "Let us assume the answer is 12.",
    "Suppose the answer is 12.",
    "Assume for contradiction that the answer is 12.",
    "Supongamos que la respuesta es 12.",
    "Supposons que la réponse soit 12.",
    "Angenommen, die Antwort ist 12.",
    "Предположим, что ответ 12.",
    "假设答案是12。",
    "答えが12だと仮定する。",
]
COMMITTED_SECOND_ROUND = [
    "The probability of success, perhaps surprisingly, is 12.",
    "Si María tiene 3 manzanas y compra 9, tiene 12.",
    "12 is the correct answer.",
    "La respuesta correcta es 12.",
    "12 est la bonne réponse.",
    "Правильный ответ — 12.",
    "12是正确答案。",
    "12が答えです。",
    "Sans aucun doute, la réponse est 12.",
    "It might seem like 13, but the answer is 12.",
    "The options were 10, 12 and 14; only 12 satisfies all conditions, so the answer is 12.",
    "Suppose x = 3. Then 4x = 12. Since x = 3 is given, the answer is 12.",
    "Assume the width is w. Then 3w = 36, so w = 12.",
    # a check after the box that judges another value
    "The greatest integer is $\\boxed{12}$.\n\nCheck: substituting $12$ gives 40 > 39. Substituting 13 gives"
    " 43 > 43, which is false.",
]


# a third round: the words of doubt around a value, in its clause, either side
REFUSED_THIRD_ROUND = [
    "I'm not 100% sure but it's 12.",
    "I would guess 12.",
    "My final answer, tentatively, is 12.",
    "Tentatively: 12.",
    "Answer (tentative): 12",
    "Answer: 12 (needs double-checking)",
    "Answer: 12 — to be confirmed.",
    "Answer: 12 (TBD)",
    "Final answer: 12 (approximately, not exact).",
    "Respuesta: 12 (no estoy del todo seguro).",
    "Réponse : 12 (à vérifier).",
    "Antwort: 12 (ohne Gewähr).",
    "Ответ: 12 (требует проверки).",
    "答案：12（待确认）",
    "答え：12（要確認）",
    "The answer is 12, unless I misread the problem.",
    "The answer is 12 if my arithmetic is right.",
    "The answer is 12, assuming I didn't mess up.",
    "Best I can tell, the answer is 12.",
    "As far as I can tell, it's 12.",
    "Something like 12.",
    "12, roughly speaking.",
]
COMMITTED_THIRD_ROUND = [
    "The answer is 12, as required.",
    "The answer is 12, which I verified by substitution.",
    "I am certain: 12.",
    "Answer: 12 (exact).",
    "Answer: 12 (in cm).",
    "The answer is 12, to be precise.",
    "So, as expected, the answer is 12.",
    "The answer is 12 (rounded to the nearest integer).",
    "The answer is not exactly 13 but 12.",
    "My estimate is 12.",  # an estimation problem's answer: "estimate" is no doubt
]


# a fourth round: verdicts after the value, exclusions, first impressions, generic and reported speakers
REFUSED_FOURTH_ROUND = [
    "12 is definitely not it.",
    "12 is not what we want.",
    "12 violates the condition.",
    "12 is too large.",
    "12 is off by one.",
    "12 is a wrong value.",
    "12 won't work.",
    "Not the answer: 12.",
    "Except 12, all values work.",
    "All values except 12 work.",
    "No way it's 12.",
    "12 — nope.",
    "12 would have been the answer if n were even.",
    "In a world where x = 3, the answer is 12.",
    "My teacher told me 12.",
    "A common wrong answer is 12.",
    "12 is the naive answer; the real one differs.",
    "At first glance it looks like 12.",
    "You might think it's 12, but it isn't.",
    "Naively, 12.",
    "A careless reader would say 12.",
]
COMMITTED_FOURTH_ROUND = [
    "At first glance it looks like 13, but it is 12.",
    "You might think it's 13, but it's 12.",
    "12 satisfies every condition.",
    "12 is the smallest such value.",
    "The naive answer is 13; the real answer is 12.",
    "Excluding 13, the only value left is 12.",
    "Except for the first term, all terms are even, so the answer is 12.",
    "12 is not too large: it fits, so the answer is 12.",
    "Simplifying this expression tells us $x = 12$.",
    "Symmetry tells us that the extreme value is at $p = 12$.",
]


# What commits, in each language: a conclusion, a check that confirms, a question answered by a box
COMMITTED_BY_LANGUAGE: dict[str, list[str]] = {
    "en": ["I'm confident the answer is 12.", "Not 10, but 12. The answer is \\boxed{12}.",
           "Is the answer 12? Yes: \\boxed{12}.", "Either way, the total is 12.",
           "The answer is 12. Wait, let me double-check: 3 * 4 = 12. Yes.",
           "Therefore the answer would be 12 if the rate stayed constant.",
           "Hence, if we were to pick one, there would be 12 ways.", "We see that Bob wrote 12 numbers.",
           "so the sum is $5+19 = \\boxed{12}$.\n\nChallenge: Is it a coincidence that the answer is 12?",
           "\\boxed{12} (I guessed and checked: 3 * 4 = 12)"],
    "zh": ["所以答案是12。", "经过验证，答案是12。", "不是10，答案是12。", "答案是12。等等，验证一下：3×4=12，没错。"],
    "ja": ["したがって、答えは12です。", "検算しました。答えは12です。"],
    "es": ["Por lo tanto, la respuesta es 12."],
    "fr": ["Donc la réponse est 12."],
    "de": ["Also ist die Antwort 12.", "Die Antwort ist 12. Moment, ich prüfe: 3 · 4 = 12. Stimmt."],
    "ru": ["Следовательно, ответ 12.", "Ответ: 12. Нет других решений."],
}  # fmt: skip
_KINDS = ("hedge", "negation", "question", "counterfactual", "attribution", "options", "disclaimer", "retraction")


def test_every_language_has_every_kind_of_cue() -> None:
    assert set(REFUSED_BY_LANGUAGE) == set(COMMITTED_BY_LANGUAGE) == {"en", "zh", "ja", "es", "fr", "de", "ru"}
    for lang, kinds in REFUSED_BY_LANGUAGE.items():
        assert tuple(kinds) == _KINDS and all(kinds.values()), lang


@pytest.mark.parametrize(
    "completion",
    [t for kinds in REFUSED_BY_LANGUAGE.values() for texts in kinds.values() for t in texts]
    + REFUSED_SECOND_ROUND
    + REFUSED_THIRD_ROUND
    + REFUSED_FOURTH_ROUND,
)
def test_no_commitment_in_any_language_scores(completion: str) -> None:
    assert not judged(completion, "12"), verify_math(completion, "12")


@pytest.mark.parametrize(
    "completion",
    [t for texts in COMMITTED_BY_LANGUAGE.values() for t in texts]
    + COMMITTED_SECOND_ROUND
    + COMMITTED_THIRD_ROUND
    + COMMITTED_FOURTH_ROUND,
)
def test_a_committed_answer_in_any_language_scores(completion: str) -> None:
    assert judged(completion, "12"), verify_math(completion, "12")


_TWELVE = {"es": "doce", "fr": "douze", "de": "zwölf", "ru": "двенадцать"}


@pytest.mark.parametrize("lang", sorted(_TWELVE))
def test_the_value_in_words_commits_or_not_as_its_digits_do(lang: str) -> None:
    """Every refusal and commitment of a language, with 12 written in that language's words: a
    number word does not slip past a hedge or a negation, and a committed one still scores."""
    refused = [t for texts in REFUSED_BY_LANGUAGE[lang].values() for t in texts if t.count("12") == 1]
    committed = [t for t in COMMITTED_BY_LANGUAGE[lang] if t.count("12") == 1]
    assert len(refused) >= 6 and committed
    for text in refused:
        worded = text.replace("12", _TWELVE[lang])
        assert not judged(worded, "12"), verify_math(worded, "12")
    for text in committed:
        worded = text.replace("12", _TWELVE[lang])
        assert judged(worded, "12"), verify_math(worded, "12")


def test_a_bare_answer_word_after_a_box_does_not_supersede_it() -> None:
    """A bare "ответ 13" after a box names an answer (as "the answer 13" does); it does not state a new one."""
    assert judged("\\boxed{12}. Проверим ответ 13 подстановкой.", "12")
    assert judged("Следовательно, ответ 12.", "12") and judged("Also ist die Antwort 12.", "12")


@pytest.mark.parametrize(
    ("completion", "rule"),
    [
        ("The answer is 12. Actually no, it is 14.", "retracted"),
        ("答えは12です。いや、違います。", "retracted"),
        ("\\boxed{12} is what you'd get by forgetting to carry the one.", "counterfactual"),
        ("The answer is 12 if we ignore the tax, which we cannot.", "counterfactual"),
        ("Some would say the answer is 12.", "attributed"),
        ("Die Antwort dürfte 12 sein.", "hedged"),
    ],
)
def test_the_new_cues_name_their_rule(completion: str, rule: str) -> None:
    v = verify_math(completion, "12")
    assert v.status is Status.WRONG and v.details["rule"] == rule, v


# What reference solutions write after or around their box, that a careful grader still reads as the
# answer (found by verifying all 12,500 MATH solutions against their own boxes; other instances here),
# with near-misses that must stay refused. (completion, gold, correct?)
AROUND_THE_BOX = [
    # a check of the answer after it: "answer:" there names the thing checked
    ("So $n = \\boxed{5}$.\n\nWe can check our answer: if $n = 5$, then $3n + 1 = 16$.", "5", True),
    ("Thus $x = \\boxed{8}$. Let us verify the answer: $8 \\cdot 2 = 16$.", "8", True),
    ("So $x = \\boxed{8}$. Final answer: 9", "8", False),  # a later statement still supersedes the box
    # the answer named without "is" after the box: not a new statement of it
    ("The total is $\\boxed{40}$.\n\nNote that a spreadsheet gives the answer $39.97$ for the exact sum.", "40", True),
    # a remark that answers another question, ended by "!" (a factorial goes on: "5! = 120")
    ("The area is $\\boxed{360}$.\n\nRemark. Does such a shape exist? The answer is yes! Take two $18$-$41$ triangles.",
     "360", True),
    ("The answer is 5! = 120", "120", True),
    # a question after the box about the answer already given
    ("The sum is $7+5 = \\boxed{12}$.\n\nChallenge: Is it a coincidence that the answer is 12?", "12", True),
    ("Is the answer 12?", "12", False),
    # sentence punctuation inside display maths
    ("so our answer is then \\[ 17^2 - 15^2 = 64, \\]as before.", "64", True),
    ("The answer is 64,", "64", True),
    # a person of the problem who writes the answer, in a conclusion
    ("Therefore Mia writes $g(2)=\\boxed{9}$ on the last card.", "9", True),
    ("We see that Ravi wrote $\\boxed{9}$ numbers.", "9", True),
    ("So the book says 9.", "9", False),
    # the problem's own model stated in a conditional that a conclusion opens
    ("Therefore, the population in 2010 would be $\\boxed{4500}$ if it grew linearly.", "4500", True),
    ("Thus, if we were to pick a point at random, there would be a $\\boxed{\\frac{1}{3}}$ chance.", "1/3", True),
    ("Thus, if the price had doubled, the total would be $\\boxed{4500}$.", "4500", False),
    ("Each 7th grader gets $\\boxed{6}$ pencils.", "6", True),
    # the last-number fallback passes over a number ruled out right after it
    ("The total is 15, since 14 is not possible.", "15", True),
    ("The total is 15, since 14 is not possible.", "14", False),
    ("We try 3 and 4; 4 fails, so it is 3.", "3", True),
    ("Case 1: both the student and the answer key say it is true, so $\\boxed{42}$ are right.", "42", True),
]  # fmt: skip


@pytest.mark.parametrize(("completion", "gold", "expected"), AROUND_THE_BOX)
def test_what_solutions_write_around_their_box(completion: str, gold: str, expected: bool) -> None:
    assert judged(completion, gold) is expected, verify_math(completion, gold)


@given(st.text(alphabet=" \t\n$})*]\\.,;:!。！，、—–-?ishwrong", max_size=12))
@settings(max_examples=400, deadline=None)
def test_what_the_quiet_gate_skips_matches_no_pattern_after_the_value(after: str) -> None:
    """uncommitted() does not try its after-the-value patterns when only closing marks and one
    punctuation mark follow the value: on such text none of them can match."""
    from rlvr.verify.math import commitment as c

    quiet = c._QUIET_AFTER.match(after)
    if quiet is None or quiet.end() < len(after):
        return
    for pattern in (c._NOT_AFTER, c._IDIOM_AFTER, c._WHAT_YOU_GET, c._RETRACTED, c._CJK_NOT_AFTER, c._JUDGED_AFTER):
        assert pattern.match(after) is None, (pattern.pattern[:40], after)
