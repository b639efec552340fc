"""Whether the statement that names the answer commits to it, as a careful grader reads it.

An answer equal to the gold is still not given when the sentence that names it takes it back or
never commits to it. Each is a rule (``details["rule"]``) with tables of its own in
``tests/verify/math/test_commitment.py``:

* ``negated``: the value is said not to be the answer, before it ("the answer is not 12", "no es
  12", "ist nicht 12", "n'est pas 12") or after it ("12 cannot be right", "12 is wrong"), in the
  languages models answer in; the statement that names it is denied ("it is not the case that the
  answer is 12", "it would be wrong to say 12", "es falso que...", "il est faux que...", "es ist
  falsch, dass...", "неверно, что..."); the value is excluded ("12 is ruled out", "we can rule out
  12", "anything but 12", "wrong: 12");
* ``hedged``: the value is offered without commitment ("the answer might be 12", "perhaps 12",
  "12, but I am not sure", "12 (probably)", "12 or something else");
* ``repeated``: the answer block is the value written over and over (a flood meant to be read
  somewhere as the answer), not one answer;
* ``questioned``: the value is asked about, not given ("Is it 12?", "Is 12 the answer?", "¿Es 12 la
  respuesta?", "答案是12吗？"); a question why the answer is the value does not doubt it.
* ``counterfactual``: the value is what the answer would be if something not given held ("if the
  price had doubled, it would be 12", "we'd get 12", "sería 12 si...", "wäre 12, wenn...", "假如...,
  答案就是12"), or is worked out under a condition said after it not to be given ("if the radius is 2,
  the area is 16, but the radius is not given", "如果半径是2，面积就是16。但题目没有给出");
* ``attributed``: the value is someone else's claim, not the model's ("the book says 12", "my friend
  claims the answer is 12", "他说答案是12"); the model's own "I think" commits.
* ``options``: the value is an item of a list of alternatives ("one of 13, 14, 15", "either 14 or
  15", "14 or 15", "14 还是 15"); a list that ends before the value ("among 3, 5 and 15, the
  largest is 15") offers nothing;
* ``disclaimed``: the answer is followed by a disclaimer of it ("not verified", "I haven't checked",
  "treat it with caution", "I may be wrong", "wait, that's wrong", "a common misconception", "no estoy
  seguro", "no lo he comprobado", "je n'ai pas vérifié", "未经验证"), in its clause or the next few; the
  Minerva format's closing "I hope it is correct" is no disclaimer;
* ``retracted``: the very next sentence takes it back ("Actually no", "Hmm, that can't be right", "I
  miscounted", "No, espera", "Non, attendez", "Nein, warte", "Нет, подождите", "不对", "いや、違います");
  a "wait, let me check" that confirms it does not.

Each kind has cues in English, Chinese, Japanese, Spanish, French, German and Russian (Italian and
Portuguese for most), tested kind by kind and language by language in
``tests/verify/math/test_commitment_and_locales.py`` (``REFUSED_BY_LANGUAGE``, with what commits
beside it). Doubt after the value counts too ("24, which may be correct", "答えは12だと思うが、確信はない"),
as does a value said to come from a mistake ("12 is what you'd get by forgetting to carry") or a
condition rejected at once ("12 if we ignore the discount, which we cannot"). A conclusion that opens a
conditional states the problem's own model ("Therefore, it would be 112,875 if it decreased linearly")
unless the condition is contrary to fact ("so if the price had doubled, it would be 12"); a conclusion
about what a person of the problem writes or says ("Therefore Larry writes 6") is the answer. A question
after a box that already gives the value asks about an answer given: the box is judged.

Chinese and Japanese, written without spaces, have cue lists of their own (negations before the
value, "不是12", or after it, "12ではない"; doubts, "可能", "たぶん", "12かもしれない").

Only the clause that holds the answer is read (split at sentence ends, semicolons and line
breaks): "it is not obvious at first; the answer is 12" commits.
"""

from __future__ import annotations

import re

_CLAUSE_END = re.compile(r"(?<!\d)[.!?](?!\d)|[;\n。！？；]")
# Chinese and Japanese write no spaces and negate or doubt around the value: their cue lists
_CJK_NOT_BEFORE = re.compile(r"(?:不是|并非|並非|并不是|並不是|不等于|不等於|不会是|不會是|不可能是|绝不是|絕不是)\s*$")
_CJK_NOT_AFTER = re.compile(
    r"^[\s$}*)\]]*(?:[，,]\s*)?(?:是错的|是錯的|是错误的|是錯誤的|不对|不對|不正确|不正確|错了|錯了|"
    r"は正解ではない|は正解ではありません|は正解じゃない|は不正解|は答えではな|は答えじゃな|は解ではな|"
    r"不是(?:正确|正確)?(?:的)?(?:答案|解)|并不是答案|並不是答案|"
    r"ではない|ではありません|じゃない|じゃありません|ではなかった|は間違い|は誤り|は正しくない)"
)
_CJK_HEDGE = re.compile(
    r"可能是?\s*$|也许|也許|大概|或许|或許|估计|估計|我猜|不确定|不確定|没有把握|沒有把握|"
    r"たぶん|多分|おそらく|恐らく|自信がない|わからない|分からない"
)
_CJK_HEDGE_AFTER = re.compile(r"^[\s$}*)\]]*(?:かもしれない|かもしれません|だろうか|吧)")
# the value asked about, not given: a question mark (or a question particle) right after it
_QUESTION_AFTER = re.compile(
    r"^[\s$}*)\]]*(?:[?？]|(?:吗|嗎|ですか|か)\s*[?？。]?|(?:\.\.\.|…|,|\.)?\s*or\s+is\s+it\s*[?!.]*\s*$"
    r"|(?:\.\.\.|…|,)?\s*or\s+is\s+it\s*\?)",
    re.IGNORECASE,
)
# a clause ending in a question mark asks about its value ("Is 12 the answer?", "¿Es 12 la respuesta?",
# "12是答案吗？") unless it asks why (a value explained, not doubted: "Why is the answer 12? Because...")
_WHY = re.compile(
    r"\b(?:why|how\s+come|warum|wieso|weshalb|pourquoi|por\s*qu[ée]|perch[ée]|porque|почему|отчего|зачем)\b|"
    r"为什么|為什麼|为何|為何|なぜ|どうして",
    re.IGNORECASE,
)
# a negation standing just before the value (only words that name the answer between: "not 10, it's
# 12" negates the 10, not the 12)
_NOT_BEFORE = re.compile(
    r"(?:\bnot|\bnever|\bisn't|\bwasn't|\bcan't\s+be|\bcannot\s+be|\bcouldn't\s+be|\bno\s+puede\s+ser"
    r"|\bne\s+peut\s+pas\s+[êe]tre|\bне\s+может\s+быть|\bno\s+es|\bno\s+era|\bnicht|\bkein\w*|\bn'est\s+pas|\bn'est\s+point"
    r"|\bne\s+\w+\s+pas|\bnon\s+è|\bnon\s+sono|\bnão\s+é|\bnão\s+são|\bне|\bнет"
    r"|\bby\s+no\s+means|\bin\s+no\s+way|\bunder\s+no\s+circumstances\s+(?:is|was|can|could|will|would)"
    r"|\bn'est\s+(?:absolument|certainement|vraiment|surtout|nullement)\s+pas|\bno\s+es\s+(?:para\s+nada|en\s+absoluto))\s+"
    r"(?:(?:the|a|an|answer|equal|to|be|exactly|simply|just|final|result|value|solution|die|la|el|le|il|o|a)\s+){0,3}$",
    re.IGNORECASE,
)
# the statement that names the value denied, earlier in its clause ("it is not the case that the answer
# is 12"; "it would be wrong to say 12"), or the value excluded just before it ("rule out 12")
_DENIED_BEFORE = re.compile(
    r"\b(?:it\s+is|it's|that\s+is|that's)\s+(?:not\s+(?:the\s+case|true|correct|right)|false|untrue|incorrect|wrong)"
    r"\s+(?:that|to\s+(?:say|claim|answer|conclude))\b"
    r"|\b(?:would\s+be|is|be)\s+(?:wrong|incorrect|a\s+mistake|an\s+error|false)\s+to\s+(?:say|claim|answer|conclude|give)\b"
    r"|\b(?:es|sería)\s+(?:falso|incorrecto|un\s+error)\s+(?:decir\s+)?que\b|\bno\s+es\s+(?:cierto|verdad)\s+que\b"
    r"|\b(?:il\s+est|c'est)\s+faux\s+(?:de\s+dire\s+)?que\b|\b(?:il|ce)\s+n'est\s+pas\s+vrai\s+que\b"
    r"|\bes\s+ist\s+(?:falsch|nicht\s+wahr|nicht\s+richtig),?\s+(?:zu\s+sagen,?\s+)?dass\b"
    r"|\b(?:é|è)\s+falso\s+(?:dizer\s+)?(?:que|che)\b|\bn(?:ão|on)\s+(?:é|è)\s+(?:verdade|vero)\s+(?:que|che)\b"
    r"|(?<!\w)(?:неверно|неправда|ложно|неправильно)\s*,?\s*что\b"
    r"|\b(?:I|we)\s+(?:wouldn'?t|would\s+not|won'?t|will\s+not|can'?t|cannot|couldn'?t|could\s+not|don'?t|do\s+not)"
    r"\s+(?:say|claim|conclude|assert)\b(?!\s+(?:for\s+)?(?:sure|certain))"
    r"|\b(?:nobody|no\s+one|no-one)\s+(?:\w+\s+)?(?:say|says|claim|claims|conclude|assert)\b",
    re.IGNORECASE,
)
_EXCLUDED_BEFORE = re.compile(
    r"(?:\brul(?:e|ed|ing)\s+out|\bexclud(?:e|ed|ing)|\beliminat(?:e|ed|ing)|\bdiscard(?:ed|ing)?|\breject(?:ed|ing)?"
    r"|\banything\s+(?:but|except|other\s+than)|\bsomething\s+other\s+than|\b(?:wrong|incorrect|false)\s*:"
    r"|\bnot\s+the\s+answer\s*:|\b(?:all|every|any)\s+(?:\w+\s+)?(?:values?|numbers?|integers?|choices?|options?)\s+"
    r"(?:except|but)|^\W*except(?:\s+for)?|\bno\s+way\s+(?:it'?s|it\s+is|is\s+it|that'?s)"
    r"|\b(?:(?:common|typical|frequent|classic|popular)\s+)?(?:wrong|incorrect|mistaken|naive|tempting|trap)\s+"
    r"(?:answer|guess|value|choice)\s+(?:is|would\s+be|was)\s*:?)"
    r"\s*(?:(?:the|a|an|value|answer|number|option)\s+){0,2}\$?\s*$",
    re.IGNORECASE,
)
# a verdict on the value just after it
_NOT_AFTER = re.compile(
    r"^[\s$}*)\]]*(?:[.,—–]\s*|\s-\s*)?(?:<(?:sup|sub|small|i|em|b|strong|span|mark|u|s|del)\b[^<>]{0,60}>\s*)?"
    r"(?:is|was|would\s+be|ist|es|est|è|é)?\s*"
    r"(?:not\s+(?:correct|right|the\s+answer|it|valid|true|possible|an?\s+option|allowed|feasible)|wrong|incorrect|false|invalid|"
    r"cannot\s+be\s+(?:right|correct|it|the\s+answer|true)|can't\s+be\s+(?:right|correct|it)|"
    r"isn't\s+(?:right|correct|it|the\s+answer)|falsch|incorrecto|incorrecta|faux|fausse|sbagliato|errado|"
    r"неверн\w*|неправильн\w*|"
    r"(?:(?:is|are|was|has\s+been|can\s+be|must\s+be|gets?|been)\s+)?(?:ruled\s+out|excluded|eliminated|discarded|"
    r"rejected|impossible)|queda\s+descartad[oa]|est\s+exclue?|ist\s+ausgeschlossen"
    r"|fails|does\s*n[o']t\s+(?:work|hold|satisfy|fit)"
    r"|no\s+es\s+(?:la\s+)?(?:respuesta|correct[oa]|soluci[óo]n|cierto|v[áa]lid[oa])"
    r"|n'est\s+pas\s+(?:la\s+)?(?:bonne\s+)?(?:r[ée]ponse|correcte?|juste|solution|valable)"
    r"|ist\s+(?:nicht|keine)\s+(?:die\s+)?(?:richtige\s+|korrekte\s+)?(?:Antwort|L[öo]sung|richtig|korrekt)"
    r"|(?:это\s+)?не\s+(?:правильный\s+|верный\s+)?(?:ответ|верно|правильно|решение)"
    r"|non\s+[èe]\s+(?:la\s+)?(?:risposta|corrett[oa]|giust[oa]|soluzione)|n[ãa]o\s+[ée]\s+(?:a\s+)?(?:resposta|corret[oa])"
    r"|is\s+not\s+a\s+solution|isn't\s+a\s+solution"
    r"|(?:definitely|certainly|clearly|obviously|surely)\s+not\s+(?:it|right|correct|the\s+answer)"
    r"|not\s+what\s+(?:we|you|I)\s+(?:want|need|seek|are\s+looking\s+for)|violates|contradicts"
    r"|too\s+(?:large|small|big|high|low|many|few)|off\s+by\s+(?:one|\d+)"
    r"|an?\s+(?:wrong|incorrect|invalid|bad|false)\s+(?:value|answer|result|choice)"
    r"|(?:won't|will\s+not|wouldn't|would\s+not|can't|cannot)\s+work"
    r"|the\s+(?:naive|tempting|trap|wrong|incorrect|careless|common\s+(?:wrong|mistaken))\s+(?:answer|value|choice)"
    r"|nope|(?:but|yet)\s+(?:it|that|this)\s*(?:isn'?t|is\s+not|'s\s+not|is\s+wrong|'s\s+wrong|doesn'?t\s+work))\b",
    re.IGNORECASE,
)
# a value offered, not given: a modal just before it, or a word of doubt earlier in its clause
_HEDGE_BEFORE = re.compile(
    r"\b(?:might|could|may)\s+(?:(?:well|also|even|conceivably|possibly|perhaps|plausibly)\s+)?be\s+"
    r"(?:(?:around|about|roughly|approximately)\s+)?$|\b(?:it'?s|is|most|very|quite)\s+likely\b|"
    r"\b(?:perhaps|maybe|possibly|probably|presumably|vielleicht|quizás?|tal\s+vez|peut-être|forse|talvez|"
    r"возможно|наверное|probablemente|posiblemente|a\s+lo\s+mejor|probablement|vraisemblablement|wahrscheinlich"
    r"|vermutlich|womöglich|wom[oö]glich|m[oö]glicherweise|moeglicherweise|eventuell|probabilmente|magari"
    r"|provavelmente|possivelmente|вероятно|по-видимому|видимо|кажется|похоже|пожалуй)\b"
    # "perhaps surprisingly": a remark on the value, no doubt of it
    r"(?!,?\s+(?:(?:un|not\s+)?surprising(?:ly)?|counter-?intuitively|interestingly|paradoxically|ironically)\b)"
    r"|\bскорее\s+всего\b|\bat\s+first\s+(?:glance|sight)\b|\bnaively\b|\bsuperficially\b|\bon\s+the\s+surface\b"
    r"|\bd(?:ü|ue)rfte[n]?\b|\bI\s+(?:guess|suppose)\b|\bmy\s+(?:best\s+)?(?:guess|hunch|gut\s+feeling|instinct)\b"
    r"|\bes\s+posible\s+que\b|\bpuede\s+que\b|\bil\s+se\s+peut\s+que\b|\bil\s+est\s+possible\s+que\b"
    r"|\bes\s+ist\s+m(?:ö|oe)glich,?\s+dass\b|\bне\s+исключено\b|\b[èe]\s+possibile\s+che\b|\b[ée]\s+poss[íi]vel\s+que\b"
    r"|\bif\s+I\s+(?:had|have)\s+to\s+guess\b|\bat\s+a\s+guess\b|\bguessing\b"
    r"|\bpodr[íi]a[n]?\s+ser\b|\bpourrai(?:t|ent)\s+[êe]tre\b|\bk(?:ö|oe)nnte[n]?\b|\bpotrebbe(?:ro)?\s+essere\b"
    r"|\bpoderia[m]?\s+ser\b|\bмо(?:жет|гло|г|гла)\s+(?:бы\s+)?быть\b",
    re.IGNORECASE,
)
# a word of doubt right after the value ("16, probably", "16 (I guess)", "16 — maybe")
_HEDGE_AFTER = re.compile(
    r"^[\s$}*)\]]*(?:[,.]\s*)?(?:which\s+)?(?:seems?|looks?|sounds?|is|appears?)\s+(?:\w+\s+)?"
    r"(?:plausible|likely|reasonable)\b"
    r"|^[\s$}*)\]]*(?:[,.]\s*)?(?:which\s+)?(?:(?:might|may|could)\s+(?:well\s+)?be|(?:is|seems)\s+(?:probably|possibly|maybe|perhaps))"
    r"\s+(?:it|right|correct|the\s+answer|the\s+one)\b"
    r"|^[\s$}*)\]]*[,(—–-]?\s*(?:probably|maybe|perhaps|possibly|presumably|I\s+(?:guess|suppose)|vielleicht"
    r"|quizás?|tal\s+vez|peut-être|forse|talvez|возможно|наверное)\b",
    re.IGNORECASE,
)
# an idiom of doubt right after the value ("12-ish", "12, give or take", "12 or so"): anchored, so
# matched on every clause without a word gate
_IDIOM_AFTER = re.compile(
    r"[\s$}*)\]]*(?:-\s?ish\b|,?\s*(?:give\s+or\s+take|more\s+or\s+less|or\s+so|plus\s+or\s+minus\s+a\s+bit)\b)",
    re.IGNORECASE,
)
# a turn to a correction: a hedge before it was about the value it takes back ("my guess at first was
# 12, but it is 15")
_CONTRAST = re.compile(
    r"\b(?:but|however|yet|though|actually|aber|doch|pero|mais|però|ma|mas|но)\b|但是?|可是|不过|不過|然而|其实|其實|"
    r"でも|しかし|実は",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")
_DOUBT = re.compile(
    r"\bnot\s+(?:sure|certain|confident)\b|\bunsure\b|\buncertain\b|\bcan'?t\s+be\s+(?:sure|certain)\b|"
    r"\b(?:can'?t|cannot)\s+say\s+(?:for\s+)?(?:sure|certain)\b|"
    r"\bor\s+(?:maybe\s+|perhaps\s+)?something\s+else\b|\bI\s+(?:don't|do\s+not)\s+know\b|\bjust\s+a\s+guess\b"
    # the words of doubt a model writes around a value, in its clause (either side), per language
    r"|\bnot\s+(?:100\s*%|a\s+hundred\s+percent|entirely|completely|fully|totally|quite|very|too|all\s+that)\s+"
    r"(?:sure|certain|confident)\b|\btentative(?:ly)?\b|\bto\s+be\s+(?:confirmed|verified|checked|determined)\b"
    r"|\btb[dc]\b|\bneeds?\s+(?:double-?\s?|re-?)?(?:checking|verification|verifying|confirmation|"
    r"to\s+be\s+(?:double-?\s?)?(?:checked|verified|confirmed))\b"
    r"|\b(?:I\s+would|I'd|we'd)\s+guess\b|\bsomething\s+like\b|\broughly\s+speaking\b|\bor\s+thereabouts\b|\bballpark\b"
    r"|\bif\s+my\s+(?:arithmetic|math|maths|calculations?|reasoning|work|algebra)\s+is\s+(?:right|correct|sound)\b"
    r"|\bunless\s+I(?:'ve|\s+have)?\s+(?:misread|miscalculated|misunderstood|made|messed|got|am|'m)\b"
    r"|\bassuming\s+I\s+(?:didn'?t|did\s+not|haven'?t|have\s+not)\b|\b(?:as\s+far\s+as|best)\s+I\s+can\s+tell\b"
    r"|\bhard\s+to\s+say\b|\bnot\s+exact\b"
    r"|\bno\s+estoy\s+(?:del\s+todo\s+|muy\s+|completamente\s+)?segur[oa]\b|\bpor\s+(?:confirmar|verificar|comprobar)\b"
    r"|\bà\s+(?:vérifier|confirmer)\b|\bpas\s+(?:tout\s+à\s+fait\s+|vraiment\s+|complètement\s+)?s[ûu]r\b"
    r"|\bsous\s+réserve\b|\bsans\s+garantie\b|\bohne\s+Gew(?:ä|ae)hr\b|\bzu\s+(?:über)?prüfen\b"
    r"|\bnicht\s+(?:ganz\s+|völlig\s+|hundertprozentig\s+)?sicher\b|\bunter\s+Vorbehalt\b|\bvorl(?:ä|ae)ufig\b"
    r"|требует\s+проверки|нужно\s+проверить|не\s+(?:совсем\s+|до\s+конца\s+|полностью\s+)?уверен|под\s+вопросом"
    r"|предварительн|待确认|待確認|待定|待验证|待驗證|需要验证|需要驗證|需要检查|需要檢查|不太确定|不太確定|不一定"
    r"|仅供参考|僅供參考|暂定|暫定|要確認|確認が必要|不確か",
    re.IGNORECASE,
)
# what the answer would be under a condition not given: a conditional mood and a condition in the
# clause, per language ("would be 12 if ...", "sería 12 si ...", "serait 12 si ...", "wäre 12, wenn ...")
_WOULD = re.compile(
    r"\bwould(?:\s+(?:have\s+)?(?:be|been|equal|give|get|make|come\s+to|yield))?\b|\bwould've\b"
    r"|\b(?:we|you|it|they|he|she|I|that|this|one)'d\b"
    r"|\bser[íi]a[n]?\b|\bhabr[íi]a\b|\bdar[íi]a\b|\bserai(?:en)?t\b|\baurait\b|\bdonnerait\b"
    # the conditional of any Spanish or French verb ("obtendríamos", "tendría", "obtiendrait"); a name
    # such as "María" is too short a stem
    r"|\b\w{3,}r(?:ía|ías|íamos|ían)\b|\b(?:har|dir)(?:ía|ías|íamos|ían)\b|\b\w{2,}r(?:ait|aient)\b"
    r"|\bw[äa]ren?\b|\bw[üu]rde[n]?\b|\bh[äa]tte[n]?\b|\bsarebbe(?:ro)?\b|\bseria[m]?\b|\bбы(?:ло|л|ла)?\s+бы\b|\bбы\b",
    re.IGNORECASE,
)
# a condition contrary to fact: a past perfect ("had doubled", "had the train been"), "were" that is
# not "were to", "would have"
_CONTRARY_TO_FACT = re.compile(
    r"\bhad\s+(?:not\s+)?(?:been|\w+(?:ed|en|wn|ne|ught|ut|id))\b|\bhadn't\b"
    r"|\bhad\s+(?:it|the|we|they|he|she|there|i|you|this|that)\b"
    r"|\bwere\s+(?!to\b)(?:\w+\s+){0,2}(?:twice|half|as|more|less|larger|smaller|bigger|longer|shorter|not|only)\b"
    r"|\b(?:if|as\s+if)\s+(?:it|he|she|I|there|the\s+\w+)\s+were\b|\bwould\s+have\b|\bwould've\b",
    re.IGNORECASE,
)
_CONDITION = re.compile(
    r"\bif\b|\bhad\s+(?:it|the|we|they|he|she|there|i|you|this|that)\b|\bwere\s+(?:it|the|there|we|they)\b"
    r"|\bunless\b|\bsuppose\b|\bsupposing\b|\bassuming\b|\botherwise\b|\bin\s+case\b"
    r"|\bsi\b|\bs'il\b|\bwenn\b|\bfalls\b|\bse\b|\bесли\b",
    re.IGNORECASE,
)
# the condition a value was worked out under said not to be given, after it ("if the radius is 2, the area
# is 16; but the radius is not given"): the value answers a problem that was not asked
_NOT_GIVEN = re.compile(
    r"\b(?:is|are|was|were)\s+(?:not|never)\s+(?:given|stated|known|provided)\b|\bisn't\s+(?:given|stated|known)\b"
    r"|\bnot\s+given\b|\bno\s+es\s+dad[oa]|\bn'est\s+pas\s+donn[ée]|\bnicht\s+gegeben|\bне\s+дан"
    r"|\bwhich\s+(?:we|you|one)\s+(?:cannot|can'?t|can\s+not|must\s*n[o']t|may\s+not|should\s*n[o']t|are\s+not\s+allowed)\b"
    r"|\bwhich\s+(?:is|it)\s*(?:n'?t|\s+not)\s+(?:the\s+case|true|so|allowed)\b|\bwhich\s+isn'?t\s+(?:the\s+case|true|so)\b"
    r"|没有给出|沒有給出|未给出|未給出|没给出|沒給出|没有给定|未给定|与えられていない|没有这么说|沒有這麼說|没这么说"
    r"|并没有说|並沒有說|并非如此|並非如此|事实并非如此|そうではない",
    re.IGNORECASE,
)
# a value worked out in a scenario the model says it made up ("in a hypothetical where n = 4")
_HYPOTHETICAL = re.compile(
    r"\bhypothetical(?:ly)?\b|\bfor\s+the\s+sake\s+of\s+argument\b|\bhipot[ée]tic|\bhypoth[ée]tique|\bhypothetisch"
    r"|\(?\b(?:false|wrong|incorrect|mistaken|counterfactual)\b\)?\s+(?:assumption|premise|supposition|hypothesis)\b"
    r"|\bin\s+a\s+(?:world|universe|version\s+of\s+the\s+problem|variant)\s+(?:where|in\s+which)\b"
    r"|гипотетическ|假设性|假設性|仮に",
    re.IGNORECASE,
)
# a value supposed, not concluded ("Suppose the answer is 12.", "Assume for contradiction that x = 12",
# "Supongamos que la respuesta es 12", "Angenommen, die Antwort ist 12", "Предположим, что ответ 12", "假设答案是12")
_SUPPOSED = re.compile(
    r"(?:\b(?:let(?:\s+us|'s)\s+)?(?:suppose|assume|assuming|supposing)\b"
    r"(?:\s+(?:for\s+(?:the\s+sake\s+of\s+)?(?:a\s+)?(?:contradiction|argument)|,))?\s+(?:that\s+)?"
    r"|\b(?:supongamos|suponiendo|supposons|admettons|supponiamo|suponhamos)\s+que\s+|\bangenommen,?\s+(?:dass\s+)?"
    r"|\bnehmen\s+wir\s+an,?\s+(?:dass\s+)?|(?<!\w)(?:предположим|допустим),?\s+что\s+|假设|假設|假定)"
    r"(?:[^\W\d_]+\s+|[^\W\d_]\s*){0,4}?(?:is|were|was|equals|=|es|sea|est|soit|ist|sei|è|sia|é|seja|равен|—|是|为|為)?\s*\$?\s*$",
    re.IGNORECASE,
)
_SUPPOSED_AFTER = re.compile(r"[\s$}*)\]]*(?:だ|である)?と(?:仮定|仮に)")
_HYPOTHETICAL_HINTS = (
    "hypothe",
    "hipot",
    "sake",
    "assumption",
    "premise",
    "supposition",
    "world",
    "universe",
    "variant",
    "version",
)  # in every ASCII match of _HYPOTHETICAL, lower-cased
_CJK_CONDITION = re.compile(r"如果|假如|要是|倘若|假设|假設|若|もし|としたら|なら")
_CJK_COUNTERFACTUAL = re.compile(
    r"假如|要是|倘若|假设|假設|如果.{0,30}的话|如果.{0,30}的話|もし|としたら|だったら|ならば"
)
# someone else's claim: a reporting verb whose subject is not the model ("the book says", "Bob claims")
_ATTRIBUTED = re.compile(
    r"(?<!\bI\s)(?<!\bwe\s)\b(?:claims|claimed|says|said|states|stated|writes|wrote|thinks|believes|suggests|"
    r"insists|argues|reports|asserts)\b|\baccording\s+to\s+(?:the\s+|my\s+|a\s+|an\s+|some\s+)?(?:answer\s+)?"
    r"(?:key|solutions?|manual|book|textbook|teacher|tutor|friend|classmate|reference|grader|internet|web|source|"
    r"someone|others?|website|forum)\b|\bdice\s+que\b|\bdicen\s+que\b|\bdit\s+que\b|"
    r"\bsagt\b|\bbehauptet\b|\bговорит\b|\bутверждает\b|\bсчитает\b"
    r"|\btold\s+(?:me|us)\b"  # a person's telling ("symmetry tells us" is a derivation's)
    r"|\b(?:some(?:one|body)?|many|people|students|others|one|you|anyone|(?:a|an|the)\s+(?:\w+\s+)?(?:reader|student|person"
    r"|solver|beginner|novice))\s+(?:\w+\s+)?(?:would|might|may|could|often|will)\s+"
    r"(?:say|think|answer|claim|conclude|guess|write|expect|assume)\b|\btempting\s+to\s+(?:say|answer|conclude|think|write)\b",
    re.IGNORECASE,
)
_POSSESSED = re.compile(
    r"\b(?:textbook|book|key|teacher|tutor|friend|classmate|grader|website|forum|reference|manual|author|student)"
    r"s?'s?\s+(?:\w+\s+)?(?:answer|result|value|solution|claim)\b",
    re.IGNORECASE,
)
_CJK_ATTRIBUTED = re.compile(
    r"(?:他|她|他们|他們|书上|書上|老师|老師|朋友|别人|別人|有人|课本|課本).{0,8}?(?:说|說|认为|認為|声称|聲稱|写道|寫道)|によると|と言って"
)
# a conclusion about what a person of the problem does ("Therefore Larry writes f(3) = 6"): the answer
# to "what does Larry write", not a claim reported
_NAMED_ACTOR = re.compile(
    r"(?:\b(?:[Ss]o|[Tt]herefore|[Tt]hus|[Hh]ence|[Tt]hen)\b,?|\b(?:see|find|get|conclude|know|means)\s+that)\s+[A-Z][a-z]+\s+$"
)
_GIVENS = re.compile(r"\b(?:problem|question|task|exercise|statement|prompt|condition|hint)s?\b", re.IGNORECASE)
# a conclusion that opens a clause ("So, ...", "Therefore the ..."): "so" only there, where it is not the
# comparison of other languages ("doppelt so hoch")
_OPENS_CONCLUSION = re.compile(r"^\W*(?:and\s+)?(?:so|then)\b|\b(?:therefore|thus|hence|consequently)\b", re.IGNORECASE)
_MUST = re.compile(r"\bmust\b|\bneeds?\s+to\b|\bhas\s+to\b", re.IGNORECASE)
_CONCLUSION = re.compile(r"\b(?:so|therefore|thus|hence|then|which\s+gives|giving|so\s+that)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(
    r"\b(?:I|we)\s+(?:\w+\s+)?(?:claim|say|said|state|think|believe|suggest|wrote|write)\b", re.IGNORECASE
)
# the value offered as one of several: a list-introducing word before it in its clause, or an "or"
# (in any language) right before it; "either way" introduces nothing
_OPTIONS_BEFORE = re.compile(
    r"\b(?:one\s+of|any\s+of|among|either(?!\s+way\b)|uno\s+de|l'un\s+de|einer?\s+von|одно\s+из)\b",
    re.IGNORECASE,
)
# what stands between the list's word and the value: the list's earlier items, each with its separator
_LIST_SO_FAR = re.compile(r"^\s*:?\s*(?:[^,;\n]{1,40}?\s*(?:,|\bor\b|\band\b|/|、|，)\s*)+$", re.IGNORECASE)
_OR_BEFORE = re.compile(r"(?:\b(?:or|oder|o|ou|или|либо)|或者?|还是|還是|または|か)\s*\$?\s*$", re.IGNORECASE)
# the answer disowned after it is given (in its clause or the next ones)
_DISCLAIMER = re.compile(
    r"\b(?:not|never|haven'?t|have\s+not|hasn'?t|has\s+not|didn'?t|did\s+not|wasn'?t|was\s+not|isn'?t)\s+"
    r"(?:been\s+|yet\s+)?(?:double[-\s]?|re-?)?(?:checked|verified|confirmed|tested|validated)\b"
    r"|\b(?:unverified|unchecked|unconfirmed|untested)\b|\bwithout\s+(?:checking|verifying|verification)\b"
    r"|\bwith\s+(?:some\s+)?caution\b|\bwith\s+a\s+grain\s+of\s+salt\b"
    r"|\b(?:don'?t|do\s+not)\s+(?:trust|rely\s+on)\b|\b(?:no|can'?t|cannot)\s+guarantee"
    r"|\b(?:won'?t|will\s+not|would\s+not|wouldn'?t|can'?t|cannot)\s+commit\b"
    r"|\b(?:might|may|could)\s+(?:well\s+)?be\s+(?:wrong|mistaken|incorrect|off)\b"
    r"|\bnot\s+(?:100\s*%|entirely|fully|completely|totally)\s+(?:sure|certain|confident)\b"
    r"|\b(?:not\s+(?:sure|certain|confident)|unsure|uncertain)\s+(?:about|of)\s+(?:this|that|it)\b"
    r"|\b(?:wait|hmm+|oops|no)\b[,.!]?\s+(?:that'?s|this\s+is|it'?s)\s+(?:wrong|not\s+right|incorrect)\b"
    r"|\bscratch\s+that\b|\bignore\s+(?:that|this|the\s+above)\b"
    r"|^[\s$}*)\]]*(?:[,(—-]\s*)?(?:is|was|as|would\s+be|will\s+be)?\s*(?:my|a|an|just\s+a|only\s+a)\s+"
    r"(?:best\s+|educated\s+|rough\s+|wild\s+)?guess\b"
    r"|\b(?:(?:I'?m|I\s+am|we'?re|we\s+are)\s+(?:just\s+|only\s+|mostly\s+|partly\s+)?|just\s+)guessing\s*(?:[)}\].!,;]|$)"
    r"|\(\s*(?:(?:just|only|a|an|my|our|educated|rough|wild|best|pure|lucky)\s+)*guess(?:ed|ing|work)?\s*[)!.?]"
    r"|\b(?:don'?t|do\s+not)\s+hold\s+your\s+breath\b"
    r"|\b(?:haven'?t|have\s+not|didn'?t|did\s+not)\s+(?:actually\s+)?(?:done|do|worked|work|run|gone\s+through)\s+"
    r"(?:the\s+|any\s+)?(?:math|maths|calculations?|computations?|it\s+out|numbers|algebra)\b"
    r"|\b(?:that|this|the)\s+(?:quote|quotation|claim|statement|solution|answer|value)\s+(?:is|was)\s+"
    r"(?:(?:taken\s+)?from\s+an?\s+)?(?:wrong|incorrect|mistaken|false|flawed|bogus)\b"
    r"|\bfrom\s+an?\s+(?:wrong|incorrect|flawed|bogus|mistaken)\s+(?:solution|answer|source|attempt)\b"
    r"|\b(?:don'?t|do\s+not)\s+(?:quote|hold)\s+me\b|\bplaceholder\b|\bdummy\s+(?:value|answer|number)\b"
    r"|\bnot\s+(?:the|my)\s+(?:real|actual|true)\s+answer\b|\bmade[\s-]up\s+(?:value|answer|number)\b"
    r"|\bunless\s+I(?:'ve|\s+have)?\s+(?:made|make|messed|got|am|'m)\b|\bif\s+I\s+(?:didn'?t|did\s+not)\s+(?:make|mess)\b"
    r"|\b(?:a|an|the|this\s+is\s+a|that\s+is\s+a)\s+(?:common\s+|classic\s+|typical\s+)?(?:misconception|fallacy|pitfall|trap)\b"
    r"|\bno\s+estoy\s+segur[oa]|\bsin\s+(?:verificar|comprobar|revisar)"
    r"|\bno\s+(?:lo\s+)?(?:he\s+)?(?:verificad[oa]|comprobad[oa]|revisad[oa])|\bpas\s+(?:s[ûu]r|certain)"
    r"|\bnon\s+v[ée]rifi[ée]|\bsans\s+v[ée]rifi|\bn'ai\s+pas\s+(?:encore\s+)?(?:v[ée]rifi|contr[ôo]l)"
    r"|\bpas\s+(?:encore\s+)?v[ée]rifi[ée]|\bnicht\s+sicher|\bungepr[üu]ft|\bnicht\s+(?:[üu]ber)?pr[üu]ft"
    r"|\bnicht\s+verifiziert|\bне\s+уверен|\bне\s+провер|\bnon\s+sono\s+sicur|\bnon\s+verificat"
    r"|\bn[ãa]o\s+tenho\s+certeza|\bsem\s+verificar"
    r"|未(?:经|經)?(?:验证|驗證|证实|證實|检查|檢查|核实|核實)|没有验证|沒有驗證|没有检查|沒有檢查|没检查|沒檢查|不能保证|不能保證|未確認|確認していない|検証していない",
    re.IGNORECASE,
)
# A word (case folded) every alternative of _DISCLAIMER holds: text after the value holding none of them
# is not searched (the search over the next 200 characters was most of this module's cost)
_DISCLAIMER_WORDS = (
    "check", "verif", "vérifi", "confirm", "test", "valid", "caution", "salt", "trust", "rely", "guarantee",
    "commit", "wrong", "mistaken", "incorrect", "off", "sur", "sûr", "certain", "confident", "right",
    "scratch", "ignore", "guess", "quote", "hold", "unless", "placeholder", "dummy", "answer", "made",
    "make", "mess", "segur", "comprob", "revis", "contrô", "contro", "misconception", "fallacy", "pitfall", "trap",
    "breath", "haven", "didn", "have not", "did not", "flawed", "bogus", "false",
    "sicher", "prüf", "pruf", "уверен", "провер", "sicur", "certeza",
    "验证", "驗證", "检查", "檢查", "保证", "保證", "確認", "検証", "证实", "證實", "核实", "核實",
)  # fmt: skip
# what was just said or quoted judged wrong at once, in its sentence ('"the answer is 12", which is wrong',
# '«ответ 12», но это ошибка', '"la respuesta es 12", lo cual es incorrecto'): only right after the value,
# so a check further on ("substituting -3 gives 17 > 17, which is false") judges its own value
_JUDGED_AFTER = re.compile(
    r"[\s$}*)\]\"'”»“«」』]*[,.;:—–-]?\s*(?:(?:but|pero|mais|aber|но|ma)\s+|但)?(?:"
    r"(?:which|that|this)\s+(?:is|was)\s+(?:wrong|incorrect|false|mistaken|a\s+mistake|an\s+error)\b"
    r"|(?:lo\s+cual|lo\s+que|que)\s+es\s+(?:incorrecto|falso|un\s+error)|eso\s+(?:es|está)\s+(?:mal|incorrecto)"
    r"|ce\s+qui\s+est\s+(?:faux|incorrect|une\s+erreur)|c'est\s+(?:faux|une\s+erreur)"
    r"|was\s+(?:aber\s+)?falsch\s+ist|das\s+(?:ist|war)\s+(?:falsch|ein\s+Fehler)|das\s+stimmt\s+nicht"
    r"|это\s+(?:ошибка|неверно|неправильно)|这是错的|這是錯的|这是错误的|這是錯誤的|それは間違い)",
    re.IGNORECASE,
)
# closing marks and one punctuation mark: what stands after a value that says nothing about it
_QUIET_AFTER = re.compile(r"[\s$}*)\]]*(?:[.,;:!。！，、—–-][\s$}*)\]]*)?")
_DISCLAIMER_REACH = 200  # characters after the value a disclaimer of it is looked for in
# the answer taken back by the very next sentence ("12. Actually no, ...", "12. Hmm, that can't be right",
# "12。不对，..."), per language: only cues that deny (a "wait, let me check: 3 * 4 = 12" confirms)
_RETRACTED = re.compile(
    r"[\s$}*)\]]*(?:です|でした|だ|である)?(?:[.,!;:。！，、]\s*)?(?:\*\*)?\s*(?:"
    r"actually,?\s+no\b|(?:wait|hold\s+on|no),?\s+(?:no|wait)\b|oops\b|scratch\s+that\b"
    r"|(?:(?:wait|hmm+|no|oh|ah)[,.!]*\s+)?(?:that|this|it)\s*(?:can'?t|cannot|couldn'?t|could\s+not)\s+be\s+(?:right|correct)\b"
    r"|(?:(?:wait|hmm+|no|oh|ah)[,.!]*\s+)?(?:that|this|it)\s+(?:does\s*n[o']t|did\s*n[o']t)\s+(?:look|seem|sound)\s+right\b"
    r"|(?:(?:wait|hmm+|no|oh|ah)[,.!]*\s+)?(?:that|this)(?:'s|\s+is)\s*(?:n't|\s+not)\s+(?:right|correct)\b"
    r"|(?:(?:wait|hmm+|no|oh|ah)[,.!]*\s+)?I\s+(?:made|have\s+made|think\s+I\s+made)\s+(?:a|an)\s+(?:mistake|error)\b"
    r"|(?:(?:wait|hmm+|no|oh|ah)[,.!]*\s+)?I\s+mis(?:calculated|computed|read|counted)\b"
    r"|no,?\s+espera\b|espera,?\s+(?:no\b|eso\s+(?:est[áa]\s+mal|no\s+es\s+correcto))|me\s+equivoqu[ée]"
    r"|non,?\s+attend|attendez?,?\s+(?:non\b|c'est\s+faux)|je\s+me\s+suis\s+tromp[ée]"
    r"|nein,?\s+warte|moment,?\s+(?:nein\b|das\s+(?:stimmt\s+nicht|ist\s+falsch))|ich\s+habe\s+mich\s+(?:verrechnet|geirrt|vertan)"
    r"|нет,?\s+подожд|стоп,?\s+(?:нет\b|это\s+неверно)|я\s+ошиб"
    r"|不对|不對|错了|錯了|等等，?不|我算错了|我算錯了|いや、?違|違いました|間違えました|待って、?違)",
    re.IGNORECASE,
)
# the value said after it to come from a mistake or a supposition ("12 is what you'd get by forgetting
# to carry the one")
_WHAT_YOU_GET = re.compile(
    r"^[\s$}*)\]]*(?:is|was)\s+what\s+(?:you|one|we|I|someone|a\s+student|students|people)"
    r"(?:'d|\s+would|\s+might|\s+could)\s+(?:get|obtain|find|have|answer|write)\b"
    r"|^[\s$}*)\]]*would\s+(?:have\s+been|be)\s+(?:the\s+answer|right|correct)\s+(?:if|had|were|for|in)\b"
    r"|^[\s$}*)\]]*(?:is|was)\s+what\s+(?:you|one|we|I|someone|a\s+student|students|people)\s+gets?\s+"
    r"(?:by|if|when|from)\s+(?:\w+\s+)?(?:mistak|forget|ignor|misread|neglect|overlook|wrong|incorrect|confus)",
    re.IGNORECASE,
)
# doubt after the value in its clause, in the languages written without spaces ("12だと思うが、確信はない")
_CJK_DOUBT_AFTER = re.compile(
    r"確信(?:は|が)(?:ない|ありません|持てない)|自信(?:は|が)(?:ない|ありません)|不确定|不確定|没有把握|沒有把握|没把握|沒把握"
    r"|说不准|說不準|不敢肯定|わからない|分からない"
)
_REPEATS = 8  # the value this many times in its own answer block: a flood, not an answer

# The words without which a rule above cannot match (each alternative's \\b-bounded word): an ASCII
# clause holding none of them is not searched. Most clauses hold none, and the three searches, case
# folded at every position of the clause, were most of a correct verdict's cost of this module.
_WORD = re.compile(r"\w+")
# an ASCII clause's words are split as bytes, every byte \w does not match to a space: twice as fast
_NOT_WORD_TO_SPACE = bytes.maketrans(
    bytes(b for b in range(128) if not _WORD.fullmatch(chr(b))),
    b" " * sum(not _WORD.fullmatch(chr(b)) for b in range(128)),
)
_NOT_WORDS = frozenset({"not", "never", "isn", "wasn", "no", "nicht", "n", "ne", "non", "can", "cannot", "couldn"})
_DENIAL_WORDS = frozenset(
    {"case", "true", "correct", "right", "false", "untrue", "incorrect", "wrong", "mistake", "error", "falso"}
    | {"incorrecto", "cierto", "verdad", "faux", "vrai", "falsch", "wahr", "richtig", "vero", "verdade"}
    | {"rule", "ruled", "ruling", "exclude", "excluded", "excluding", "eliminate", "eliminated", "eliminating"}
    | {"discard", "discarded", "discarding", "reject", "rejected", "rejecting", "anything", "something"}
    | {"say", "claim", "claims", "conclude", "assert", "says", "except", "way", "mistaken", "naive", "tempting"}
    | {"trap"}
)
_HEDGE_WORDS = frozenset(
    {"might", "could", "may", "perhaps", "maybe", "possibly", "probably", "presumably", "vielleicht", "tal"}
    | {"forse", "talvez", "guess", "suppose", "sure", "certain", "confident", "unsure", "uncertain", "else"}
    | {"know", "likely", "plausible", "reasonable", "guessing", "podria", "podrian", "pourrait", "pourraient"}
    | {"potrebbe", "potrebbero", "poderia", "poderiam", "koennte", "koennten", "probablemente", "posiblemente"}
    | {"mejor", "probablement", "vraisemblablement", "wahrscheinlich", "vermutlich", "womoglich", "moglicherweise"}
    | {"moeglicherweise", "eventuell", "probabilmente", "magari", "provavelmente", "possivelmente", "duerfte"}
    | {"duerften", "hunch", "gut", "instinct", "que", "dass", "che"}  # "es posible que", "möglich, dass"...
    # the rarest word of each doubt phrase ("needs checking": "checking"; "I'd guess": "guess"), so that
    # common words ("would", "need", "exactly") do not open the searches on most clauses
    | {"tentative", "tentatively", "tbd", "tbc", "checking", "verification", "verifying", "confirmation"}
    | {"something", "roughly", "thereabouts", "ballpark", "arithmetic", "unless", "assuming", "tell", "hard"}
    | {"exact", "seguro", "segura", "confirmar", "verificar", "comprobar", "reserve", "garantie", "gewaehr"}
    | {"prufen", "sicher", "vorbehalt", "vorlaeufig", "confirmed", "verified", "checked", "determined", "hundred"}
    | {"glance", "sight", "naively", "superficially", "surface"}
)


_WOULD_WORDS = frozenset(
    {"would", "ve", "d", "seria", "serian", "habria", "daria", "serait", "seraient", "aurait", "donnerait"}
    | {"ware", "waren", "wurde", "wurden", "hatte", "hatten", "sarebbe", "sarebbero", "seriam"}
)
_SUPPOSE_WORDS = frozenset({"suppose", "assume", "assuming", "supposing", "supongamos", "suponiendo", "supposons"}) | {
    "admettons",
    "supponiamo",
    "suponhamos",
    "angenommen",
    "nehmen",
}
_CONDITION_WORDS = frozenset(
    {"if", "had", "were", "unless", "suppose", "supposing", "assuming", "otherwise", "case", "si", "wenn"}
    | {"falls", "se"}
)
_ATTRIBUTION_WORDS = frozenset(
    {"claim", "claims", "claimed", "says", "said", "states", "stated", "writes", "wrote", "thinks", "believes"}
    | {"suggests", "insists", "argues", "reports", "asserts", "according", "dice", "dicen", "dit", "sagt"}
    | {"behauptet", "s", "tempting", "told"}
)
# a generic speaker ("some would say", "many students would answer"): one word of each set
_SPEAKERS = frozenset({"some", "someone", "somebody", "many", "people", "students", "others", "one", "you"}) | {
    "anyone",
    "reader",
    "student",
    "person",
    "solver",
    "beginner",
    "novice",
}
_SAYING = frozenset({"say", "think", "answer", "claim", "conclude", "guess", "write", "expect", "assume"})


def _ascii_words(clause: str) -> frozenset[str] | None:
    """The clause's words, lower-cased, when it is ASCII (where lower-casing is what the rules'
    IGNORECASE does; a word starting ``kein`` is kept as ``no``); None otherwise."""
    if not clause.isascii():
        return None
    low = clause.lower()
    words = frozenset(low.encode("ascii").translate(_NOT_WORD_TO_SPACE).decode("ascii").split())
    return words | {"no"} if "kein" in low else words


def uncommitted(text: str, span: str) -> tuple[str, str] | None:
    """``(rule, reason)`` when the clause of ``text`` that names the answer ``span`` does not commit
    to it; None when it does (or the span is not found as written).

    Examples:
        >>> uncommitted("So the answer is not 12.", "12")
        ('negated', "the answer is said not to be '12'")
        >>> uncommitted("The answer might be 12.", "12")[0]
        'hedged'
        >>> uncommitted("It is not obvious; the answer is 12.", "12") is None
        True
    """
    value = span.strip()
    if not value or len(value) > 200:
        return None
    at = text.rfind(value)
    if at < 0:
        return None
    found = _judge(text, value, at)
    box = text.rfind("\\boxed{" + value + "}", 0, at)
    if box < 0:
        return found
    if found is not None and found[0] == "questioned":
        # a question after a box that gives the value ("\\boxed{24}. Is it a coincidence that the answer
        # is 24?") asks about an answer already given: the box's own statement is judged
        return _judge(text, value, box + len("\\boxed{"))
    # the value restated after its box ("\\boxed{12} (just a guess: 3 * 4 = 12)"): the box's own
    # statement must commit too
    return found or _judge(text, value, box + len("\\boxed{"))


def _judge(text: str, value: str, at: int) -> tuple[str, str] | None:
    """:func:`uncommitted` for the statement of ``value`` at ``text[at]``."""
    start = _clause_start(text, at)
    end_m = _CLAUSE_END.search(text, at + len(value))
    end = end_m.start() if end_m else len(text)
    before, after = text[start:at], text[at + len(value) : at + len(value) + 80]
    clause = text[start:end]
    words = _ascii_words(clause)  # None: not ASCII, every rule is searched
    # nothing but closing marks and a full stop after the value (most answers: "$\\boxed{12}$."): no
    # verdict, idiom or retraction after it can match, and their patterns are not tried
    quiet = _QUIET_AFTER.match(after)
    said_after = quiet is None or quiet.end() < len(after)
    if (words is None or not words.isdisjoint(_NOT_WORDS)) and _NOT_BEFORE.search(before):
        return "negated", f"the answer is said not to be {value[:60]!r}"
    if said_after and _NOT_AFTER.match(after):
        return "negated", f"the answer is said not to be {value[:60]!r}"
    denial = words is None or not words.isdisjoint(_DENIAL_WORDS) or ("not" in words and "answer" in words)
    if denial and (_denied(before) or _EXCLUDED_BEFORE.search(before)):
        return "negated", f"the statement that the answer is {value[:60]!r} is denied"
    if words is None and (_CJK_NOT_BEFORE.search(before) or (said_after and _CJK_NOT_AFTER.match(after))):
        return "negated", f"the answer is said not to be {value[:60]!r}"
    rest = text[at + len(value) : end]
    # "x may be any real number": a modal before "any" grants a range, it does not doubt a value
    permission = value[:6].lower().startswith(("any ", "all ", "every "))
    if (words is None or not words.isdisjoint(_HEDGE_WORDS)) and not permission and hedged(before, rest):
        return "hedged", f"{value[:60]!r} is offered without being committed to"
    if said_after and _IDIOM_AFTER.match(text, at + len(value), end):
        return "hedged", f"{value[:60]!r} is offered without being committed to"
    if words is None and (
        _about_the_value(_CJK_HEDGE, before) or _CJK_HEDGE_AFTER.match(after) or _CJK_DOUBT_AFTER.search(rest)
    ):
        return "hedged", f"{value[:60]!r} is offered without being committed to"
    asked = ("?" in after or "？" in after or words is None) and _QUESTION_AFTER.match(after)
    if (asked or (end_m is not None and text[end_m.start()] in "?？")) and not _WHY.search(clause):
        return "questioned", f"{value[:60]!r} is asked about, not given"
    if (words is None or not words.isdisjoint(_WOULD_WORDS) or _french_conditional(clause, words)) and _counterfactual(
        before, clause
    ):
        return "counterfactual", f"{value[:60]!r} is what the answer would be under a condition not given"
    if said_after and _WHAT_YOU_GET.match(after):
        return "counterfactual", f"{value[:60]!r} is what a mistake or a supposition gives, not the answer"
    if words is None and _CJK_COUNTERFACTUAL.search(clause[: at - start]):
        return "counterfactual", f"{value[:60]!r} is what the answer would be under a condition not given"
    if (words is None or not words.isdisjoint(_SUPPOSE_WORDS)) and _SUPPOSED.search(before):
        return "counterfactual", f"{value[:60]!r} is supposed, not concluded"
    if words is None and said_after and _SUPPOSED_AFTER.match(after):
        return "counterfactual", f"{value[:60]!r} is supposed, not concluded"
    low = clause.lower() if words is not None else ""
    if (words is None or any(h in low for h in _HYPOTHETICAL_HINTS)) and _HYPOTHETICAL.search(before):
        return "counterfactual", f"{value[:60]!r} is worked out in a scenario the model made up"
    if _conditional(clause, words) and _NOT_GIVEN.search(text, at + len(value), at + len(value) + _DISCLAIMER_REACH):
        return "counterfactual", f"{value[:60]!r} is worked out under a condition the problem does not give"
    if (
        words is None
        or not words.isdisjoint(_ATTRIBUTION_WORDS)
        or (not words.isdisjoint(_SPEAKERS) and not words.isdisjoint(_SAYING))
    ) and _attributed(before):
        return "attributed", f"{value[:60]!r} is someone else's claim, not the answer given"
    if _options(before):
        return "options", f"{value[:60]!r} is one of several values offered, not one answer"
    if _disclaimed(text[at + len(value) : at + len(value) + _DISCLAIMER_REACH]):
        return "disclaimed", f"{value[:60]!r} is followed by a disclaimer of it"
    if said_after and _JUDGED_AFTER.match(after):
        return "negated", f"{value[:60]!r} is judged wrong right after it is given"
    if said_after and _RETRACTED.match(text, at + len(value), at + len(value) + 120):
        return "retracted", f"{value[:60]!r} is taken back by the sentence that follows it"
    if len(value) <= 40 and _repeated(text, at, value):
        return "repeated", f"{value[:60]!r} is written over and over: not one answer"
    return None


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """``pattern``'s last match in ``text`` (matches come in order of their start), or None."""
    last = None
    for found in pattern.finditer(text):
        last = found
    return last


def hedged(before: str, rest: str) -> bool:
    """The value between ``before`` and ``rest`` (its clause's two sides) is offered without
    commitment: a modal or a word of doubt before it that is about it (:func:`_about_the_value`), or
    doubt after it in its clause ("15, but I'm not sure", "15, probably")."""
    return (
        _about_the_value(_HEDGE_BEFORE, before)
        or _about_the_value(_DOUBT, before)
        or bool(_DOUBT.search(rest) or _HEDGE_AFTER.match(rest))
    )


def _about_the_value(pattern: re.Pattern[str], before: str) -> bool:
    """``pattern``'s last match in ``before`` bears on the value after it: not when an earlier value and
    then a turn to a correction stand between ("my guess at first was 12, but it is 15"; "not sure,
    but 15" still hedges: there the doubt has no other value to be about)."""
    m = _last(pattern, before)
    if m is None:
        return False
    between = before[m.end() :]
    turn = _last(_CONTRAST, between)
    return turn is None or not _DIGIT.search(between[: turn.start()])


def _denied(before: str) -> bool:
    """The statement that names the value is denied earlier in its clause (:data:`_DENIED_BEFORE`):
    not when the denial is of an earlier value and a turn or a conclusion follows it ("it is not true
    that x = 3, so the answer is 15")."""
    m = _last(_DENIED_BEFORE, before)
    if m is None:
        return False
    between = before[m.end() :]
    turn = _last(_CONTRAST, between) or _last(_CONCLUSION, between)
    return turn is None or not _DIGIT.search(between[: turn.start()])


def _counterfactual(before: str, clause: str) -> bool:
    """The value stands in a conditional (a "would" before it in its clause, a condition anywhere in the
    clause) that no conclusion follows before the value ("if he eats c cookies he would get 20c
    calories, so he must eat 6" concludes: the 6 is given). A conclusion that opens the conditional
    ("Therefore, the number in 1987 would be 112,875 if it decreased linearly"; "Thus, if we were to
    choose a point, there would be a 1/2 probability") states the problem's own model, unless its
    condition is contrary to fact ("so if the price had doubled, it would be 12")."""
    m = _last(_WOULD, before)
    if m is None or not _CONDITION.search(clause):
        return False
    if _CONCLUSION.search(before[m.end() :]) or _MUST.search(before[m.end() :]):
        return False
    return not _OPENS_CONCLUSION.search(before, 0, m.start()) or _CONTRARY_TO_FACT.search(clause) is not None


def _french_conditional(clause: str, words: frozenset[str]) -> bool:
    """An ASCII word in French's conditional mood ("obtiendrait"): no word list holds every verb."""
    return "rai" in clause and any(len(w) > 6 and w.endswith(("rait", "raient")) for w in words)


def _conditional(clause: str, words: frozenset[str] | None) -> bool:
    """The clause states a condition ("if ...", "assuming ...", "如果...")."""
    if words is not None:
        return not words.isdisjoint(_CONDITION_WORDS) and _CONDITION.search(clause) is not None
    return _CONDITION.search(clause) is not None or _CJK_CONDITION.search(clause) is not None


def _options(before: str) -> bool:
    """The value is an item of a list of alternatives ("one of 13, 14, 15", "either 14 or 15", "14 or
    15"): not "among 3, 5 and 15, the largest is 15", where the list ends before the value."""
    if _OR_BEFORE.search(before[-12:]):
        return True
    m = _last(_OPTIONS_BEFORE, before)
    return m is not None and _LIST_SO_FAR.match(before[m.end() :]) is not None


def _disclaimed(after: str) -> bool:
    """The text just after the value disowns it (a later answer would have been the one read)."""
    if not after.strip():
        return False
    low = after.casefold()
    return any(w in low for w in _DISCLAIMER_WORDS) and _DISCLAIMER.search(after) is not None


def _attributed(before: str) -> bool:
    """The clause before the value reports someone else's claim (and not the model's own)."""
    if "'" in before and (p := _last(_POSSESSED, before)) is not None and not _CONCLUSION.search(before[p.end() :]):
        return True  # "the textbook's answer is 12"
    m = _last(_ATTRIBUTED, before)  # the last report
    if m is not None:
        if _NAMED_ACTOR.search(before, 0, m.start()):
            return False
        between = before[m.end() :]
        turn = _last(_CONTRAST, between)
        if turn is not None and _DIGIT.search(between[: turn.start()]):
            return False  # the report was of an earlier value, then corrected: "you might think 13, but it's 12"
        subject = before[max(0, m.start() - 30) : m.end()]
        # the model's own claim ("I think"), the problem's givens restated ("the problem states that
        # the sum is 30, so ..."), or a conclusion drawn after the report: all the model's answer
        return not (_FIRST_PERSON.search(subject) or _GIVENS.search(subject) or _CONCLUSION.search(before[m.end() :]))
    return not before.isascii() and _CJK_ATTRIBUTED.search(before) is not None


def _clause_start(text: str, at: int) -> int:
    """Where the clause holding ``text[at]`` starts: just after the last :data:`_CLAUSE_END` before
    ``at`` (0 if none), found from ``at`` backwards instead of scanning the text from its start
    (below a decimal point, the marks are looked for again)."""
    hard = max(text.rfind(";", 0, at), text.rfind("\n", 0, at))  # these always end a clause
    if not text.isascii():  # so do the CJK marks (a scan each: only where they can be)
        hard = max(hard, *(text.rfind(c, 0, at) for c in "。！？；"))
    lo = hard + 1
    j = max(text.rfind(".", lo, at), text.rfind("!", lo, at), text.rfind("?", lo, at))
    for _ in range(32):
        if j < 0:
            return lo
        # a full stop between digits is a decimal point (the pattern's lookaround; text ends at `at`)
        if (j == 0 or not text[j - 1].isdecimal()) and (j + 1 >= at or not text[j + 1].isdecimal()):
            return j + 1
        j = max(text.rfind(".", lo, j), text.rfind("!", lo, j), text.rfind("?", lo, j))
    # a long run of decimal points (hostile or a table of numbers): one pass of the pattern is cheaper
    return max((m.end() for m in _CLAUSE_END.finditer(text, hard + 1, at)), default=hard + 1)


_BLOCK_OPEN = re.compile(r"<answer\s*>|\\boxed\s*\{", re.IGNORECASE)


def _repeated(text: str, at: int, value: str) -> bool:
    """The answer block that holds the value (an answer tag, a box) is the value written at least
    :data:`_REPEATS` times and nothing else."""
    if text.count(value) < _REPEATS:  # the flood writes the value that many times: most texts stop here
        return False
    opens = [m.end() for m in _BLOCK_OPEN.finditer(text, max(0, at - 2_000_000), at + 1)]
    if not opens:
        return False
    block = text[opens[-1] : at + len(value)]
    tokens = [tok for tok in re.split(r"[\s,;]+", block) if tok]
    return len(tokens) >= _REPEATS and all(tok == value for tok in tokens)
