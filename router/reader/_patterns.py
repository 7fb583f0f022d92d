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
