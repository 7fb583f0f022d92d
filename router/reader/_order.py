"""Order cues: oldest first ("earliest first", "in chronological order", "in date order",
"chronologisch", "zeitlich aufsteigend", "в хронологическом порядке", "от старых к новым") or
newest first ("newest first", "reverse chronological", "von neu nach alt")."""

from __future__ import annotations

import re
from dataclasses import dataclass

from router.reader._patterns import words_pattern as _r

_OLD = r"(?:old\w*|earl\w*|стар\w*|ранн\w*|alt\w*|ält\w*|früh\w*)"
_NEW = r"(?:new\w*|late\w*|recent\w*|нов\w*|свеж\w*|поздн\w*|neu\w*|aktuell\w*|jüng\w*)"
# "from oldest to newest", "от старых к новым", "von alt nach neu", "oldest first": the first end wins.
_DIRECTION = _r(
    r"\b(?:from\s+(?:the\s+)?|от\s+|von\s+)?(?P<a>" + _OLD + "|" + _NEW + r")\s+(?:to|до|к|nach|bis|zu|zum)\s+"
    r"(?:the\s+)?(?P<b>" + _OLD + "|" + _NEW + r")\b"
    r"|\b(?P<c>" + _OLD + "|" + _NEW + r")\s+(?:first|zuerst|сначала|вперед|вперёд)\b"
    r"|\b(?:сначала|zuerst)\s+(?P<d>" + _OLD + "|" + _NEW + r")"
)
_REVERSE = _r(
    r"\breverse[-\s]+chronolog\w*(?:\s+order)?|\bumgekehrt\w*\s+(?:chronolog\w*|zeitlich\w*)(?:\s+reihenfolge)?"
    r"|(?:в\s+)?обратн\w+\s+хронологическ\w*(?:\s+порядк\w*)?|\b(?:by\s+date\s+)?descending\b"
    r"|\b(?:nach\s+datum\s+)?absteigend\w*|по\s+убыванию(?:\s+дат\w*)?"
)
_CHRONOLOGICAL = _r(
    r"\b(?:in\s+)?chronological(?:ly)?(?:\s+order)?\b|\b(?:in\s+)?date\s+order\b|\bby\s+date,?\s+ascending\b"
    r"|\bascending\b|\bchronologisch\w*(?:\s+(?:sortiert|geordnet|reihenfolge))?|\bzeitlich\s+aufsteigend\b"
    r"|\baufsteigend\w*|(?:в\s+)?хронологическ\w*(?:\s+порядк\w*)?|по\s+возрастанию(?:\s+дат\w*)?"
    r"|\bnach\s+datum\s+aufsteigend\b"
)
_OLDEST = _r(
    r"\b(?:oldest|earliest)\b|\bстар(?:ые|ых|ейш\w*|ее|ейшие)\b|\bранн\w+|\b(?:älteste\w*|früheste\w*)"
    r"|\bfirst\s+(?:articles|posts)\b|перв(?:ые|ых)\s+(?:стат|пост|публикац|новост)|\berste[n]?\s+(?:artikel|beiträge)"
)
_NEWEST = _r(r"\b(?:newest|latest|most recent)\b|\bнов\w+|\bсвеж\w+|\b(?:neueste\w*|aktuellste\w*)")


@dataclass(frozen=True)
class OrderReading:
    sort: str | None  # "oldest" / "newest" when the question asks for an order, else None
    spans: tuple[tuple[int, int], ...]  # where the order words are (cut from the search text)


def read_order(text: str) -> OrderReading:
    direction = _DIRECTION.search(text)
    if direction is not None:
        word = next(g for g in (direction.group("a"), direction.group("c"), direction.group("d")) if g)
        sort = "oldest" if re.fullmatch(_OLD, word, re.IGNORECASE) else "newest"
        return OrderReading(sort, (direction.span(),))
    for pattern, sort in ((_REVERSE, "newest"), (_CHRONOLOGICAL, "oldest")):
        found = pattern.search(text)
        if found is not None:
            return OrderReading(sort, (found.span(),))
    if _OLDEST.search(text) and not _NEWEST.search(text):
        return OrderReading("oldest", ())  # the word stays: it is dropped with the topic's stop words
    return OrderReading("newest" if _NEWEST.search(text) else None, ())
