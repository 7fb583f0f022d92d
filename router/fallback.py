"""The degraded, deterministic route: used when no LLM is configured or the LLM keeps failing.

No model: the question's language comes from lingua, the articles' language from the seed's
rule (`router.material_language`), the period, order and language cues from the question reader
(`router.reader`), the intent from
the question's form (an imperative "find/show/list" -> search; a question -> ask; both, or a
question about a period, or "summarize the articles about X" -> combined), greetings, meta and
off-topic requests -> refused; an injected clause is dropped and the rest routed. The decision
goes through the same gateway as a model's, so it is validated and audited the same way. The
rules are tuned on the eval set's dev half only; the test half measures them (docs/router.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from infra.results import Language, LanguageFilter
from router.language import detect_language
from router.material_language import material_language
from router.reader import DateExpectation, QuestionCues, read_cues
from router.tools import ASK, SEARCH, SEARCH_AND_ASK


@dataclass(frozen=True)
class FallbackDecision:
    tool: str | None  # None: refused
    arguments: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    reading: QuestionReading | None = None  # what code read from the question (None: refused before reading)


def _r(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.UNICODE)


_INJECTION = _r(
    r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instructions?|rules?|prompt|guidelines)\b"
    r"|\bsystem\s+prompt\b|\bdeveloper\s+mode\b|\bjailbreak"
    r"|(?:игнорируй|проигнорируй|забудь|отмени)\w*.{0,40}(?:инструкц|правил|промпт)"
    r"|системн\w+\s+промпт"
    r"|\b(?:ignoriere|vergiss|missachte)\w*.{0,40}(?:anweisung|regeln|vorgaben|prompt)"
    r"|\b(?:hidden|unpublished|draft)\s+(?:articles?|posts?)"
    r"|(?:скрыт|неопубликованн|черновик)\w*\s+стат"
    r"|\b(?:versteckte|unveröffentlichte)\w*\s+artikel"
    # role-play and destructive commands, drafts
    r"|\byou\s+are\s+now\b|\bpretend\s+(?:you|to\s+be)\b|\b(?:admin|god|debug)\s+mode\b|\bno\s+restrictions\b"
    r"|\b(?:dump|delete|drop|wipe)\s+(?:the\s+|all\s+)?(?:database|articles|tables?|everything)\b"
    r"|\bты\s+теперь\b|представь,?\s+что\s+(?:ты|у\s+тебя)|режим\w*\s+администратор|нет\s+ограничений"
    r"|(?:удали|сотри|очисти)\w*\s+(?:все\s+)?(?:стат|баз)"
    r"|\bdu\s+bist\s+jetzt\b|\btu\s+so,?\s+als\b|\badmin-?modus\b|\bkeine\s+einschränkungen\b"
    r"|\b(?:lösche|entferne)\w*\s+(?:alle\s+)?(?:artikel|datenbank)"
    r"|\bdrafts\b|\bevery\s+draft\b|черновик\w*|\bentwürfe\w*"
)
# Questions about the assistant itself, not the articles.
_META = _r(
    r"^(?:what\s+can\s+you\s+do|who\s+(?:are|made|built)\s+you|are\s+you\s+(?:a\s+)?(?:bot|human|ai)"
    r"|what\s+are\s+you|how\s+do\s+you\s+work)\b"
    r"|^(?:что\s+ты\s+(?:умеешь|можешь|такое)|кто\s+тебя\s+(?:создал|сделал)|ты\s+(?:бот|человек))"
    r"|^(?:was\s+kannst\s+du|wer\s+hat\s+dich|bist\s+du\s+(?:ein\s+)?(?:bot|mensch|ki))"
)
_SMALL_TALK = _r(
    r"^(?:hi|hello|hey|thanks|thank you|good (?:morning|evening|afternoon)|how are you|who are you"
    r"|привет|здравствуй\w*|спасибо|добр\w+ (?:утро|день|вечер)|как дела|кто ты"
    r"|hallo|guten (?:morgen|tag|abend)|danke|wie geht'?s|moin|servus|wer bist du)"
    r"[\s!.,?)]*(?:[\w\s,!.']{0,12})[!.?]*$"
)
# Thanks and greetings with a short tail of their own ("Thanks, that was helpful"): still small talk
# when the tail asks for nothing (checked against the search and question cues).
_GREETING_START = _r(
    r"^(?:hi|hello|hey|thanks|thank you|good (?:morning|evening|afternoon|day)|привет|здравствуй\w*|спасибо"
    r"|добр\w+ (?:утро|день|вечер)|hallo|guten (?:morgen|tag|abend)|danke|moin|servus)\b[\s!.,]*(.{0,40})$"
)
# Where an injected instruction ends: the clause it is in is dropped, the rest is routed.
_CLAUSE_BREAK = _r(
    r"(?<=[.!?;])\s+|,\s+|\s+(?:and then|and also|а потом|и заодно|а также|und dann|und danach|und außerdem)\s+"
    r"|\s*</?\w+>\s*"
)
_OFF_TOPIC = _r(
    r"\b(?:weather|joke|poem|recipe|translate|stock price)\b|погод|анекдот|шутк|стих|рецепт|переведи"
    r"|\b(?:wetter|witz|gedicht|rezept|übersetze)\b"
    # bookings, trivia, arithmetic: nothing the articles answer
    r"|\b(?:hotels?|flights?|restaurants?|taxi|capital\s+of|how\s+(?:tall|high|far|old)\s+is)\b"
    r"|\b(?:hotel|flug|flüge|restaurant|hauptstadt|wie\s+(?:hoch|weit|alt)\s+ist)\b"
    r"|билет|гостиниц|отел[ьия]|ресторан|такси|столиц|сколько\s+будет|курс\s+(?:доллара|евро|валют)"
    r"|\b(?:exchange\s+rate|wechselkurs)\b|(?<![\w.-])\d{1,4}\s*[+*×]\s*\d{1,4}\s*(?:=|\?|$)"
)
_OLDEST = _r(r"\b(?:oldest|earliest)\b|стар\w+|ранн\w+|\b(?:älteste\w*|früheste\w*)")  # order words, not topic
_POLITE = (
    r"(?:(?:please|kindly|bitte|пожалуйста|будьте добры)[,\s]+|(?:could|can|would)\s+you\s+(?:please\s+|kindly\s+)?"
    r"|(?:könnten|können|kannst|könntest)\s+(?:sie|du)\s+(?:mir\s+)?(?:bitte\s+)?"
    r"|(?:не\s+могли\s+бы\s+вы|можешь|можете)\s+(?:мне\s+)?)?"
)
# A request for a list: an imperative search verb first (after politeness), or "articles about X".
_SEARCH_VERB = _r(
    r"^" + _POLITE + r"(?:find|show|list|search|serch|give me|get me|get|fetch|grab|pull up|look up|display"
    r"|найди|найти|покажи|покажите|показать|выведи|список|подбери|поищи|дай|подскажи\w*"
    r"|finde|zeige?|zeig|such\w*|liste|gib|nenne"
    # sorting a set is listing it; "I'm looking for …" asks for a list
    r"|sort|order|arrange|отсортируй|упорядочь|sortiere?|ordne"
    r"|i'?m\s+looking\s+for|i\s+am\s+looking\s+for|я\s+ищу|ich\s+suche)\b"
    # German puts the verb last: "Könnten Sie mir bitte Artikel über X zeigen?"
    r"|^(?:könnten|können|kannst|könntest|würden|würdest)\s+(?:sie|du)\b.*\b(?:zeigen|finden|suchen|auflisten"
    r"|nennen|geben|heraussuchen|raussuchen)\s*[?!.]*$"
)
# A question that asks for a list all the same ("What was published last month?", "Any posts on X?").
_LISTING_QUESTION = _r(
    r"^(?:what|which)\s+(?:was|were|got|has been|have been)\s+(?:published|posted|released|written)\b"
    r"|^(?:any|are there|is there)\s+(?:new\s+)?(?:articles|posts|news)\b"
    r"|^(?:что|какие\s+статьи)\s+(?:вышл\w*|опубликова\w*|выходил\w*|публиковал\w*)"
    r"|^есть\s+ли\s+(?:статьи|посты|новости|публикации)"
    r"|^(?:was|welche\s+artikel)\s+(?:wurde|wurden|ist|sind)\s+[^?.!]{0,60}?(?:veröffentlicht|erschienen)"
    r"|^gibt\s+es\s+(?:neue\s+)?(?:artikel|beiträge|meldungen)"
)
# "Summarize the articles about X", "Перескажи статьи про X": an answer over a found set.
_ASK_VERB = _r(
    r"^" + _POLITE + r"(?:explain|summari[sz]e|compare|describe|tell me|recap"
    r"|объясни|расскажи|сравни|опиши|перескажи|обобщи|резюмируй|кратко"
    r"|erkläre?|erklär|fasse?|vergleiche|beschreibe)\b"
)
_ARTICLES_PHRASE = _r(
    r"\b(?:articles|posts|news)\s+(?:about|on|from|in|regarding)\b"
    r"|\b(?:стат(?:ьи|ей|ьях|ью)|посты|постов|публикаци\w*|новост\w*)\s+(?:о|об|про|на|за|по)\b"
    r"|\b(?:artikel|beiträge|meldungen)\s+(?:über|zu|zum|zur|von|aus|auf|im|in)\b"
)
_SEARCH_CUE = _r(
    r"^" + _POLITE + r"(?:find|show|list|search|give me|get me|look up|display"
    r"|найди|найти|покажи|показать|выведи|список|подбери|поищи|дай"
    r"|finde|zeige?|such\w*|liste|gib|nenne)\b"
    r"|\b(?:articles|posts)\s+(?:about|on|from|in|regarding)\b"
    r"|\bстат(?:ьи|ей)\s+(?:о|об|про|на|за|по)\b"
    r"|\b(?:artikel|beiträge|meldungen)\s+(?:über|zu|zum|zur|von|aus|auf|im|in)\b"
)
_ASK_CLAUSE = _r(
    r"\b(?:and|then)\s+(?:explain|summari[sz]e|compare|tell|describe|say|answer|list what)\b"
    r"|\bи\s+(?:объясни|расскажи|сравни|опиши|перескажи|кратко|скажи|ответь|обобщи|резюмируй"
    r"|сделай\s+(?:краткий\s+)?(?:обзор|вывод|резюме)|(?:дай|напиши)\s+(?:краткое\s+)?резюме)"
    r"|\bund\s+(?:erkläre?|erklär|fasse|vergleiche|beschreibe|sag|nenne|beantworte)"
    # a retell verb whose object is the articles found: "перескажи их", "fass sie zusammen", "summarize them"
    r"|\b(?:summari[sz]e|recap|retell|explain|describe|compare)\s+(?:them|it|those|these)\b"
    r"|\b(?:and\s+)?sum\s+(?:them|it|those|these)\s+up\b|\bgive\s+me\s+a\s+(?:short\s+|brief\s+)?summary\b"
    r"|(?<!\w)(?:перескажи|обобщи|резюмируй|опиши|объясни|сравни|расскажи)\s+(?:мне\s+)?(?:их|это|эти|о\s+них)(?!\w)"
    r"|\b(?:fass|fasse)\b.*\bzusammen\b|\bzusammenfassen\b"
)
_ASK_CUE = _r(
    r"\?\s*$"
    r"|^(?:what|how|why|when|which|who|does|do|is|are|can|should|explain|summari[sz]e|compare|describe|tell me)\b"
    r"|^(?:что|как|почему|зачем|когда|какой|какая|какие|каким|кто|ли|объясни|расскажи|сравни|опиши"
    r"|скажите|подскажите,? (?:как|что|почему))"
    r"|^(?:was|wie|warum|wieso|weshalb|wozu|wann|welche\w*|wer|gibt es|erkläre?|erklär|beschreibe|vergleiche"
    r"|inwiefern|könnten sie mir (?:bitte )?erklären)\b"
)
_QUESTION_FORM = _r(
    r"^(?:what|how|why|when|which|who|does|do|did|is|are|can|should"
    r"|что|как|почему|зачем|когда|какой|какая|какие|каким|кто|скажите|подскажите"
    r"|was|wie|warum|wieso|weshalb|wozu|wann|welche\w*|wer|inwiefern)\b"
    r"|^\w+\s+ли\b"  # "поддерживает ли …": a Russian yes/no question
    # German yes/no questions start with the verb
    r"|^(?:ist|sind|gibt|hat|haben|kann|können|wird|werden|unterstützt|funktioniert|braucht|muss|darf|soll"
    r"|lohnt|bietet|erlaubt)\s+(?!du\s+mir|sie\s+mir)"
    r"|^(?:tell\s+me\s+(?:about|more)|erzähl\w*\s+(?:mir\s+)?(?:etwas\s+|mehr\s+|was\s+)?(?:über|von)"
    r"|расскажи\w*\s+(?:мне\s+)?(?:про|о|об))\b"
)
_STOPWORDS = frozenset(
    """
    find show me list search for articles article posts post news about on the a an all some please in from of
    any give get look up display written published latest recent newest oldest earliest first sorted by date
    with that mention mentioning related to regarding most
    найди найти покажи показать выведи список статьи статей статью статья про о об по на в за все мне
    пожалуйста новости новостей публикации публикаций самые новые старые последние свежие теме тему
    посвящённые посвященные дай подбери поищи которые где есть связанные с
    finde zeige zeig suche such liste gib nenne mir alle artikel beiträge meldungen news über zu zum zur von
    im in auf aus die der das den dem des bitte neueste älteste aktuelle aktuellste mit thema rund um und
    also then а потом заодно и danach dann außerdem could would can you kindly please будьте добры покажите
    could könnten können sie du zeig
    """.split()
)
_ASK_WORDS = frozenset(
    """
    explain summarize summarise compare describe tell recap объясни расскажи сравни опиши перескажи обобщи резюмируй
    кратко erkläre erklär fasse zusammen vergleiche beschreibe
    """.split()
)
_WORD = re.compile(r"[\w.+#-]+", re.U)


def _keywords(text: str, *, drop: frozenset[str] = frozenset()) -> str | None:
    words = [w.strip(".-") for w in _WORD.findall(text)]
    kept = [
        w for w in words
        if w and w.casefold() not in _STOPWORDS and w.casefold() not in drop and not _OLDEST.fullmatch(w)
    ]
    return " ".join(kept) or None


def _without_injection(text: str) -> str | None:
    """The question without the clauses that try to change the rules (None: nothing else left)."""
    if not _INJECTION.search(text):
        return text
    kept = [c for c in _CLAUSE_BREAK.split(text) if c and c.strip() and not _INJECTION.search(c)]
    rest = " ".join(kept).strip(" ,.;")
    if not rest or not (_SEARCH_VERB.search(rest) or _ARTICLES_PHRASE.search(rest) or _QUESTION_FORM.search(rest)):
        return None
    return rest


def _small_talk(text: str) -> bool:
    if _SMALL_TALK.match(text) and not _SEARCH_CUE.search(text):
        return True
    greeting = _GREETING_START.match(text)
    if greeting is None:
        return False
    tail = greeting.group(1)
    return not (_SEARCH_VERB.search(tail) or _ARTICLES_PHRASE.search(tail) or _ASK_CUE.search(tail)
                or _QUESTION_FORM.search(tail) or re.search(r"\b(?:stat|artik|articl|post)", tail, re.I))


def _strip_greeting(text: str) -> str:
    """ "Hi! Could you explain …", "спасибо, а теперь найди …": the request after the greeting."""
    match = re.match(
        r"^(?:hi|hello|hey|thanks|thank you|привет|здравствуй\w*|спасибо|hallo|guten tag|danke|moin|servus)\b[!.,\s]*"
        r"(?:(?:а\s+)?теперь\s+|(?:und\s+)?jetzt\s+|now\s+)?",
        text, re.IGNORECASE,
    )
    return text[match.end():] if match and match.end() < len(text) else text


@dataclass(frozen=True)
class QuestionReading:
    """What code reads from a question: the filters it names and the words left for the topic."""

    text: str  # the question as routed (a leading greeting dropped)
    rest: str  # without its language cues, its period (read or not) and its order words
    language: LanguageFilter | None  # the articles' language(s) by the seed's rule (None: all languages)
    answer: Language  # the answer's language: requested by the client or the user, else the question's
    answer_asked: Language | None  # the answer language the question itself asks for ("answer in English")
    dates: DateExpectation | None
    sort: str | None  # "oldest" when asked for, else None
    asks_for_answer: bool  # "… and explain", "answer in English": an answer is wanted, not only a list
    unread_period: tuple[str, ...] = ()  # period cue words the reader could not read (not in `rest`)

    @property
    def filters(self) -> dict[str, Any]:
        """The search filters in the tools' wire form (None: not named)."""
        dates = self.dates
        return {
            "language": self.language,
            "dateFrom": dates.date_from.isoformat() if dates and dates.date_from else None,
            "dateTo": dates.date_to.isoformat() if dates and dates.date_to else None,
            "sort": self.sort,
        }

    def keywords(self, *, drop_ask_words: bool = False) -> str | None:
        """The topic: what is left of the question without its filter and request words."""
        return _keywords(self.rest, drop=_ASK_WORDS if drop_ask_words else frozenset())


def read_question(
    question: str, today: date, *, answer_language: Language | None = None, client_language: Language | None = None
) -> QuestionReading:
    """The filters ``question`` names, read in code (no refusal rules: see `fallback_decision`)."""
    text = _strip_greeting(" ".join(question.split()))
    cues: QuestionCues = read_cues(text, today)
    written_in = detect_language(text)
    languages = cues.languages
    return QuestionReading(
        text=text, rest=cues.rest,
        language=material_language(languages, written_in=written_in, client=client_language),
        answer=answer_language or languages.answer or written_in,
        answer_asked=languages.answer,
        dates=cues.period.period,
        sort="oldest" if cues.order.sort == "oldest" else None,
        asks_for_answer=languages.answer is not None or _ASK_CLAUSE.search(cues.rest) is not None,
        unread_period=cues.period.unread,
    )


def fallback_decision(
    question: str, today: date, *, answer_language: Language | None = None, client_language: Language | None = None
) -> FallbackDecision:
    """The deterministic routing decision for ``question`` (arguments in the tools' wire form)."""
    text = " ".join(question.split())
    if not text:
        return FallbackDecision(None, reason="empty question")
    if _small_talk(text) or _META.search(text):
        return FallbackDecision(None, reason="a greeting or small talk, not a question about the articles")
    cleaned = _without_injection(text)
    if cleaned is None:
        return FallbackDecision(None, reason="the question tries to change the rules")
    # Off-topic tasks are the request gate's (router/gate.py: task words and a measured relevance).
    reading = read_question(cleaned, today, answer_language=answer_language, client_language=client_language)
    text, rest, dates, filters = reading.text, reading.rest, reading.dates, reading.filters

    def search(reason: str) -> FallbackDecision:
        return FallbackDecision(SEARCH, _present({"text": _keywords(rest), **filters}), reason, reading)

    def combined(search_text: str, reason: str) -> FallbackDecision:
        arguments = {"text": _keywords(search_text, drop=_ASK_WORDS), **filters, "question": text,
                     "answerLanguage": reading.answer}
        return FallbackDecision(SEARCH_AND_ASK, _present(arguments), reason, reading)

    def ask(reason: str) -> FallbackDecision:
        arguments = {"question": text, "language": reading.language, "answerLanguage": reading.answer}
        return FallbackDecision(ASK, _present(arguments), reason, reading)

    ask_clause = _ASK_CLAUSE.search(rest)
    if _SEARCH_VERB.search(rest):
        if ask_clause:
            return combined(rest[: ask_clause.start()], "a search followed by a request to answer")
        if reading.answer_asked is not None:  # a list needs no answer language: something is to be answered
            return combined(rest, "a search with an answer in a named language")
        return search("a request for a list of articles")
    if _LISTING_QUESTION.search(rest):
        return search("a question asking for a list of articles")
    if _ASK_VERB.search(rest) and (_ARTICLES_PHRASE.search(rest) or dates is not None or ask_clause):
        return combined(rest, "a request to answer over the articles found")
    if _QUESTION_FORM.search(rest) or _ASK_CUE.search(rest):
        if dates is not None:  # the answer is scoped to the period: search it first
            return combined(rest, "a question about a period of the articles")
        return ask("a question about the articles' content")
    if ask_clause:  # "Go through the posts … and tell me how …"
        return combined(rest[: ask_clause.start()], "a request for articles followed by a request to answer")
    return search("a request for a list of articles")


def _present(arguments: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in arguments.items() if v is not None}
