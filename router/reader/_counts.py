"""How many articles a question asks for: "the 5 newest posts", "top 3", "три последних статьи", "die zwei
ältesten Beiträge", "последние 10". A count is the page's size, never a topic word: left in the search text
it would ask every article to contain the number.

A count stands beside a word of order or recency ("newest", "последних", "ältesten", "top") or before the
articles' noun, and not after a name: "Ruby 3 posts" and "ACME v2" are names, "90-day certificates" a compound,
"a few" and "ein paar" no count (a vague number says no size). Numerals are read by `_numbers`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from router.reader._languages import COLLECTION_PATTERN
from router.reader._numbers import NUMBER_WORD_ALTERNATION, number_value
from router.reader._patterns import words_pattern as _r

MAX_COUNT = 50  # the search's largest page (bigger counts are clamped there)

_NUMBER = r"(\d{1,3}|single|" + NUMBER_WORD_ALTERNATION + r")"
_FIRST = _r(r"^(?:first|earliest|oldest|перв\w*|стар\w*|ранн\w*|erste\w*|älteste\w*|früheste\w*)")
_RANKED = (
    r"(?:newest|latest|most\s+recent|recent|oldest|earliest|first|last|top"
    r"|последн\w*|свеж\w*|нов(?!ост)\w*|перв\w*|стар\w*|ранн\w*|самы\w*"
    r"|neueste\w*|letzte\w*|aktuellste\w*|jüngste\w*|älteste\w*|früheste\w*|erste\w*)"
)
_COUNT = _r(
    # "top 5", "the latest 3 posts", "последние 10", "топ-3"
    r"(?<![\w-])(?P<rank>" + _RANKED + r"|топ)[\s-]+(?P<after>" + _NUMBER + r")(?![\w.,-]\w)"
    # "5 newest posts", "три последних статьи", "die zwei ältesten", "3 posts"
    r"|(?<![\w.,-])(?P<before>" + _NUMBER + r")\s+(?:(?:" + _RANKED + r")(?:\s+" + COLLECTION_PATTERN + r")?"
    r"|" + COLLECTION_PATTERN + r")(?![\w-])"
)
# The word before a count says whether it is one: a request or an article may stand there, a name may not
# ("Ruby 3 posts", "RFC 8555 articles").
_WORD_BEFORE = re.compile(r"([\w'-]+)\W*$", re.UNICODE)
_MAY_PRECEDE = frozenset(
    """
    the me us show find list give get fetch pull only just all any latest newest last first top my
    мне покажи найди дай выведи скинь только все последние свежие первые нам
    die mir zeig zeige finde gib liste nur alle letzten neuesten ersten uns bitte please пожалуйста
    """.split()
)


@dataclass(frozen=True)
class CountReading:
    count: int | None  # how many articles are asked for (clamped to MAX_COUNT), None: no count
    spans: tuple[tuple[int, int], ...]  # the count's number (cut from the search text)
    oldest: bool = False  # "the first 4 posts": the count is taken from the start


def read_count(text: str) -> CountReading:
    for match in _COUNT.finditer(text):
        before = _WORD_BEFORE.search(text[: match.start()])
        if before is not None and before.group(1).casefold() not in _MAY_PRECEDE \
                and not re.search(r"[,.:;!?—–(]\s*$", text[: match.start()]):
            continue
        group = "after" if match.group("after") else "before"
        number = match.group(group)
        value = 1 if number.casefold() == "single" else number_value(number)
        if value is None or value < 1 or (value == 1 and not number.isdigit() and number.casefold() != "single"):
            continue  # "a post about X", "ein Beitrag", "одна статья": an article, not a size
        # "top 5": the ranking word goes with it ("newest" and "oldest" were read as the order already)
        first = group == "after" and _FIRST.match(match.group("rank")) is not None
        return CountReading(min(value, MAX_COUNT), (match.span() if group == "after" else match.span(group),), first)
    return CountReading(None, ())
