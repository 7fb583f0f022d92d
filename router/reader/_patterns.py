"""The one way the reader and the rules compile their ru/en/de phrase patterns, and cut what
one matched out of the text."""

from __future__ import annotations

import re


def words_pattern(pattern: str) -> re.Pattern[str]:
    """`pattern` matching regardless of case, with Unicode word classes (Cyrillic, umlauts)."""
    return re.compile(pattern, re.IGNORECASE | re.UNICODE)


def cut_match(text: str, match: re.Match[str]) -> str:
    """`text` without what `match` matched (a space in its place: the words on either side stay apart)."""
    return text[: match.start()] + " " + text[match.end():]


def without_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span replaced by one space (a span inside an earlier one is skipped)."""
    out, position = [], 0
    for start, end in sorted(spans):
        if start < position:
            continue
        out.append(text[position:start] + " ")
        position = end
    out.append(text[position:])
    return "".join(out)


_SENTENCE_BREAK = re.compile(r"[.!?:]\s+\S")  # a colon too: "We plan it around Christmas: show me …"


def sentence_ends_between(text: str, start: int, end: int) -> bool:
    """A sentence ends between ``start`` and ``end`` of ``text`` (a version's "3.4" ends none): what one
    sentence names is context for the next one's request."""
    return _SENTENCE_BREAK.search(text, start, end) is not None
