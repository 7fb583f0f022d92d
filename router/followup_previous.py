"""Follow-up changes read against the previous turn's filters (issue 28): a period moved by a
count of calendar units ("the year before", "a month later", "за год до этого", "годом раньше",
"ein Jahr früher", "das Jahr davor") and the previous filter restated as what is no longer wanted
("seit 2023, nicht nur 2025", "not just German", "не только 2025").

The question reader (`router.reader`) reads a period against today; these phrases name one only
against the previous period, so they are read here, where that period is known. A move needs a
previous period with both bounds (the year before *what* is the model's question otherwise); a
whole calendar unit stays one ("the month before" November is all of October). A restatement is
cut only when the reader reads in it exactly the previous filter and nothing else. Regular
expressions over the reader's unit words: no library reads relative periods in ru/en/de.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

from router.reader import NUMBER_WORD_ALTERNATION, cut_match, number_value, read_cues, shift, unit_span
from router.reader import words_pattern as _r

_UNITS: dict[str, str] = {
    **dict.fromkeys(("year", "years", "год", "года", "годом", "годика", "лет", "jahr", "jahre", "jahres",
                     "jahren"), "year"),
    **dict.fromkeys(("month", "months", "месяц", "месяца", "месяцем", "месяцев", "monat", "monate", "monats",
                     "monaten"), "month"),
    **dict.fromkeys(("quarter", "quarters", "квартал", "квартала", "кварталом", "кварталов", "quartal",
                     "quartale", "quartals"), "quarter"),
    **dict.fromkeys(("week", "weeks", "неделю", "недели", "неделей", "недель", "неделька", "woche", "wochen"),
                    "week"),
}
_BACK = r"before|earlier|prior|до\s+этого|до\s+того|раньше|ранее|davor|früher|zuvor|vorher"
_FORWARD = r"after|later|after\s+that|после\s+этого|после\s+того|позже|позднее|danach|später|darauf"
_WORDS = NUMBER_WORD_ALTERNATION
# [preposition] [article or count] unit direction: "the year before", "2 months later", "за год до этого".
_MOVE = _r(
    r"(?<!\w)(?:(?:за|в|на|in|from|for|aus|im|von|vom)\s+)?"
    r"(?:(?:the|a|an|one|das|dem|den|der|ein|eine|einen|einem|одну|один|(?P<n>\d{1,2}|" + _WORDS + r"))\s+)?"
    r"(?P<unit>" + "|".join(sorted(_UNITS, key=len, reverse=True)) + r")\s+"
    r"(?:(?P<back>" + _BACK + r")|(?P<forward>" + _FORWARD + r"))(?!\w)"
)
# "not just 2025", "nicht nur auf Deutsch", "не только за 2025", up to the end of the clause.
_NOT_ONLY = _r(r"(?<!\w)(?:not\s+(?:just|only)|nicht\s+nur|nicht\s+bloß|не\s+только|не\s+лишь)\s+(?P<x>[^,;.!?]+)")


@dataclass(frozen=True)
class PreviousReading:
    """What was read against the previous filters: the text without it and the period change
    (``unread``: a move with no previous period to move, for the model)."""

    text: str
    period: dict[str, Any]
    unread: bool = False


def read_against_previous(text: str, previous: dict[str, Any], today: date,
                          filler: Callable[[str], bool]) -> PreviousReading:
    """The follow-up's moved period and restated filters (``filler``: a word that says nothing)."""
    text = _drop_restated(text, previous, today, filler)
    match = _MOVE.search(text)
    if match is None:
        return PreviousReading(text, {})
    rest = cut_match(text, match)
    moved = _moved(match, previous, today)
    return PreviousReading(rest, moved or {}, unread=moved is None)


def _moved(match: re.Match[str], previous: dict[str, Any], today: date) -> dict[str, Any] | None:
    start, end = _bound(previous.get("dateFrom")), _bound(previous.get("dateTo"))
    word = match.group("n")
    count = 1 if word is None else number_value(word)
    if start is None or end is None or count is None:
        return None
    unit = _UNITS[match.group("unit").casefold()]
    count = -count if match.group("back") else count
    if unit_span(unit, start) == (start, end) or _whole_span(unit, start, end):
        start, end = unit_span(unit, shift(start, unit, count))[0], unit_span(unit, shift(end, unit, count))[1]
    else:
        start, end = shift(start, unit, count), shift(end, unit, count)
    if start > today:
        return None  # a period after today: the router explains it
    return {"dateFrom": start.isoformat(), "dateTo": min(end, today).isoformat()}


def _whole_span(unit: str, start: date, end: date) -> bool:
    """Whole units from the first of one to the last of another ("2024-01-01..2025-12-31")."""
    return unit_span(unit, start)[0] == start and unit_span(unit, end)[1] == end


def _drop_restated(text: str, previous: dict[str, Any], today: date, filler: Callable[[str], bool]) -> str:
    for match in reversed(list(_NOT_ONLY.finditer(text))):
        cues = read_cues(match.group("x"), today)
        period = cues.period.period
        same_period = period is not None and (
            _iso(period.date_from), _iso(min(period.date_to, today) if period.date_to else None)
        ) == (previous.get("dateFrom"), previous.get("dateTo"))
        same_language = cues.languages.named is not None and cues.languages.named == previous.get("language")
        if (same_period and cues.languages.named is None or same_language and period is None) and all(
            filler(w) for w in re.findall(r"[^\W\d_]+", cues.rest)
        ):
            text = cut_match(text, match)
    return text


def _bound(value: Any) -> date | None:
    try:
        return date.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _iso(value: date | None) -> str | None:
    return value.isoformat() if value is not None else None
