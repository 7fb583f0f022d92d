"""Filter-only follow-ups, read in code (issue 28): "только на немецком", "ältere zuerst",
"and from 2024?", "page 3", "show 50 per page", "ещё 20", "switch to russian".

The languages, the period and the order are read by the question reader (`router.reader`, the
same grammar the router uses), the page and the page size by the follow-up's own grammar
(`router.followup_paging`), after words typed one edit off are read as the words meant
(`router.followup_spelling`, over the reader's vocabulary and this grammar's words). Read first:
filter removals (`router.followup_removal`: "without the date limit", "Sprache ist egal"), moves
by pages (`router.followup_paging.read_page_move`: "two pages further") and changes stated against
the previous filters (`router.followup_previous`: "the year before", "nicht nur 2025"). A follow-up
is filter-only when something was read and nothing else is left: the words that remain are
follow-up fillers (connectives, the previous result's pronouns, verbs of showing, switching and
limiting, collection nouns, discourse words) or the router's topic stop words. Anything else (a
topic, "summarize them", a period cue the grammar cannot read, a page size it cannot read) is for
the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from router.followup_paging import PAGE_WORDS, STEP_WORDS, read_page_move, read_paging
from router.followup_previous import read_against_previous
from router.followup_removal import cut_removals
from router.followup_spelling import Speller
from router.question_reading import keywords
from router.reader import ORDER_WORDS, QuestionCues, read_cues
from router.reader import words_pattern as _r

# "more", "mehr bitte", "ещё страницу": with nothing but fillers left and no other change, the next page.
_MORE_WORDS = ("more", "mehr", "ещё", "еще", "больше")
_MORE = _r(r"(?<!\w)(?:" + "|".join(_MORE_WORDS) + r")(?!\w)")
# "more on that", "mehr über …", "ещё про …": more of a subject, not the next page.
_MORE_ABOUT = _r(r"\b(?:more|mehr)\s+(?:on|about|of|from|info\w*|details?|über|zu|von|dazu|darüber)\b"
                 r"|(?<!\w)(?:ещ[её]|больше)\s+(?:о|об|про|по|подробн\w*|информац\w*)(?!\w)|\btell\s+me\s+more\b")
# "reverse the order", "umgekehrt", "наоборот": the other order than the previous one.
_REVERSED = _r(r"\b(?:reverse\w*|flip\w*|swap\w*|invert\w*|umgekehrt\w*|umdrehen|dreh\w*|andersrum|наоборот"
               r"|обратн\w*|переверни)\b")
# "older ones first", "newer articles on top", "die älteren Artikel zuerst": the order reader reads
# the comparative beside its place word, so the collection noun between them is dropped.
_ORDER_NOUN = _r(r"(?<=\w)\s+(?:ones|articles|posts|results|stories|entries|items|artikel|beiträge|ergebnisse)"
                 r"(?=\s+(?:first|on\s+top|at\s+the\s+top|zuerst|oben|vorne)\b)")
# A word that asks for an answer: a language it governs is the answer's, never the articles'.
_ANSWER_WORD = _r(r"\b(?:answer\w*|reply|respond|write|summari[sz]\w*|explain|antwort\w*|beantwort\w*|schreib\w*"
                  r"|fass\w*|zusammen\w*|erklär\w*)\b|(?<!\w)(?:ответ\w*|напиши|пиши|перескажи|объясни)(?!\w)")
# "DE only", "in EN", "RU pls": a language's code in capitals (lower-case "de" is a word in many languages).
_LANGUAGE_NAMES = {"DE": "German", "EN": "English", "RU": "Russian"}
_LANGUAGE_CODE = re.compile(r"(?<![\w-])(?:DE|EN|RU)(?![\w-])")
_JOINERS = re.compile(r"(?<!\S)[+&/,;:.!?]+(?!\S)")  # "2023 + German", "russian & oldest first"
# "on top", "по дате", "at the top": what an order says besides its direction.
_ORDER_PLACES = _r(r"\b(?:on|at)\s+(?:the\s+)?top\b|\bby\s+date\b|\bnach\s+datum\b|(?<!\w)по\s+дате(?!\w)")
# What a filter-only follow-up says besides its filters: connectives, the previous result's
# pronouns, verbs of showing, switching, sorting and limiting, collection nouns and results,
# wishes and thanks, discourse words of assent and politeness and their short forms. Literal
# words (a typo may be read as one, `router.followup_spelling`) and stems (never a typo's target).
_FILLER_WORDS = (
    "and", "or", "but", "only", "just", "now", "then", "ok", "okay", "also", "instead", "same", "the", "those",
    "these", "them", "what", "how", "about", "limit", "restrict", "narrow", "sort", "order", "put", "could", "can",
    "you", "please", "show", "me", "see", "let", "lets", "to", "that", "it", "this", "with", "like", "here", "give",
    "а", "и", "но", "или", "только", "лишь", "же", "то", "та", "тот", "те", "самое", "самые", "можно", "ли", "теперь",
    "тогда", "давай", "ещё", "еще", "также", "тоже", "их", "эти", "этих", "это", "покажи", "покажите", "выведи",
    "ограничь", "отсортируй", "сортируй", "упорядочь", "что", "дай", "дайте", "с",
    "und", "oder", "aber", "nur", "noch", "bitte", "jetzt", "dann", "mir", "sie", "diese", "davon", "auch",
    "dasselbe", "gleiche", "es", "das", "die", "der", "den", "dem", "gut", "mit", "gib",
    "i", "want", "would", "need", "again", "rather", "go", "back", "open", "any", "there", "were", "was",
    "хочу", "нужно", "надо", "снова", "опять", "лучше", "вместо", "перейди", "открой", "назад", "спасибо", "ну",
    "вот", "были", "было", "есть", "möchte", "will", "mal", "doch", "denn", "wieder", "nochmal", "lieber",
    "stattdessen", "öffne", "danke", "gab", "war", "waren", "gibt", "ordnung", "reihenfolge", "порядок", "порядке",
    "more", "mehr", "больше", "umdrehen", "наоборот", "переверни", "reply", "respond", "write", "напиши", "пиши",
    "ок", "окей", "ладно", "хорошо", "пожалуйста", "пжлст", "пжл", "пж", "плиз", "давайте", "well", "so", "alright",
    "fine", "great", "cool", "sure", "yes", "yeah", "is", "ist", "are", "sind", "all", "alles", "alle", "everything",
    "всё", "все", "nach", "by", "по", "pls", "plz", "thx", "na", "schön", "prima", "super", "ja", "klar", "да",
    "ага", "угу", "hmm", "hm",
    # switching and going back: "switch to Russian", "переключи на немецкий", "вернись на первую страницу"
    "switch", "change", "make", "set", "use", "переключи", "переключись", "смени", "поменяй", "сделай",
    "wechsle", "wechsel", "stell", "stelle", "umstellen", "ändere", "mach", "вернись", "вернуться", "верни",
    "обратно", "return", "jump", "springe", "spring", "zurück", "top", "сверху", "наверху", "oben", "vorne",
    "fewer", "less", "weniger", "меньше", "load", "both", "beide", "beides", "оба", "обе",
    "one", "ones", "result", "results", "thank", "thanks", "version", "versions", "translation", "translations",
    "gern", "gerne", "page", "pages", "seite", "seiten",
    # the articles as an answer's sources: "use German sources", "nur deutsche Quellen"
    "source", "sources", "quelle", "quellen", "источники", "источников", "nimm", "verwende", "используй",
    "have", "has", "do", "does", "too", "stuff", "anything", "такие", "таких", "такое", "со",
    # where an order starts: "start with the oldest", "mit den ältesten anfangen", "начни со старых"
    "start", "begin", "anfangen", "beginne", "beginn", "начни", "начните",
    # verbs of moving through pages and of widening or narrowing a filter: "jump two pages ahead",
    # "перелистни на две страницы вперёд", "widen it to everything since 2023", "расширь до 2023"
    "skip", "move", "turn", "widen", "expand", "extend", "broaden", "shrink",
    "листай", "листни", "перелистни", "пролистай", "расширь", "расширьте", "сузь", "сузьте",
    "blättere", "blätter", "erweitere", "erweitern", "weite", "eingrenzen", "swap", "invert", "andersrum",
    # hesitation and hedges: "um, next page I guess", "äh, Seite 2", "эм, следующую"
    "um", "uh", "erm", "guess", "maybe", "perhaps", "äh", "ähm", "vielleicht", "эм", "ээ", "наверное",
    "könntest", "könnten", "würdest", "würden", "erst",
)
_FILLER_STEMS = (
    r"стат\w*", r"результат\w*", r"zeig\w*", r"sortier\w*", r"beschränk\w*",
    r"ergebnis\w*", r"artikel\w*", r"beitr[äa]g\w*", r"верси\w*",
    r"geh\w*", r"version\w*", r"reverse\w*", r"flip\w*", r"umgekehrt\w*", r"dreh\w*", r"обратн\w*",
    r"answer\w*", r"antwort\w*", r"beantwort\w*", r"schreib\w*", r"ответ\w*",
    r"страниц\w*",  # a page word beside "more"; alone it reads nothing
)
_FILLERS = _r(r"^(?:" + "|".join((*_FILLER_WORDS, *_FILLER_STEMS)) + r")$")
_SPELLER = Speller(
    {**dict.fromkeys(PAGE_WORDS, "page"), **STEP_WORDS, **dict.fromkeys(_MORE_WORDS, "more")},
    frozenset(_FILLER_WORDS),
    known=lambda fold: bool(_FILLERS.match(fold)),
)


# Fillers that name things ("version 10" is a version, "10 pages" no page size alone).
_NOUN_FILLERS = _r(r"^(?:versions?|version\w*|верси\w*|translations?|ones?|results?|результат\w*|ergebnis\w*"
                   r"|стат\w*|artikel\w*|beitr[äa]g\w*|pages?|seiten?|страниц\w*)$")


def _filler(word: str) -> bool:
    """A word that changes nothing by itself (an order word the reader read stays in the text)."""
    return bool(_FILLERS.match(word)) or word.casefold() in ORDER_WORDS


def _discourse(word: str) -> bool:
    """A filler that names nothing: what may stand beside a number alone ("ok 10", "15 please")."""
    return _filler(word) and not _NOUN_FILLERS.match(word)


@dataclass(frozen=True)
class FilterChange:
    """The previous arguments with the follow-up's change, and what changed (for `adjustments`)."""

    arguments: dict[str, Any]
    notes: tuple[str, ...]


def read_filter_change(tool: str | None, previous: dict[str, Any], text: str, today: date) -> FilterChange | None:
    """The filter-only change ``text`` makes to the previous turn's arguments (None: not filter-only)."""
    if tool is None:
        return None
    # removals read before and after spelling: "doesn't" is no typo, "langauge" is
    text, removed = cut_removals(_LANGUAGE_CODE.sub(lambda m: _LANGUAGE_NAMES[m.group(0)], text))
    text, respelled = cut_removals(_SPELLER.spelled(text))
    removed |= respelled
    text, moved = read_page_move(_ORDER_NOUN.sub("", text), previous)
    against = read_against_previous(text, previous, today, _discourse)
    cues = read_cues(against.text, today, counts_and_exclusions=False)
    periods = [p for p in (cues.period.period, against.period or None, "period" in removed or None) if p]
    if cues.period.unread or against.unread or len(periods) > 1:
        return None  # a period cue the grammar cannot read, or two periods: the model reads them
    rest, paging = read_paging(_ORDER_PLACES.sub(" ", cues.rest), previous, _discourse)
    if moved and "page" in paging:
        return None  # "page 3, two pages further": two pages, for the model
    paging.update(moved)
    if paging.pop("unread", False) or _MORE_ABOUT.search(text):
        return None  # "more per page", "more on that": not a change the grammar reads
    if any(not _filler(word) for word in (keywords(_JOINERS.sub(" ", rest)) or "").split()):
        return None
    changes = {**_language_change(cues, "language" in removed), **_period_change(cues, today), **against.period,
               **paging}
    if "period" in removed:
        changes.update(dateFrom=None, dateTo=None)
    if cues.order.sort is not None:
        changes["sort"] = cues.order.sort
    elif _REVERSED.search(cues.rest) and "sort" in previous:
        changes["sort"] = "newest" if previous.get("sort") == "oldest" else "oldest"
    if cues.languages.answer is not None and "answerLanguage" in previous:
        changes["answerLanguage"] = cues.languages.answer
    elif cues.languages.answer is not None and "language" not in changes and not _ANSWER_WORD.search(text):
        changes["language"] = cues.languages.answer  # "same in Russian, please" after a search: its articles
    elif cues.languages.answer is not None:
        return None  # "на русском и на немецком": a second language read as an answer's, for the model
    if not changes and _MORE.search(text) and "page" in previous:
        changes["page"] = (previous.get("page") or 1) + 1  # "show more": the next page
    allowed = set(previous)
    if not changes or not set(changes) <= allowed:
        return None  # nothing read, or a filter this tool has not (a page of an answer)
    arguments = dict(previous)
    if "page" in allowed and "page" not in changes:
        changes["page"] = 1  # other filters: a new result, from its first page
    notes = tuple(
        f"follow-up: {name} {_shown(value)} (was {_shown(previous.get(name))})"
        for name, value in changes.items() if previous.get(name) != value
    )
    arguments.update(changes)
    return FilterChange(arguments, notes) if notes else None


def _language_change(cues: QuestionCues, no_filter: bool) -> dict[str, Any]:
    languages = cues.languages
    if languages.all_languages or no_filter and not languages.several:
        return {"language": None}
    if len(languages.several) >= 2:
        return {"language": sorted(languages.several)}
    if languages.named is not None:
        return {"language": languages.named}
    return {}


def _period_change(cues: QuestionCues, today: date) -> dict[str, Any]:
    period = cues.period.period
    if period is None:
        return {}
    date_to = period.date_to
    if period.date_from is not None and (date_to is None or date_to > today):
        date_to = today  # a period running to the present ends today (the search clamps a later end)
    return {"dateFrom": _iso(period.date_from), "dateTo": _iso(date_to)}


def _iso(value: date | None) -> str | None:
    return value.isoformat() if value is not None else None


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    return ",".join(value) if isinstance(value, list) else str(value)
