"""Two readings of tokens before the period grammar runs: a period word typed one letter off
("lezten Quartal", "Febuary", "кватрал") and a year that is a product's version ("Windows 2000",
"Office 2019", "SQL Server 2022").

A typo is one edit inside the word (a letter missing, extra, wrong, or two swapped), never of
its first letter (rarely mistyped) nor a letter added, dropped or changed at its end (that is an
inflection: "lasts" is not "last"); the last two swapped is a typo ("germna"). The corrected word must be a period word of the lexicon and
is kept only when the phrase it completes is anchored: it begins with an operator ("aus dem
lezten Quartal") or holds another period word the user typed right ("Febuary 2025"), so
"pattern match in Ruby" stays free of March.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from functools import lru_cache

from router.reader import _lexicon as lx
from router.reader._tokens import Token

_MIN_TYPO_LENGTH = 5
# A four-letter word has too many neighbours for a wrong or an extra letter; two letters swapped or
# one left out are still one slip of the hand ("lsat year", "прошлый мсяц").
_SHORT_TYPO_LENGTH = 4
_LATIN = "abcdefghijklmnopqrstuvwxyzäöüß"
_CYRILLIC = "абвгдежзийклмнопрстуфхцчшщъыьэюя"


def _period_word(fold: str) -> bool:
    return (fold in lx.FULL_MONTHS and fold not in lx.AMBIGUOUS_MONTHS) or fold in lx.UNITS \
        or (fold in lx.SEASONS and fold not in lx.AMBIGUOUS_SEASONS) or lx.relative(fold) is not None \
        or bool(lx.ROLLING.match(fold))


def inner_edits(word: str) -> Iterator[str]:
    """Every word one edit away that keeps the first and the last letter."""
    alphabet = _CYRILLIC if any("а" <= ch <= "я" for ch in word) else _LATIN
    last = len(word) - 1
    for i in range(1, last):
        yield word[:i] + word[i + 1:]  # a letter too many
        yield word[:i] + word[i + 1] + word[i] + word[i + 2:]  # two letters swapped (the last two too)
        for ch in alphabet:
            yield word[:i] + ch + word[i + 1:]  # a wrong letter
    for i in range(1, last + 1):
        for ch in alphabet:
            yield word[:i] + ch + word[i:]  # a letter missing


def _short_edits(word: str) -> Iterator[str]:
    """The edits of a four-letter word: two inner letters swapped (the last two too), or one missing."""
    alphabet = _CYRILLIC if any("а" <= ch <= "я" for ch in word) else _LATIN
    for i in range(1, len(word) - 1):
        yield word[:i] + word[i + 1] + word[i] + word[i + 2:]
    for i in range(1, len(word)):
        for ch in alphabet:
            yield word[:i] + ch + word[i:]


@lru_cache(maxsize=4096)
def typo_correction(fold: str) -> str | None:
    """The one period word ``fold`` is a typo of, or None (a known word, or none or several near).
    Cached: ~600 edits a word, and a question's words are read by the validator, the prompt, the
    gate and the rules in turn."""
    if len(fold) < _SHORT_TYPO_LENGTH or not fold.isalpha() or _period_word(fold):
        return None
    edits = inner_edits(fold) if len(fold) >= _MIN_TYPO_LENGTH else _short_edits(fold)
    near = sorted({edit for edit in edits if _period_word(edit)})
    meanings = {_meaning(edit) for edit in near}
    return near[0] if len(meanings) == 1 else None  # "letzem": "letztem" or "letztm", both "last"


def _meaning(fold: str) -> tuple[str, object]:
    for kind, value in (("month", lx.FULL_MONTHS.get(fold)), ("unit", lx.UNITS.get(fold)),
                        ("season", lx.SEASONS.get(fold)), ("relative", lx.relative(fold))):
        if value is not None:
            return kind, value
    return "rolling", None


def corrected(tokens: list[Token]) -> tuple[list[Token], set[int]]:
    """The tokens with period-word typos corrected, and the indices corrected."""
    out, changed = list(tokens), set()
    for i, token in enumerate(tokens):
        fix = typo_correction(token.fold)
        if fix is not None:
            out[i] = replace(token, fold=fix)
            changed.add(i)
    return out, changed


def anchored(tokens: list[Token], first: int, next_index: int, changed: set[int]) -> bool:
    """A read phrase holding corrected words is trusted when it opens with an operator or holds
    a period word or a year typed right."""
    if tokens[first].fold in lx.OPERATORS and first not in changed:
        return True
    return any(j not in changed and (_period_word(tokens[j].fold) or tokens[j].text.isdigit())
               for j in range(first, next_index))


# ---- a year that is a version ----
# Nouns a year after which names a period of the collection ("Posts 2021", "Beiträge 2020"), and
# German noun endings ("Sicherheitslücken 2019", "Änderungen 2024").
_COLLECTION_NOUNS = frozenset({
    "posts", "post", "articles", "article", "news", "updates", "releases", "announcements", "entries", "stories",
    "notes", "artikel", "beiträge", "beitrag", "meldungen", "nachrichten", "neuigkeiten", "berichte", "cves",
    "blog", "blogs", "reports", "changes", "issues", "talks", "vorträge",
})
_GERMAN_NOUN_ENDING = re.compile(r"(?:ung|ungen|heit|heiten|keit|keiten|schaft|lücke|lücken|nisse|ionen|ität)$")
_SENTENCE_END = (".", "!", "?", ":", ";")


def _is_name(tokens: list[Token], i: int) -> bool:
    """A capitalized Latin word inside a sentence that is no period, operator or collection word."""
    token = tokens[i]
    if not token.text[:1].isupper() or not token.text.isalnum() or not token.text[:1].isascii():
        return False
    if i == 0 or tokens[i - 1].after.strip().endswith(_SENTENCE_END):
        return False  # a sentence's first word is capitalized whatever it is ("Show 2019 articles")
    fold = token.fold
    return not (_period_word(fold) or fold in lx.OPERATORS or fold in lx.ARTICLES or fold in lx.YEAR_WORDS
                or fold in lx.QUARTER_CODES or fold in lx.HALF_CODES or fold in lx.PARTS
                or fold in _COLLECTION_NOUNS or _GERMAN_NOUN_ENDING.search(fold) or lx.month(fold) is not None)


def _starts_range(tokens: list[Token], i: int) -> bool:
    """ "Ruby 2014 bis 2017", "Ruby 2014–2017": the year opens a range of years."""
    if i + 1 >= len(tokens):
        return False
    if tokens[i].after.strip() in ("-", "–", "—") and tokens[i + 1].text.isdigit():
        return True
    return tokens[i + 1].fold in lx.RANGE_JOIN and i + 2 < len(tokens) and tokens[i + 2].text.isdigit()


# One capitalized name before a year is ambiguous: "posts about Ruby 2025" are posts of 2025. The
# product families that number their versions by year are a word class; a name of two capitalized
# words ("Windows Server 2019", "Visual Studio 2022", "RubyConf Taiwan 2025") is a product's or an
# event's name whatever its family.
_YEAR_VERSIONED = frozenset({
    "windows", "office", "server", "studio", "exchange", "sharepoint", "word", "excel", "outlook", "access",
    "autocad", "photoshop", "illustrator", "premiere", "lightroom", "ubuntu",
})


def _product_name(tokens: list[Token], i: int) -> bool:
    if not _is_name(tokens, i):
        return False
    return tokens[i].fold in _YEAR_VERSIONED or i > 0 and tokens[i - 1].before != "" and _is_name(tokens, i - 1) \
        or i > 0 and tokens[i - 1].text.isupper() and len(tokens[i - 1].text) > 1  # "SQL Server"


def version_years(tokens: list[Token]) -> set[int]:
    """Indices of four-digit years that follow a product's name with one space ("Windows 2000")."""
    found = set()
    for i in range(1, len(tokens)):
        token = tokens[i]
        if len(token.text) != 4 or not token.text.isdigit() or not 1900 <= int(token.text) <= 2099:
            continue
        if token.before != " " or _starts_range(tokens, i):
            continue
        if i + 1 < len(tokens) and tokens[i + 1].fold in lx.YEAR_WORDS:
            continue  # "Ruby 2019 года": the year word makes it a period
        if _product_name(tokens, i - 1):
            found.add(i)
    return found
