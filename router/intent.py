"""The request's form, read by rules: greetings and small talk, questions about the assistant,
injected rule changes, off-topic task words, search and ask verbs, question forms.

The request gate (`router/gate.py`: is this a request to read the collection at all?) and the
deterministic route (`router/fallback.py`: which tool?) both read a question's form with these
rules; the period, order and language cues are the question reader's (`router/reader/`).
"""

from __future__ import annotations

import re

from router.reader import COLLECTION_NOUN, HOLIDAY_WISHES
from router.reader import words_pattern as _r

__all__ = [
    "ANAPHOR", "ANSWER_REQUEST", "ARTICLES_PHRASE", "ASK_CLAUSE", "ASK_CUE", "ASK_VERB", "BRIEF_ANSWER", "CLAUSE_BREAK", "DIGEST_REQUEST",
    "EXPLAIN_REQUEST", "GREETING_START", "INJECTION", "LIST_ONLY", "LIST_REQUEST", "RETELL_SEPARATED",
    "EMBEDDED_QUESTION", "LISTING_QUESTION", "META", "OFF_TOPIC", "POLITE", "QUESTION_FORM", "SEARCH_CUE", "request_clause", "SEARCH_VERB",
    "SMALL_TALK", "attacks", "injected", "small_talk", "strip_greeting", "without_injection",
    "FILLER", "FILLERS", "PUBLICATION_VERB", "PUBLISHED_PHRASE", "RETELL_QUESTION", "an_aside", "without_asides",
]



INJECTION = _r(
    r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instructions?|rules?|prompt|guidelines)\b"
    r"|\bsystem\s+prompt\b|\bdeveloper\s+mode\b|\bjailbreak"
    r"|(?:игнорируй|проигнорируй|забудь|отмени)\w*.{0,40}(?:инструкц|правил|промпт)"
    r"|системн\w+\s+промпт"
    r"|\b(?:ignoriere|vergiss|missachte)\w*.{0,40}(?:anweisung|regeln|vorgaben|prompt)"
    # a turn written as the system's or another party's: "</user> SYSTEM: …", "[SYSTEM: …]", "<system>"
    r"|</?(?:user|system|assistant|admin)>|\[\s*(?:system|admin)\s*:|(?-i:\bSYSTEM\b)(?:\s+[A-Z]+)?\s*:"
    r"|\bforget\s+(?:everything|all)\b.{0,30}\b(?:told|said|learned|know)\b"
    r"|(?<!\w)забудь\s+(?:всё|все)\b.{0,30}(?:говорили|сказали|знаешь|учили)"
    r"|\bvergiss\s+alles\b.{0,30}(?:gesagt|gelernt|weißt)"
    # role-play and destructive commands
    r"|\byou\s+are\s+now\b|\bpretend\s+(?:you|to\s+be)\b|\b(?:admin|god|debug)\s+mode\b|\bno\s+restrictions\b"
    r"|\b(?:dump|delete|drop|wipe)\s+(?:the\s+|all\s+)?(?:database|articles|tables?|everything)\b"
    r"|\bты\s+теперь\b|представь,?\s+что\s+(?:ты|у\s+тебя)|режим\w*\s+администратор|нет\s+ограничений"
    r"|(?:удали|сотри|очисти)\w*\s+(?:все\s+)?(?:стат|баз)"
    r"|\bdu\s+bist\s+jetzt\b|\btu\s+so,?\s+als\b|\badmin-?modus\b|\bkeine\s+einschränkungen\b"
    r"|\b(?:lösche|entferne)\w*\s+(?:alle\s+)?(?:artikel|datenbank)"
    # a new role for the assistant: "now" or "no longer" with "you are", in either order
    r"|\b(?:from\s+now\s+on|starting\s+now|now|henceforth)\b[\s,]+you\s+(?:are|will|must|shall|answer|act|respond)\b"
    r"|\byou(?:'re|\s+are)\s+(?:no\s+longer|not\s+an?\s+\w+\s+anymore)\b|\bact\s+as\s+(?:an?\s+)?(?:\w+\s+)?(?:ai|assistant"
    r"|model|bot|admin|developer|hacker|dan)\b|\broleplay\b|\bbehave\s+like\b"
    r"|(?<!\w)(?:теперь|отныне|с\s+этого\s+момента)[\s,]+ты\b|(?<!\w)ты\s+больше\s+не\b|веди\s+себя\s+как|притворись"
    r"|\b(?:ab\s+jetzt|von\s+nun\s+an|ab\s+sofort|jetzt)\s+bist\s+du\b|\bdu\s+bist\s+(?:ab\s+sofort|nicht\s+mehr|kein\w*\s+\w+"
    r"\s+mehr)\b|\bverhalte\s+dich\s+wie\b|\bspiel\w*\s+(?:die|eine)\s+rolle\b"
    r"|\bno\s+(?:rules|limits|filters)\b|\bkeine\s+(?:regeln|grenzen|filter)\b|(?<!\w)без\s+(?:правил|ограничений|фильтров)"
)
# Questions about the assistant itself, not the articles.
META = _r(
    r"^(?:what\s+can\s+you\s+do|who\s+(?:are|made|built)\s+you|are\s+you\s+(?:a\s+)?(?:bot|human|ai)"
    r"|what\s+are\s+you|how\s+do\s+you\s+work)\b"
    r"|^(?:что\s+ты\s+(?:умеешь|можешь|такое)|кто\s+тебя\s+(?:создал|сделал)|ты\s+(?:бот|человек))"
    r"|^(?:was\s+kannst\s+du|wer\s+hat\s+dich|bist\s+du\s+(?:ein\s+)?(?:bot|mensch|ki))"
)
SMALL_TALK = _r(
    r"^(?:hi|hello|hey|thanks|thank you|good (?:morning|evening|afternoon)|how are you|who are you"
    r"|привет|здравствуй\w*|спасибо|добр\w+ (?:утро|день|вечер)|как дела|кто ты"
    r"|hallo|guten (?:morgen|tag|abend)|danke|wie geht'?s|moin|servus|wer bist du)"
    r"[\s!.,?)]*(?:[\w\s,!.']{0,12})[!.?]*$"
)
# Thanks and greetings with a short tail of their own ("Thanks, that was helpful"): still small talk
# when the tail asks for nothing (checked against the search and question cues).
GREETING_START = _r(
    r"^(?:hi|hello|hey|thanks|thank you|good (?:morning|evening|afternoon|day)|привет|здравствуй\w*|спасибо"
    r"|добр\w+ (?:утро|день|вечер)|hallo|guten (?:morgen|tag|abend)|danke|moin|servus"
    # a holiday's wishes: "Merry Christmas!", "С Новым годом!", "Frohe Weihnachten", "Guten Rutsch"
    r"|" + HOLIDAY_WISHES + r")\b[\s!.,]*(.{0,60})$"
)
# Where an injected instruction ends: the clause it is in is dropped, the rest is routed.
CLAUSE_BREAK = _r(
    r"(?<=[.!?;:])\s+|,\s+|\s+(?:and then|and also|а потом|и заодно|а также|und dann|und danach|und außerdem)\s+"
    r"|\s*</?\w+>\s*"
    # "… and show me …": a conjunction before a request verb starts a clause of its own
    r"|\s+(?:and|und|и|а)\s+(?=(?:(?:please|bitte|пожалуйста)\s+)?(?:find|show|list|search|give|get|tell|explain"
    r"|zeig\w*|finde|such\w*|gib|liste|nenne|erklär\w*|найди|покажи|выведи|дай|поищи|расскажи|объясни)\b)"
)
OFF_TOPIC = _r(
    r"\b(?:weather|joke|poem|recipe|translate|stock price)\b|погод|анекдот|шутк|стих|рецепт|переведи"
    r"|\b(?:wetter|witz|gedicht|rezept|übersetze)\b"
    # bookings, trivia, arithmetic: nothing the articles answer
    r"|\b(?:hotels?|flights?|restaurants?|taxi|capital\s+of|how\s+(?:tall|high|far|old)\s+is)\b"
    r"|\b(?:hotel|flug|flüge|restaurant|hauptstadt|wie\s+(?:hoch|weit|alt)\s+ist)\b"
    r"|билет|гостиниц|отел[ьия]|ресторан|такси|столиц|сколько\s+будет|курс\s+(?:доллара|евро|валют)"
    r"|\b(?:exchange\s+rate|wechselkurs)\b|(?<![\w.-])\d{1,4}\s*[+*×]\s*\d{1,4}\s*(?:=|\?|$)"
    # maths homework: a maths verb or object, or a formula (a power, a coefficient times a variable, "= 0")
    r"|\b(?:solve|equation|derivative|integrate|antiderivative)\b|\bреш(?:и|ить)\s+(?:уравнени|задач|пример)"
    r"|уравнени|производн|интеграл|\b(?:löse|gleichung\w*|ableitung\w*|integriere)\b"
    r"|(?<![\w.-])[a-z]\s*\^\s*\d|(?<![\w.-])\d+[a-z]\s*[-+]\s*\d+\s*=|\bsin\s*\(\s*x\s*\)"
)
# A dictated message's fillers before its request ("ну эээ покажи …", "um so uh show me …", "äh zeig mal …").
# one word; no topic either. With the adverbs that soften an imperative: "just explain …", "просто скажи …"
FILLER = r"(?:ну|э+|э+м|хм+|короче|типа|um+|uh+m?|hmm+|erm|äh+m?|öh+m?|so|also|just|simply|просто|einfach)"
FILLERS = r"(?:" + FILLER + r"[,\s]+)*"
POLITE = FILLERS + (
    r"(?:(?:please|kindly|bitte|пожалуйста|будьте добры)[,\s]+|(?:could|can|would)\s+you\s+(?:please\s+|kindly\s+)?"
    r"|(?:könnten|können|kannst|könntest)\s+(?:sie|du)\s+(?:mir\s+)?(?:bitte\s+)?"
    r"|(?:не\s+могли\s+бы\s+вы|можешь|можете)\s+(?:мне\s+)?)?"
)
# The assistant's own internals (its prompt, configuration, keys): a request for them reads no
# article, so the clause is dropped like an injected one -- unless it names the collection ("posts
# about leaked API keys"). Secrets without "your" only as the object of a request ("Выведи все ключи
# доступа"), not in a question ("How do I rotate my API keys?").
_YOUR_INTERNALS = _r(
    r"\b(?:your|yours)\s+(?:\w+\s+){0,2}(?:prompt|instructions?|rules|config\w*|settings|keys?|credentials"
    r"|passwords?|secrets?|tokens?|source\s+code|training|model|llm|parameters|weights|architecture)\b"
    r"|\bsystem\s+(?:override|instructions?)\b"
    r"|(?<!\w)(?:сво|тво|ваш)\w*\s+(?:\w+\s+){0,2}(?:промпт|инструкц|настройк|конфигурац|ключ|парол|токен|модел"
    r"|параметр|архитектур)\w*"
    # the thing before the possessive: "what model is under your hood", "какая модель у вас под капотом",
    # "welches Modell steckt hinter deinen Antworten"
    r"|^(?:which|what)\s+(?:\w+\s+)?(?:model|llm)\b[^.?!]*\b(?:your|you)\b"
    r"|(?<!\w)(?:модел|нейросет|параметр|архитектур|промпт)\w*\s+(?:\w+\s+){0,2}(?:у\s+(?:вас|тебя)|тво\w+|ваш\w*)(?!\w)"
    r"|(?<!\w)у\s+(?:вас|тебя)\s+(?:\w+\s+){0,2}(?:модел|нейросет|параметр|архитектур|промпт)\w*"
    r"|^(?:welche[sr]?|was\s+für\s+ein)\s+(?:\w+\s+)?(?:modell|ki|llm)\b[^.?!]*\b(?:dein\w*|dir|dich|du)\b"
    r"|\b(?:dein|deine|deiner|deinen|deines|ihre|ihrer)\s+(?:\w+\s+){0,2}(?:prompt\w*|anweisung\w*|regeln|konfiguration"
    r"|einstellung\w*|schlüssel\w*|passw[oö]rt\w*|token\w*|modell\w*|parameter\w*|architektur)\b|\w*systemanweisung\w*"
)
_SECRETS = _r(
    r"\b(?:api|access|secret|private)[\s-]+keys?\b|\bcredentials\b|\bpasswords?\b|\benv(?:ironment)?\s+variables\b"
    r"|(?<!\w)(?:api[\s-]*)?ключ\w*\s+доступа|(?<!\w)парол\w*|(?<!\w)api-?ключ\w*|(?<!\w)токен\w*\s+доступа"
    r"|\bapi-schlüssel\w*|\bzugangsdaten\b|\bpassw[oö]rt\w*"
)
_REQUEST_FIRST = _r(
    r"^(?:[\w\s]{0,30}:\s*)?" + POLITE + r"(?:show|print|reveal|list|give|output|dump|display|tell|send|expose|leak"
    r"|покажи|выведи|дай|назови|скинь|пришли|раскрой|zeig\w*|gib|nenne|schick\w*|verrate|liste)\b"
)
_NAMES_COLLECTION = _r(
    r"\b(?:articles?|posts?|news|stories|announcements?|advisories)\b|(?<!\w)(?:стат\w+|пост\w*|новост\w*|публикац\w*)"
    r"|\w*(?:artikel|beitr[aä]g|meldung|nachricht)\w*"
)


# What code never shows (hidden, unpublished, drafts): asked for beside a request, the clause is dropped
# and the request runs ("Find posts about Bundler and include the drafts"); nothing changes what code shows.
_WITHHELD = _r(
    r"\b(?:hidden|unpublished|draft)\s+(?:articles?|posts?)|(?:скрыт|неопубликованн|черновик)\w*\s+стат"
    r"|\b(?:versteckte|unveröffentlichte)\w*\s+artikel|\bdrafts\b|\bevery\s+draft\b|черновик\w*|\bentwürfe\w*"
)


def attacks(clause: str) -> bool:
    """The clause tries to change the rules (a rules override, a new role, a destructive command) or
    asks for the assistant's internals: a message with such a clause is refused whole (issue 23)."""
    if INJECTION.search(clause) is not None:
        return True
    if _NAMES_COLLECTION.search(clause) is not None:
        return False
    return _YOUR_INTERNALS.search(clause) is not None or (
        _SECRETS.search(clause) is not None and _REQUEST_FIRST.search(clause) is not None)


def injected(clause: str) -> bool:
    """The clause attacks the rules or asks for what code withholds."""
    return attacks(clause) or _WITHHELD.search(clause) is not None
# A request for a list: an imperative search verb first (after politeness), or "articles about X".
SEARCH_VERB = _r(
    r"^" + POLITE + r"(?:find|show|list|search|serch|give me|get me|get|fetch|grab|pull up|look up|display"
    r"|dig\s+(?:up|out)|track\s+down|round\s+up|bring\s+up|pull\s+together|скинь|кинь|подкинь|раздобудь"
    r"|найди|найти|покажи|покажите|показать|выведи|список|подбери|поищи|дай"
    r"|подскажи\w*(?!,?\s+(?:пожалуйста,?\s+)?(?:как|что|почему|зачем|когда|где|чем|сколько|какой|какая|какие|ли)\b)"
    r"|finde|zeige?|zeig|such\w*|liste|gib|nenne"
    # sorting a set is listing it; "I'm looking for …" asks for a list
    r"|sort|order|arrange|отсортируй|упорядочь|sortiere?|ordne"
    # gathering the articles: "collect everything on X", "собери всё про X", "sammle alles zu X"
    r"|collect|gather|sammle|sammel|собери(?=\s+(?:мне\s+)?(?:всё|все|стать\w*|пост\w*|новост\w*|материал\w*)(?!\w))"
    r"|i'?m\s+looking\s+for|i\s+am\s+looking\s+for|я\s+ищу|ich\s+suche)\b"
    # taking the articles to read them: "take the oldest posts about …", "возьми самые ранние статьи …"
    r"|^" + POLITE + r"(?:take|возьми|возьмите|бери|берите|nimm|nehmt)\s+(?=(?:the|all|these|those|every|each"
    r"|самы\w*|все|эти|стат\w*|пост\w*|новост\w*|последн\w*|свеж\w*|стар\w*|ранн\w*|перв\w*"
    r"|die|den|das|alle|einen|eine|ersten|allerersten|neuesten|ältesten)\b)"
    # asking to be given them: "Can I get the year-end letters?", "Можно посмотреть статьи про …?"
    r"|^(?:can|could|may)\s+i\s+(?:please\s+)?(?:get|have|see)\s+(?:a\s+list\s+of\s+)?(?:the|all|any|some)\b"
    r"|^можно\s+(?:мне\s+)?(?:посмотреть|увидеть|получить)\b"
    # German puts the verb last: "Könnten Sie mir bitte Artikel über X zeigen?", "Kann ich die Beiträge … sehen?"
    r"|^(?:könnten|können|kannst|könntest|würden|würdest)\s+(?:sie|du)\b.*\b(?:zeigen|finden|suchen|auflisten"
    r"|nennen|geben|heraussuchen|raussuchen)\s*(?:[?!.]*$|,)"  # the main clause's verb last, or before its clause
    r"|^(?:kann|könnte|darf)\s+ich\b.*\b(?:sehen|haben|bekommen)\s*[?!.]*$"
)
# The verbs of publishing: they say when or whether, not what ("what was published/вышло/erschienen", "wurden
# … gemeldet", "kamen … raus"). Not "released" (what a release brought is a question about it) nor "писали"
# ("что писали про X?" asks what was written).
_PUBLICATION_WORDS = (
    r"publish\w*|posted|опубликова\w*|публиковал\w*|вышл[аои]?|вышел|выходил\w*|вышедш\w*"
    r"|veröffentlich\w*|erschien\w*|erschein\w*|publiziert|gemeldet|(?:raus|heraus)gekommen|(?:raus|heraus)gebracht"
    # putting it on the site: "uploaded", "выложили", "выкладывали", "запостили", "разместили", "gepostet",
    # "hochgeladen", "rausgehauen"
    r"|uploaded|выложил\w*|выкладывал\w*|запостил\w*|постил[аи]?|размести?л\w*|размещал\w*"
    r"|gepostet|hochgeladen|(?:raus|heraus)(?:gehauen|gegeben)"
)
# one word of one; "появилось" too ("что нового появилось в Ruby?" asks what, so no listing form)
PUBLICATION_VERB = re.compile(r"(?:" + _PUBLICATION_WORDS + r"|появил\w*|came|kam|kamen)", re.I | re.U)
# The same verbs in several words: "put (anything) out", "went up / live / online", "online gestellt",
# "ging … online" (a separable verb's particle last, like "Kam … heraus?"). Cut from a topic whole.
PUBLISHED_PHRASE = _r(
    r"\bput\s+(?:[\w-]+\s+){0,2}?(?:out|up|online)\b|\b(?:came|come|gone|went|goes|go)\s+(?:out|up|live|online)\b"
    r"|\bonline\s+(?:gestellt|gegangen|gebracht)\b|(?<=\s)(?:raus|heraus|online)(?=\s*[?!.]*$)"
)
# What "we" (the site's team, the asker among them) wrote or covered is what the site published: "what did
# we write about X?", "мы когда-нибудь писали про X?", "Haben wir je was über X gebracht?". Not their
# explaining ("how did we explain X?" asks how).
_WE_WROTE = (
    r"(?<!\w)(?:we|мы|wir)\s+(?:[\w.'-]+\s+){0,12}?(?:write|wrote|written|cover|covered|писали|написали|освещали"
    r"|geschrieben|gebracht|berichtet)(?!\w)"
)
_PUBLISHED = (
    r"(?:(?<!\w)(?:" + _PUBLICATION_WORDS + r")|" + PUBLISHED_PHRASE.pattern + r")"
)
# A question that asks for a list all the same ("What was published last month?", "Any posts on X?").
LISTING_QUESTION = _r(
    # whether the collection holds something: an existence question whose object is the articles or
    # "anything" ("Is there anything on OCSP from 2020?", "Есть ли в русских новостях что-нибудь про X?",
    # "есть чо про X?", "Gibt's Artikel über X seit März?"); not "Is there a way to …", "Есть ли смысл …"
    r"^(?:(?:а|и|ну|so|and|und|also)\s+)?(?:(?:есть|был[иао]?|будут|будет)(?:\s+ли)?|(?:is|are|was|were|will)\s+there"
    r"|(?:has|have)(?=\s+(?:anything|something|any)\b)|will(?=\s+(?:anything|any)\b)"
    r"|(?:gibt|gab)\s+es|(?:gibt|gab)'?s"
    # or whether the assistant has it: "Do you have anything on X?", "Habt ihr was zu X?", "Имеются ли …"
    r"|(?:do|does)\s+(?:you|we|the\s+\w+)\s+(?:have|hold|contain)|have\s+you\s+got|(?:you\s+)?got"
    r"|habt\s+ihr|hast\s+du|haben\s+sie|haben\s+wir|findet\s+sich|finden\s+sich"
    r"|имее?т?ся(?:\s+ли)?|имеются(?:\s+ли)?|найд[её]тся(?:\s+ли)?)\s+"
    r"(?:[\w-]+\s+){0,5}?(?:anything|something|any\s+(?:articles?|posts?|news)|что-нибудь|что-то|что-либо|чо|чего"
    r"|etwas|was|irgendwas|irgendwelche|стат\w+|пост\w*|новост\w+|публикаци\w+|материал\w*|artikel\w*"
    r"|beitr[aä]g\w*|meldung\w*|articles?|posts?|news)(?!\w)"
    r"|^(?:what|which)\s+(?:was|were|got|has been|have been)\s+(?:published|posted|released|written)\b"
    r"|^(?:any|are there|is there)\s+(?:[\w'.+#-]+\s+){0,3}?(?:articles|posts|news)\b"
    r"|^(?:что|какие\s+статьи)\s+(?:вышл\w*|опубликова\w*|выходил\w*|публиковал\w*)"
    r"|^есть\s+ли\s+(?:статьи|посты|новости|публикации)"
    r"|^(?:was|welche\s+artikel)\s+(?:wurde|wurden|ist|sind)\s+[^?.!]{0,60}?(?:veröffentlicht|erschienen)"
    r"|^gibt\s+es\s+(?:neue\s+)?(?:artikel|beiträge|meldungen)"
    # which of the collection's items exist: "Which posts cover …", "Welche Beiträge zu X gibt es?",
    # "Какие статьи есть про …"; "anything on X?", "Gibt es etwas zu X?", "Есть что-нибудь про X?"
    r"|^(?:which|what)\s+(?!(?:do|does|did)\b)(?:\w+\s+)?(?:articles|posts|news|entries|stories|announcements|docs"
    r"|write-?ups|blog\s+posts)\b"
    r"|^welche\s+(?:\w+\s+)?[\w-]*(?:artikel|beiträge|meldungen|nachrichten|news|posts|hinweise|mitteilungen"
    r"|ankündigungen)\b"  # a compound's head names them too: "Welche Sicherheitsmeldungen gab es …?"
    r"|^какие\s+(?:\w+\s+)?(?:статьи|посты|новости|публикации|материалы)\b"
    r"|^(?:any|anything|something)\s+(?:new\s+|recent\s+)?(?:on|about|regarding|re|concerning|from|by)\b"
    r"|^(?:gibt\s+es\s+)?(?:etwas|irgendwas|was)\s+(?:neues\s+)?(?:zu|über|zum|zur)\b"
    # what the collection holds on a thing: "Was gibt es (auf Englisch) zu X?", "what's there on X?", "what do
    # you have on X?"
    r"|^was\s+(?:gibt\s+es|gibt's|gibts)\s+(?:[^.?!]{0,40}?\s)?(?:zu|über|zum|zur)\s"
    r"|^what(?:'s|\s+is)\s+there\s+(?:on|about)\b|^what\s+(?:do\s+you\s+have|have\s+you\s+got)\s+(?:on|about)\b"
    r"|^(?:есть\s+(?:ли\s+)?)?(?:что-нибудь|что-то|что-либо)\s+(?:новое\s+)?(?:про|о|об|по)\b"
    # spoken: "есть что про X?" (anything), "что есть про X" (what there is; "чё есть" spelt out)
    r"|^(?:(?:а|ну)\s+)?(?:есть\s+что|что\s+есть)\s+(?:нового\s+|новенького\s+)?(?:про|о|об|по)\b"
    r"|\bany\s+(?:new\s+)?(?:articles|posts|news)\s*\?\s*$"
    # "has anything been written here about X?", "whatever was posted about X"
    r"|^(?:has|have|is|was)\s+(?:anything|something|much|there)\s+(?:\w+\s+)?(?:been\s+)?(?:written|posted|published)\b"
    # something to read on a topic is a list of the articles: "anything to read on X?", "есть чё почитать
    # про X?", "gibt's was zu lesen über X?"
    r"|\b(?:anything|something|stuff)\s+(?:good\s+|new\s+|interesting\s+)?to\s+read\b"
    r"|(?<!\w)(?:что|чё|чо|чего|что-нибудь|что-то)\s+(?:\w+\s+)?почитать(?!\w)"
    r"|\b(?:etwas|was|irgendwas)\s+(?:\w+\s+)?zu\s+lesen\b"
    # a question whose verb is one of publishing asks which articles came out: "Welche X wurden im Mai
    # gemeldet?", "Was ist zu X rausgekommen?", "What did X put out on Y?", "Какие X публиковали в 2024?"
    # (not "which versions came out": which versions a period brought is asked, as two writers labelled it)
    r"|^(?:what|which|was|welche\w*|что|какие|какой|какая|каких|ist|sind|wurde|wurden|kam|kamen|did|has|have)\s"
    r"(?![\w\s-]{0,30}?(?:version|release|релиз|верси))[^.?!]{0,80}?" + _PUBLISHED + r"(?!\w)"
    r"|^(?:(?:what|which|did|have|has|was|welche\w*|haben|habt|что|какие|о\s+чём|about\s+what|worüber)\s+"
    r"[^.?!]{0,40}?)?" + _WE_WROTE +
    # whether new items of a kind appeared: "Gab es neue X-Versionen?", "Were there any new X releases?",
    # "Были ли новые релизы X?"; and which items of a kind there were: "Welche Sicherheitshinweise gab es?"
    r"|^(?:gab|gibt)\s+es\s+[^.?!]{0,60}?(?<!\w)neue[nsr]?\s|^(?:were|are|was|is)\s+there\s+(?:any\s+)?new\s"
    r"|^(?:был[иао]?|есть|вышл[иао]|выходил[иао]?)\s+ли\s+(?:[\w-]+\s+){0,3}?нов\w+\s"
    # where a thing is written: "Wo steht was zu X?", "where can I read about X?", "где почитать про X?"
    r"|^wo\s+(?:steht|finde\s+ich|kann\s+ich\s+\w+\s+lesen)\b|^where\s+(?:can|do)\s+i\s+(?:read|find)\b"
    r"|^где\s+(?:почитать|прочитать|найти|написано)(?!\w)"
    # whether something came out, later in the message: "X — позапрошлой весной что-то было?"
    r"|(?<!\w)(?:что-нибудь|что-то|что-либо)\s+(?:было|выходило|появлялось|публиковали)(?!\w)"
    # everything on a thing: "Alles zu X seit 2020?", "Всё про X", "everything on X"
    r"|^(?:alles|всё|все|everything)\s+(?:über|zu|zum|zur|про|о|об|по|on|about)(?!\w)"
)


def _producing(verbs: str, objects: str) -> re.Pattern[str]:
    """A request to produce ``objects`` of the articles: a verb first (after politeness, maybe a
    comma'd "please"), an optional "me", up to two more words ("a short"), then the object."""
    return _r(
        r"^" + POLITE + r"(?:" + verbs + r")(?:,?\s+(?:please|пожалуйста|bitte),)?"
        r"\s+(?:me\s+|us\s+|мне\s+|нам\s+|mir\s+|uns\s+)?(?:[\w-]+\s+){0,2}?(?:" + objects + r")(?!\w)"
    )


# "Write me a short summary of …", "Составь обзор статей про …", "Gib mir eine Zusammenfassung der
# …": a verb of producing whose object is a digest (summary, overview, recap) asks for an answer
# over the articles — not a change to the collection, not a task outside it, not search words.
_PRODUCE_VERBS = (
    r"write|compose|make|prepare|put\s+together|give|draft|create|produce|do|get"
    r"|напиши|составь|сделай|дай|подготовь|набросай|сформулируй|собери"
    r"|schreib\w*|erstell\w*|mach\w*|gib|verfass\w*|formulier\w*"
)
DIGEST_REQUEST = _producing(
    _PRODUCE_VERBS,
    r"summary|summaries|overview|recap|digest|synopsis|rundown|roundup|round-up"
    r"|сводк\w*|обзор\w*|резюме|выжимк\w*|пересказ\w*|содержани\w*|конспект\w*"
    r"|zusammenfassung\w*|überblick\w*|übersicht\w*|resümee",
)
# "Напиши мне коротко, что нового в Ruby 4.0", "write me a short paragraph explaining why …", "Составь
# чек-лист: что проверить, прежде чем …": a verb of producing whose object is a question clause asks
# for the answer to that question; the text's shape (a paragraph, a checklist) is neither a topic
# nor a change to the collection. The clause is a question word's (or "explaining"/"объясняющий") run.
ANSWER_REQUEST = _r(
    r"^" + POLITE + r"(?:" + _PRODUCE_VERBS + r")(?!\w)[^.?!]{0,80}?(?:[,:—–]\s*|\s)"
    r"(?=(?:what|why|how|which|when|explaining|что|почему|зачем|как|какие|какой|когда|чем|объясняющ\w*"
    r"|was|warum|wieso|weshalb|wie|welche\w*|wann|worum)(?!\w))"
)
# "help me understand what ARI is", "Помоги разобраться, как устроена …", "Hilf mir zu verstehen, was …",
# "Translate into plain English what CVE-… means", "Übersetz mir ins Verständliche, was …", "erzähl mir was
# über …": a request to explain a thing in other words, whatever verb carries it, is an answer.
EXPLAIN_REQUEST = _r(
    r"^" + POLITE + r"(?:"
    r"help\s+(?:me|us)\s+(?:to\s+)?(?:understand|figure\s+out|make\s+sense\s+of|get\s+my\s+head\s+around)"
    r"|walk\s+(?:me|us)\s+through"
    r"|помоги\w*\s+(?:мне\s+|нам\s+)?(?:разобраться|понять|въехать)"
    r"|hilf\s+(?:mir|uns)\s+(?:\w+\s+){0,2}?(?:zu\s+)?verstehen"
    r"|(?:translate|explain|put)\s+(?:\w+\s+){0,3}?(?:into|in)\s+(?:plain|simple|human|layman'?s?|everyday)\b"
    r"|übersetze?\s+(?:\w+\s+){0,3}?(?:ins\s+verständliche|in\s+(?:einfache|verständliche|normale)\w*\s+\w+)"
    r"|переведи(?:те)?\s+(?:\w+\s+){0,3}?на\s+(?:человеческий|простой|понятный|нормальный|русский\s+человеческий)"
    r"|erzähl\w*\s+(?:mir|uns)\s+(?:\w+\s+){0,2}?(?:über|von|zu|zum|zur)"
    r"|tell\s+(?:me|us)\s+(?:something\s+|a\s+bit\s+|a\s+little\s+|more\s+)?about"
    r"|расскажи\w*\s+(?:мне\s+|нам\s+)?(?:что-нибудь\s+|что-то\s+|немного\s+)?(?:про|о|об|об\s+этом)"
    r")(?!\w)"
)
# A word asking for the answer's form, anywhere in the request: "… прошлой зимой про Let's Encrypt?
# кратенько", "Worum ging es im Herbst? Kurzer Überblick bitte", "the Ruby posts of May, in a nutshell":
# a digest of what is found is wanted, not only the list ("just the list" names none of these).
BRIEF_ANSWER = _r(
    r"\b(?:briefly|in\s+short|in\s+a\s+nutshell|tl;?\s?dr|summary|overview|recap|rundown|digest|gist)\b"
    r"|(?<!\w)(?:пару|несколько)\s+слов(?!\w)|\ba\s+few\s+words\b|\bein\s+paar\s+worte?\b"
    r"|(?<!\w)в\s+(?:двух|трёх|трех|нескольких|паре)\s+(?:словах|предложениях|строчках)(?!\w)|\b(?:kurz\s+)?zusammengefasst\b"
    r"|(?<!\w)без\s+воды(?!\w)|\bno\s+fluff\b|\bohne\s+umschweife\b"
    r"|(?<!\w)(?:кратко|кратенько|вкратце|коротко|обзор\w*|сводк\w*|выжимк\w*|резюме|суть)(?!\w)"
    r"|\b(?:überblick\w*|zusammenfassung\w*|kurzgefasst|in\s+kürze|kurz\s+gesagt|das\s+wichtigste)\b"
    # a digest's content: the main topics, the key points ("what were the main topics in Q1?")
    r"|\b(?:main|key|major|top)\s+(?:topics|themes|points|takeaways)\b|\b(?:highlights|takeaways)\b"
    r"|(?<!\w)(?:главн|основн|ключев)\w*\s+(?:темы|тем|тема|моменты|мысли)(?!\w)"
    r"|\b(?:wichtigst\w*|zentral\w*)\s+(?:themen|punkte|aussagen)\b|\b(?:hauptthem\w*|kernaussag\w*|kernpunkt\w*)"
)
# "… just the list", "только список", "nur die Liste, bitte": the list is all that is wanted, whatever form
# the rest of the message has.
LIST_ONLY = _r(
    r"\b(?:just|only|simply)\s+(?:the|a)\s+(?:list|titles|links)"
    r"(?:\s+(?:is|would\s+be|will\s+do)(?:\s+(?:fine|enough|ok|okay|great))?)?\b"  # "Just the list is fine."
    r"|\b(?:a|the)\s+list\s+(?:is\s+)?(?:enough|is\s+fine)\b"
    r"|\b(?:as|in)\s+a\s+list\b"
    r"|(?<!\w)(?:только|просто|лишь)\s+(?:сам\w*\s+)?(?:список|ссылки|заголовки)(?!\w)|(?<!\w)списка\s+хватит(?!\w)"
    r"|(?<!\w)(?:просто\s+|только\s+)?списком(?!\w)"
    r"|\b(?:nur|einfach|bloß)\s+(?:die|eine)\s+(?:liste|titel|links)\b|\beine\s+liste\s+reicht\b|\bals\s+liste\b"
)
# "Составь список статей про …", "Make me a list of the posts on …": a list of the articles is a search.
LIST_REQUEST = _producing(
    r"write|compose|make|prepare|put\s+together|draft|create|compile|produce|get"
    r"|напиши|составь|сделай|подготовь|собери|сформируй"
    r"|schreib\w*|erstell\w*|mach\w*|stell\w*",
    r"list|selection|список|перечень|подборк\w*|liste|auswahl|zusammenstellung",
)
# "Summarize the articles about X", "Перескажи статьи про X": an answer over a found set.
ASK_VERB = _r(
    r"^" + POLITE + r"(?:explain|summari[sz]e|sum\s+up|compare|describe|tell me|recap|retell|paraphrase|recount|answer"
    r"|объясни|расскажи|сравни|опиши|перескажи|обобщи|резюмируй|кратко|ответь"
    r"|erkläre?|erklär|fasse?|vergleiche?|beschreibe|schildere|beantworte)\b"
)
# A reading verb whose object is a question ("Перескажи, о чём пишут статьи про X", "Fass zusammen, was die
# Beiträge über X sagen", "Summarize what the posts say about X"): the answer to that question is asked, the
# articles named inside it are where it is read, not a set to find first.
RETELL_QUESTION = _r(
    r"^" + POLITE + r"(?:explain|summari[sz]e|sum\s+up|recap|retell|describe|answer|объясни|расскажи|опиши|перескажи"
    r"|обобщи|ответь|erkläre?|erklär|fasse?|beschreibe|schildere|beantworte)"
    r"(?:\s+(?:me|us|мне|нам|mir|uns|kurz|briefly|кратко|коротко|zusammen|in\s+\w+|auf\s+\w+|по-\w+))*\s*,?\s*"
    r"(?:what|how|why|which|что|как|почему|какие|о\s+ч[её]м|was|wie|warum|welche\w*|worüber)(?!\w)"
)
# German retelling verbs with their particle at the clause's end: "Gib … wieder", "Erzähl mir … nach, was …".
RETELL_SEPARATED = _r(  # a version's dot ("Ruby 1.8") ends no clause
    r"^" + POLITE + r"(?:gib|erzähle?)\b(?:[^.?!]|(?<=\d)\.(?=\d))*?\s(?:wieder|nach)(?=\s*(?:[,.!?]|$))"
)
ARTICLES_PHRASE = _r(
    r"\b(?:articles?|posts?|news|entry|entries)\s+(?:about|on|from|in|regarding)\b"
    r"|\b(?:стат(?:ья|ьи|ей|ьях|ью|ье)|пост(?:ы|ов|а|е)?|публикаци\w*|новост\w*)\s+(?:о|об|про|на|за|по)\b"
    r"|\b(?:artikel\w*|beitr[aä]g\w*|meldung\w*)\s+(?:über|zu|zum|zur|von|aus|auf|im|in)\b"
)
SEARCH_CUE = _r(
    r"^" + POLITE + r"(?:find|show|list|search|give me|get me|look up|display"
    r"|найди|найти|покажи|показать|выведи|список|подбери|поищи|дай"
    r"|finde|zeige?|such\w*|liste|gib|nenne)\b"
    r"|\b(?:articles|posts)\s+(?:about|on|from|in|regarding)\b"
    r"|\bстат(?:ьи|ей)\s+(?:о|об|про|на|за|по)\b"
    r"|\b(?:artikel|beiträge|meldungen)\s+(?:über|zu|zum|zur|von|aus|auf|im|in)\b"
)
ASK_CLAUSE = _r(
    r"\b(?:and|then)\s+(?:explain|summari[sz]e|sum\s+up|compare|tell|describe|say|answer|list what)\b"
    # a later sentence that asks for the answer: "…? Erklär kurz", "… in 2025? Explain each briefly."
    r"|(?<=[.?!])\s+(?:(?:please|bitte|пожалуйста)[,\s]+)?(?:explain|summari[sz]e|compare|describe|tell\s+me"
    r"|объясни|расскажи|сравни|опиши|перескажи|обобщи|erkläre?|erklär'?s?|fasse?|vergleiche?|beschreibe)\b"
    r"|\bи\s+(?:объясни|расскажи|сравни|опиши|перескажи|кратко|скажи|ответь|обобщи|резюмируй"
    r"|сделай\s+(?:краткий\s+)?(?:обзор|вывод|резюме)|(?:дай|напиши)\s+(?:краткое\s+)?резюме)"
    r"|\bund\s+(?:erkläre?|erklär|erzähl\w*|fasse|vergleiche?|beschreibe?|sag|nenne|beantworte?)"
    # a retell verb whose object is the articles found: "перескажи их", "fass sie zusammen", "summarize them"
    r"|\b(?:summari[sz]e|recap|retell|explain|describe|compare)\s+(?:them|it|those|these)\b"
    r"|\b(?:and\s+)?sum\s+(?:them|it|those|these)\s+up\b|\bgive\s+me\s+a\s+(?:short\s+|brief\s+)?summary\b"
    r"|(?<!\w)(?:перескажи|обобщи|резюмируй|опиши|объясни|сравни|расскажи)\s+(?:мне\s+)?(?:их|это|эти|о\s+них)(?!\w)"
    r"|\b(?:fass|fasse)\b.*\bzusammen\b|\bzusammenfassen\b"
    # an answer asked for by its noun beside the list: "… plus a short explanation of …", "и краткое резюме"
    r"|\b(?:and|plus|along\s+with|as\s+well\s+as)\s+(?:a\s+|an\s+|the\s+|some\s+)?(?:short\s+|brief\s+|quick\s+)?"
    r"(?:explanation|summary|overview|recap|rundown)(?=\s+(?:of|on|about|for|what|how|why)\b|\s*[,.:;!?]|\s*$)"
    r"|(?<!\w)(?:и|плюс|а\s+также)\s+(?:кратк\w+\s+|коротк\w+\s+|небольш\w+\s+)?(?:объяснени\w*|резюме|обзор\w*"
    r"|пояснени\w*)(?!\w)"
    r"|\b(?:und|plus|sowie)\s+(?:eine[nm]?\s+|die\s+)?(?:kurze[nm]?\s+)?(?:erklärung|zusammenfassung|überblick)\b"
)
ASK_CUE = _r(
    r"\?\s*$"
    r"|^(?:what|how|why|when|which|who|does|do|is|are|can|should|explain|summari[sz]e|compare|describe|tell me)\b"
    r"|^(?:что|как|почему|зачем|когда|какой|какая|какие|каким|кто|ли|объясни|расскажи|сравни|опиши"
    r"|скажите|подскажите,? (?:как|что|почему))"
    r"|^(?:was|wie|warum|wieso|weshalb|wozu|wann|welche\w*|wer|gibt es|erkläre?|erklär|erzähl\w*|beschreibe|vergleiche?"
    r"|inwiefern|könnten sie mir (?:bitte )?erklären)\b"
)
QUESTION_FORM = _r(
    # after a spoken opener: "а зачем …", "and why …", "und wie …", "so what …"
    r"^(?:(?:а|и|ну|so|and|but|und|aber|na)\s+)?(?:"
    r"(?:what|how|why|when|which|who|does|do|did|is|are|can|should"
    r"|whats|hows|whos|wheres|whens|whys"  # typed without the apostrophe
    r"|что|как|почему|зачем|когда|какой|какая|какие|каким|кто|скажите|подскажите|чем"
    r"|was|wie|warum|wieso|weshalb|wozu|wann|welche\w*|wer|inwiefern)\b"
    r"|\w+\s+ли\b"  # "поддерживает ли …": a Russian yes/no question
    # a question word after its preposition: "О чём пишут …?", "В чём разница …?", "Worüber berichten …?"
    r"|(?:о|об|про|в|на|с|за|для|из-за)\s+(?:ч[её]м|что|чего|кого|ком)\b"
    r"|(?:worüber|wovon|worum|womit|wofür|woran|wodurch|weswegen)\b"
    # German yes/no questions start with the verb
    r"|(?:ist|sind|gibt|gab|hat|hatte|hatten|haben|kann|können|wird|werden|wurde|wurden|war|waren|unterstützt"
    r"|funktioniert|braucht|muss|darf|soll"
    r"|lohnt|bietet|erlaubt)\s+(?!du\s+mir|sie\s+mir)"
    r"|(?:tell\s+me\s+(?:about|more)|erzähl\w*\s+(?:mir\s+)?(?:etwas\s+|mehr\s+|was\s+)?(?:über|von)"
    r"|расскажи\w*\s+(?:мне\s+)?(?:про|о|об))\b"
    r")"
)


# A question reported or wished for: a verb of asking, wondering or wanting to know, then the question
# ("I want to know how X works", "Mein Kollege fragt, wie X funktioniert", "коллега спрашивает, почему …").
# A question about which articles exist ("… which posts cover X") is the list's (LISTING_QUESTION).
EMBEDDED_QUESTION = _r(
    r"(?:\b(?:asks?|asked|asking|wonder(?:s|ed|ing)?|(?:want|wants|wanted|need|needs|would\s+like|'d\s+like)\s+to"
    r"\s+(?:know|understand|learn)|curious|(?:don't|do\s+not|doesn't)\s+(?:understand|get|know))"
    r"|(?<!\w)(?:спрашива\w*|спросил\w*|интересу\w*|интересно|хо(?:чу|чет|тим|тят|тел\w*)\s+(?:бы\s+)?(?:знать|узнать|понять)"
    r"|не\s+понима\w*|не\s+знаю|понять\s+бы)"
    r"|\b(?:fragt|fragte|fragen|frage\s+mich|fragen\s+uns|wüsste\s+gern|(?:möchte|möchten|will|wollen|würde\s+gern)"
    r"\s+(?:gern\s+)?(?:wissen|verstehen)|verstehe\s+nicht|interessiert\s+(?:mich|uns)))"
    r"[,:\s]+(?:\w+\s+){0,2}?"
    r"(?:how|why|what|whether|if|when|where|who|как|почему|зачем|что|чем|когда|где|кто|ли|wie|warum|wieso|weshalb"
    r"|was|ob|wann|wo|wer)\b(?!\s+(?:\w+\s+)?(?:articles?|posts?|news|стат\w+|пост\w*|artikel\w*|beitr[aä]g\w*))"
)

# Where a later clause starts: the request after a conversational opening ("So I've been meaning to
# catch up, could you dig up …", "Слушай, мне коллега сказал про X, можешь найти …").
_CLAUSE_START = re.compile(r"[.!?;:,—–]\s+|\s-\s+")  # a spaced hyphen is typed for a dash
# A connective that opens the later clause ("…, so can you list …", "…, а можешь найти …").
_CONNECTIVE = _r(r"^(?:so|and|then|but|а|и|но|так\s+что|und|dann|aber|also)[,\s]+")
# A later clause that points back at an earlier one for its topic ("что об этом писали", "about it").
ANAPHOR = _r(r"(?<!\w)(?:этом|это|этого|этой|этому|этим|этих|эту|этот|нём|нем|ней|него|нему|ним|них|его|её|ее|их"
             r"|them|it|its|their|that|this|those|these|das|dazu|darüber|davon|dem|ihn|ihm|dessen|deren)(?!\w)")


def request_clause(text: str) -> str | None:
    """The text from the first later clause that carries a request's form, when the message does not
    open with one (None: it does, or no clause does)."""
    if SEARCH_VERB.search(text) or LISTING_QUESTION.search(text) or ASK_VERB.search(text) \
            or QUESTION_FORM.search(text):
        return None
    for boundary in _CLAUSE_START.finditer(text):
        clause = _CONNECTIVE.sub("", text[boundary.end():])
        if SEARCH_VERB.search(clause) or LISTING_QUESTION.search(clause) or ASK_VERB.search(clause):
            return clause
        # A question's form opens a later sentence, not a clause after a comma ("…, how bad is it" reads
        # as often as a relative clause as a question), after a sentence that asks nothing itself: "my cert
        # chain broke on old androids. whats going on with that".
        if boundary.group()[0] in ".!?" and "?" not in text[: boundary.end()] and QUESTION_FORM.search(clause):
            return clause
    return None



# ---- the asker's asides after the request ----
# A sentence after the request, or a purpose clause ("…, чтобы я мог …", "…, so I can …", "…, damit ich …"),
# that speaks of the asker and names no thing is context: "What came out in May? I was on leave." Its words
# are no topic, and its form no request. A sentence with a question, a request's form or the answer's shape
# ("a short overview is enough") is kept, as is one that names a thing: "Anything new? We run Bundler 2.5."
_FIRST_PERSON = _r(r"(?<![\w'])(?:i|i'm|i've|i'd|i'll|me|my|we|we're|we've|we'd|our|us|я|мне|меня|мной|мы|нам|нас|нами"
                   r"|мо[йяеи]\w*|наш\w*|ich|mir|mich|wir|uns|unser\w*|mein\w*)(?![\w'])")
_GERMAN_ASKER = _r(r"(?<!\w)(?:ich|mir|mich|wir|uns|unser\w*|mein\w*)(?!\w)")
_SENTENCE_AFTER = re.compile(r"(?<=[.!?])\s+(?=\S)")
_PURPOSE = _r(r",?\s+(?:чтобы|so\s+(?:that\s+)?(?=(?:i|we)\b)|damit|um\s+(?=[^,.?!]*\bzu\b))")
_ANSWER_SHAPE = _r(r"\b(?:list|summary|overview|explanation|liste|übersicht|überblick|zusammenfassung|erklärung)\b"
                   r"|(?<!\w)(?:список|списком|сводк\w*|обзор\w*|резюме|пересказ\w*|объяснени\w*)(?!\w)")


def _names_a_thing(text: str) -> bool:
    """A word with a digit or a capital inside ("2.5", "OCSP", "RubyGems"), or, outside German, a capitalised
    word after the first ("Bundler"): German capitalises every noun, so there only the first two tell."""
    words = re.findall(r"[\w.'+#-]+", text)
    if any(re.search(r"\d", w) or re.search(r"\w[A-ZА-ЯЁ]", w) for w in words):
        return True
    return not _GERMAN_ASKER.search(text) and any(w[:1].isupper() for w in words[1:])


def _asks(text: str) -> bool:
    """Some clause of ``text`` asks: a question mark, or a request's or a question's form at a clause's start
    ("у нас старый nginx. как включить …", "Mein Teamleiter fragt, warum …")."""
    clauses = [c.strip() for c in re.split(r"[.!?;:,—–]\s+", text) if c.strip()]
    return "?" in text or EMBEDDED_QUESTION.search(text) is not None or any(
        p.search(clause) for clause in clauses for p in (SEARCH_VERB, ASK_VERB, QUESTION_FORM, LISTING_QUESTION,
                                                          ASK_CLAUSE, BRIEF_ANSWER, ARTICLES_PHRASE, SEARCH_CUE, ASK_CUE))


def an_aside(text: str) -> bool:
    """``text`` speaks of the asker, names no thing and asks nothing (see above)."""
    return bool(_FIRST_PERSON.search(text)) and not _names_a_thing(text) and not _ANSWER_SHAPE.search(text) \
        and not COLLECTION_NOUN.search(text) and not _asks(text)


def without_asides(text: str) -> str:
    """``text`` without the asker's asides after a first sentence that asks (see above)."""
    first, *later = _SENTENCE_AFTER.split(text)
    # "Long time no see. I need the posts on …": after a first sentence that asks nothing, the request is later
    if _asks(first):
        later = [sentence for sentence in later if not an_aside(sentence)]
    out: list[str] = []
    kept = [first, *later]
    for sentence in kept:
        purpose = _PURPOSE.search(sentence)
        out.append(sentence[: purpose.start()].rstrip() + sentence[-1:] * (sentence[-1:] in ".!?")
                   if purpose is not None and an_aside(sentence[purpose.end():]) else sentence)
    return " ".join(out)


def without_injection(text: str) -> str | None:
    """The question without the clauses that ask for what code withholds (None: a clause attacks the
    rules, or nothing else is left). A request riding with an attack is refused with it: the message
    was written to subvert the assistant (issue 23; the r12 writer labelled every such message a
    refusal, docs/router.md "Round 11")."""
    clauses = [c for c in CLAUSE_BREAK.split(text) if c]
    if attacks(text) or any(attacks(c) for c in clauses):
        return None
    if not injected(text) and not any(injected(c) for c in clauses):
        return text
    kept = [c for c in clauses if c.strip() and not injected(c)]
    rest = " ".join(kept).strip(" ,.;")
    if not rest or not (SEARCH_VERB.search(rest) or ARTICLES_PHRASE.search(rest) or QUESTION_FORM.search(rest)):
        return None
    if not SEARCH_VERB.sub("", rest, count=1).strip(" ,.;:!?"):
        return None  # "Подскажите, какая модель у вас под капотом?": only the request verb is left
    return rest


def small_talk(text: str) -> bool:
    if SMALL_TALK.match(text) and not SEARCH_CUE.search(text):
        return True
    greeting = GREETING_START.match(text)
    if greeting is None:
        return False
    tail = greeting.group(1)
    return not (SEARCH_VERB.search(tail) or ARTICLES_PHRASE.search(tail) or ASK_CUE.search(tail)
                or QUESTION_FORM.search(tail) or re.search(r"\b(?:stat|artik|articl|post)", tail, re.I))


def strip_greeting(text: str) -> str:
    """ "Hi! Could you explain …", "спасибо, а теперь найди …": the request after the greeting."""
    match = re.match(
        r"^(?:hi|hello|hey|thanks|thank you|привет|здравствуй\w*|спасибо|hallo|guten tag|danke|moin|servus)\b[!.,\s]*"
        r"(?:(?:а\s+)?теперь\s+|(?:und\s+)?jetzt\s+|now\s+)?",
        text, re.IGNORECASE,
    )
    return text[match.end():] if match and match.end() < len(text) else text
