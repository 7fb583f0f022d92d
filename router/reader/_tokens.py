"""The question as tokens: words and numbers with their place in the text.

The grammar works on tokens, not characters, so an inflection ("марте", "Jahres") is one
lookup and a version string ("Ruby 3.4", "CVE-2025-25186") is never a year: a number glued
by '.' or '-' to another word or number is not read as a date on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"\d{4}-\d{2}-\d{2}|[^\W_]+", re.UNICODE)


@dataclass(frozen=True)
class Token:
    text: str
    fold: str  # casefolded, 'ё' as 'е'
    start: int
    end: int
    before: str  # the characters between the previous token and this one ("" = glued)
    after: str  # the characters up to the next token
    version: bool = False  # a year that is a product's version ("Windows 2000"): no number of a date

    @property
    def number(self) -> int | None:
        return int(self.text) if self.text.isdigit() and not self.version else None


def fold_at(tokens: list[Token], i: int) -> str:
    """The folded word at ``i``, or "" past either end (the grammar looks ahead and back freely)."""
    return tokens[i].fold if 0 <= i < len(tokens) else ""


def tokenize(text: str) -> list[Token]:
    matches = list(_TOKEN.finditer(text))
    tokens: list[Token] = []
    for i, match in enumerate(matches):
        previous_end = matches[i - 1].end() if i else None
        next_start = matches[i + 1].start() if i + 1 < len(matches) else None
        before = text[previous_end:match.start()] if previous_end is not None else " "
        after = text[match.end():next_start] if next_start is not None else text[match.end():]
        word = match.group(0)
        tokens.append(Token(word, word.casefold().replace("ё", "е"), match.start(), match.end(), before, after))
    return tokens


def standalone_number(tokens: list[Token], i: int) -> int | None:
    """The token's number when it stands alone (not part of "3.4", "CVE-2025-1", "2025-03-01")."""
    token = tokens[i]
    number = token.number
    if number is None:
        return None
    if _year_pair(tokens, i):
        return number
    if i > 0 and token.before in (".", "-", "/", "") and tokens[i - 1].fold not in _GLUE_PREFIXES:
        return None
    if i + 1 < len(tokens) and token.after in ("-", "/", "") and tokens[i + 1].fold not in _GLUE_SUFFIXES:
        return None
    if i + 1 < len(tokens) and token.after == "." and tokens[i + 1].number is not None:
        return None  # "3.4"
    return number


def _year_pair(tokens: list[Token], i: int) -> bool:
    """ "2020-2022", "2020–2022": two years joined by a dash are a range, not a version."""
    def year(j: int) -> bool:
        return 0 <= j < len(tokens) and len(tokens[j].text) == 4 and tokens[j].number is not None \
            and 1900 <= int(tokens[j].text) <= 2099
    if not year(i):
        return False
    dashes = ("-", "–", "—")
    outer_ok = (i < 2 or tokens[i - 1].before.strip() not in dashes) and (
        i + 2 >= len(tokens) or tokens[i + 1].after.strip() not in dashes)
    if i > 0 and tokens[i].before.strip() in dashes and year(i - 1):
        return outer_ok and (i + 1 >= len(tokens) or tokens[i].after.strip() not in dashes)
    if i + 1 < len(tokens) and tokens[i].after.strip() in dashes and year(i + 1):
        return outer_ok and (i == 0 or tokens[i].before.strip() not in dashes)
    return False


# "mid-2025", "2000-х", "90-e": a hyphen that joins a number to a period word, not a version.
_GLUE_PREFIXES = frozenset({"mid", "early", "late", "q1", "q2", "q3", "q4", "h1", "h2"})
_GLUE_SUFFIXES = frozenset({"х", "е", "ых", "ые", "er", "s", "x", "ие", "го", "й", "м"})
