"""Order cues: oldest first ("earliest first", "in chronological order", "in date order",
"chronologisch", "zeitlich aufsteigend", "в хронологическом порядке", "от старых к новым", where to
start ("start with the oldest", "начни со старых", "fang mit den ältesten an"), the
order of publication: "in the order they were published", "по порядку", "von Anfang an") or
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
    r"|\b(?P<c>" + _OLD + "|" + _NEW + r")\s+(?:first|zuerst|сначала|вперед|вперёд|on\s+top|at\s+the\s+top"
    r"|oben|сверху|вверху)(?!\w)"
    r"|\b(?:сначала|zuerst)\s+(?:сам\w+\s+)?(?P<d>" + _OLD + "|" + _NEW + r")"
    r"|\bfrom\s+(?P<h>first)\s+to\s+last\b|(?<!\w)от\s+(?P<i>перв)\w*\s+(?:до|к)\s+последн\w*"
    # where to start: "start with the oldest", "начни со старых", "fang mit den ältesten an"
    r"|\b(?:start|begin)\w*\s+(?:with|from|at)\s+(?:the\s+)?(?:very\s+)?(?P<e>" + _OLD + "|" + _NEW + r")"
    r"|(?<!\w)начн\w*\s+(?:со|с|от)\s+(?:сам\w+\s+)?(?P<f>" + _OLD + "|" + _NEW + r")"
    r"|\b(?:fang\w*|beginn\w*)\s+(?:\w+\s+)?(?:mit|bei)\s+(?:den|dem|der)\s+(?:aller)?(?P<g>" + _OLD + "|" + _NEW + r"|erst\w*)"
)
_REVERSE = _r(
    r"\breverse[-\s]+chronolog\w*(?:\s+order)?|\bumgekehrt\w*\s+(?:chronolog\w*|zeitlich\w*)(?:\s+reihenfolge)?"
    r"|(?:в\s+)?обратн\w+\s+хронологическ\w*(?:\s+порядк\w*)?|\b(?:by\s+date\s+)?descending\b"
    r"|\b(?:nach\s+datum\s+)?absteigend\w*|по\s+убыванию(?:\s+дат\w*)?"
)
_CHRONOLOGICAL = _r(
    r"\b(?:in\s+)?chronological(?:ly)?(?:\s+order)?\b|\b(?:in\s+)?date\s+order\b|\bby\s+date,?\s+ascending\b"
    r"|\bascending\b|\bchronologisch\w*(?:\s+(?:sortiert|geordnet|reihenfolge))?|\bzeitlich\s+aufsteigend\b"
    r"|\baufsteigend\w*(?:\s+(?:nach\s+(?:dem\s+)?datum\s+)?(?:sortiert|geordnet))?"
    r"|(?:в\s+)?хронологическ\w*(?:\s+порядк\w*)?|по\s+возрастанию(?:\s+дат\w*)?"
    r"|\bnach\s+datum\s+aufsteigend\b"
)
# The order of publication, read as a phrase: an order noun with a publication word near it ("in the
# order they were published", "в порядке выхода", "in der Reihenfolge, in der sie erschienen sind"),
# a bare "по порядку" / "der Reihe nach", or reading from the start ("с самого начала", "from the
# very beginning", "von Anfang an", "начиная с первой", "starting with the first one").
_PUBLISHED = (r"(?:publish\w*|publication|appear\w*|released?|came\s+out|went\s+out|выход\w*|вышл\w*|выходил\w*"
              r"|публикац\w*|опубликова\w*|появлен\w*|появлял\w*|erschien\w*|erscheinen\w*|veröffentlich\w*)")
_PUBLICATION_ORDER = _r(
    r"\b(?:in\s+)?(?:the\s+)?order\b(?:\s+\w+){0,3}?\s+" + _PUBLISHED
    + r"|\b(?:in\s+)?" + _PUBLISHED + r"\s+order\b"
    r"|(?:в\s+)?порядк\w*\s+(?:их\s+)?" + _PUBLISHED + r"|(?<!\w)по\s+порядку(?!\w)"
    r"|\b(?:in\s+)?(?:der\s+)?reihenfolge\b[\s,]*(?:\w+\s+){0,4}?" + _PUBLISHED
    + r"|\bder\s+reihe\s+nach\b"
    r"|(?<!\w)с\s+(?:самого\s+)?начала(?!\w)|(?<!\w)начиная\s+с\s+(?:самой\s+)?(?:первой|первых|ранн\w+)"
    r"|\bfrom\s+the\s+(?:very\s+)?(?:beginning|start)\b|\bstarting\s+(?:with|from)\s+the\s+(?:first|earliest)\b"
    r"|\bvon\s+(?:ganz\s+)?anfang\s+an\b|\bbeginnend\s+mit\s+(?:dem|den)\s+(?:ersten|frühesten)\b"
)
# Russian "старые/ранние" are an order only as the articles' attribute or with "самые/сначала": "поддержка
# старых веток", "в ранних версиях" name the topic (the superlative "старейшие" is always an order).
_OLDEST = _r(
    r"\b(?:oldest|earliest)\b|\bстарейш\w*|\b(?:aller)?(?:älteste\w*|früheste\w*)"
    r"|(?<!\w)(?:самые|самых|самого|сначала|вначале)\s+(?:стар|ранн)\w*"
    r"|(?<!\w)(?:стар|ранн)(?:ые|ых|ие|их|ее|ей)\s+(?:\w+\s+)?(?:стат|пост|публикац|новост|запис|материал|сообщени)\w*"
    r"|(?<!\w)(?:стар|ранн)(?:ые|ых|ие|их)\s+(?:сверху|вверху|вперёд|вперед|первыми|наверху|в\s+начале)(?!\w)"
    r"|(?:отсортир|сортир|упорядоч|по\s+дате)\w*(?:\s+\S+){0,4}?\s+(?:стар|ранн)\w*"
    r"|\bfirst\s+(?:ever\s+)?(?:articles|posts)\b|\bfirst[\s-]+ever\b|перв(?:ые|ых)\s+(?:\w+\s+)?(?:стат|пост|публикац|новост)|\b(?:aller)?erste[n]?\s+(?:artikel|beiträge)"
)
# German intensifies a superlative with "aller-": "die allerersten Beiträge", "die allerneuesten".
_NEWEST = _r(r"\b(?:newest|latest|most recent)\b|\bнов(?!ост)\w+|\bсвеж\w+|\b(?:aller)?(?:neueste\w*|aktuellste\w*)")


@dataclass(frozen=True)
class OrderReading:
    sort: str | None  # "oldest" / "newest" when the question asks for an order, else None
    spans: tuple[tuple[int, int], ...]  # where the order words are (cut from the search text)


def read_order(text: str) -> OrderReading:
    direction = _DIRECTION.search(text)
    if direction is not None:
        word = next(w for name in ("a", "c", "d", "e", "f", "g", "h", "i") if (w := direction.group(name)))
        sort = "oldest" if re.fullmatch(_OLD + "|first|перв|erst\\w*", word, re.IGNORECASE) else "newest"
        return OrderReading(sort, (direction.span(),))
    for pattern, sort in ((_REVERSE, "newest"), (_CHRONOLOGICAL, "oldest"), (_PUBLICATION_ORDER, "oldest")):
        found = [m.span() for m in pattern.finditer(text)]
        if found:
            return OrderReading(sort, tuple(found))  # every such phrase is an order word, none a topic
    if _OLDEST.search(text) and not _NEWEST.search(text):
        return OrderReading("oldest", ())  # the word stays: it is dropped with the topic's stop words
    return OrderReading("newest" if _NEWEST.search(text) else None, ())
