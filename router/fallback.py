"""The degraded, deterministic route: used when no LLM is configured or the LLM keeps failing.

No model: the question's language comes from lingua, dates from `router.dates` (parsed in
code), the intent from the question's form (imperative "find/show/list" -> search; a question
-> ask; both -> combined), greetings and rule-bending requests -> refused. The decision goes
through the same gateway as a model's, so it is validated and audited the same way. Its
accuracy on the shipped evaluation set is the floor a model has to beat (docs/router.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from infra.results import Language
from router.dates import find_date_expectation
from router.language import detect_language
from router.material_language import language_cues, material_language
from router.tools import ASK, SEARCH, SEARCH_AND_ASK


@dataclass(frozen=True)
class FallbackDecision:
    tool: str | None  # None: refused
    arguments: dict[str, Any] = field(default_factory=dict)
    reason: str = ""


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
)
_SMALL_TALK = _r(
    r"^(?:hi|hello|hey|thanks|thank you|good (?:morning|evening|afternoon)|how are you|who are you"
    r"|привет|здравствуй\w*|спасибо|добр\w+ (?:утро|день|вечер)|как дела|кто ты"
    r"|hallo|guten (?:morgen|tag|abend)|danke|wie geht'?s|moin|servus|wer bist du)"
    r"[\s!.,?)]*(?:[\w\s,!.']{0,12})[!.?]*$"
)
_OFF_TOPIC = _r(
    r"\b(?:weather|joke|poem|recipe|translate|stock price)\b|погод|анекдот|шутк|стих|рецепт|переведи"
    r"|\b(?:wetter|witz|gedicht|rezept|übersetze)\b"
)
_OLDEST = _r(r"\b(?:oldest|earliest)\b|стар\w+|ранн\w+|\b(?:älteste\w*|früheste\w*)")
_NEWEST = _r(r"\b(?:newest|latest|most recent)\b|нов\w+|свеж\w+|\b(?:neueste\w*|aktuellste\w*)")
_SEARCH_CUE = _r(
    r"^(?:please\s+|bitte\s+|пожалуйста,?\s+)?(?:find|show|list|search|give me|get me|look up|display"
    r"|найди|найти|покажи|показать|выведи|список|подбери|поищи|дай"
    r"|finde|zeige?|such\w*|liste|gib|nenne)\b"
    r"|\b(?:articles|posts)\s+(?:about|on|from|in|regarding)\b"
    r"|\bстат(?:ьи|ей)\s+(?:о|об|про|на|за|по)\b"
    r"|\b(?:artikel|beiträge|meldungen)\s+(?:über|zu|zum|zur|von|aus|auf|im|in)\b"
)
_ASK_CLAUSE = _r(
    r"\b(?:and|then)\s+(?:explain|summari[sz]e|compare|tell|describe|say|answer|list what)\b"
    r"|\bи\s+(?:объясни|расскажи|сравни|опиши|перескажи|кратко|скажи|ответь|обобщи|резюмируй)"
    r"|\bund\s+(?:erkläre?|erklär|fasse|vergleiche|beschreibe|sag|nenne|beantworte)"
)
_ASK_CUE = _r(
    r"\?\s*$"
    r"|^(?:what|how|why|when|which|who|does|do|is|are|can|should|explain|summari[sz]e|compare|describe|tell me)\b"
    r"|^(?:что|как|почему|зачем|когда|какой|какая|какие|каким|кто|ли|объясни|расскажи|сравни|опиши)"
    r"|^(?:was|wie|warum|wieso|wann|welche\w*|wer|gibt es|erkläre?|erklär|beschreibe|vergleiche)\b"
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
    """.split()
)
_WORD = re.compile(r"[\w.+#-]+", re.U)


def _keywords(text: str) -> str | None:
    words = [w.strip(".-") for w in _WORD.findall(text)]
    kept = [w for w in words if w and w.casefold() not in _STOPWORDS and not _OLDEST.fullmatch(w)]
    return " ".join(kept) or None


def fallback_decision(
    question: str, today: date, *, answer_language: Language | None = None, client_language: Language | None = None
) -> FallbackDecision:
    """The deterministic routing decision for ``question`` (arguments in the tools' wire form)."""
    text = " ".join(question.split())
    if not text:
        return FallbackDecision(None, reason="empty question")
    if _INJECTION.search(text):
        return FallbackDecision(None, reason="the question tries to change the rules")
    if _SMALL_TALK.match(text) and not _SEARCH_CUE.search(text):
        return FallbackDecision(None, reason="a greeting or small talk, not a question about the articles")
    if _OFF_TOPIC.search(text):
        return FallbackDecision(None, reason="not about the articles")

    cues = language_cues(text)
    written_in = detect_language(text)
    answer = answer_language or cues.answer or written_in
    language = material_language(cues, written_in=written_in, client=client_language)
    rest = cues.rest
    dates = find_date_expectation(rest, today)
    if dates is not None:
        rest = rest.replace(dates.phrase, " ")
    sort = "oldest" if _OLDEST.search(rest) and not _NEWEST.search(rest) else None

    search_cue = bool(_SEARCH_CUE.search(rest))
    ask_clause = _ASK_CLAUSE.search(rest)
    filters: dict[str, Any] = {
        "language": language,
        "dateFrom": dates.date_from.isoformat() if dates else None,
        "dateTo": dates.date_to.isoformat() if dates and dates.date_to else None,
        "sort": sort,
    }
    if search_cue and ask_clause:
        arguments = {"text": _keywords(rest[: ask_clause.start()]), **filters, "question": text,
                     "answerLanguage": answer}
        return FallbackDecision(SEARCH_AND_ASK, _present(arguments), "a search followed by a request to answer")
    if not search_cue and _ASK_CUE.search(rest):
        arguments = {"question": text, "language": language, "answerLanguage": answer}
        return FallbackDecision(ASK, _present(arguments), "a question about the articles' content")
    arguments = {"text": _keywords(rest), **filters}
    return FallbackDecision(SEARCH, _present(arguments), "a request for a list of articles")


def _present(arguments: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in arguments.items() if v is not None}
