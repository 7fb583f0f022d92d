"""Words of a follow-up typed one letter off ("germn", "русскм", "yaer", "мсяц", "pgae", "oldset",
"тлько"), read as the word meant before the follow-up grammar runs.

The vocabulary is the question reader's own (`router.reader`: the words it reads as a language,
the language nouns, the order words, the period words, its longer operators -- so a word the
reader learns is corrected here too) and the follow-up grammar's own words (page and step words, fillers), passed
in by `router.followup_reader`. Nothing is listed twice.

The distance is one edit of the period words' rule (`router.reader.inner_edits`: first letter
kept, no letter added or changed at the end -- that is an inflection), by the typed word's length:
- five letters or more: any such edit (a letter missing, extra, wrong, two neighbours swapped);
- four letters: two neighbours swapped ("yaer", "pgae", "nxet", "olny"), or one letter missing and
  only into the reader's words ("мсяц"); never a capitalized word inside the text (a name: "and Mach?");
- a filler is a target only for a word typed lower-case, and (but for a swap) only a filler of six
  letters or more ("тлько", "plaese"): shorter ones sit one edit from names ("prima"/"Prisma").
German typed without umlauts ("naechste", "aeltere") is read with them. A word is corrected
only when every word near it has one meaning, and never when it is a word
the reader or the grammar already reads ("seit" stays "seit"). A corrected follow-up is still
filter-only only when nothing but cues and fillers remain, so a topic word one edit off a cue
word still sends it to the model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping

from router.reader import (
    LANGUAGE_NOUNS,
    ORDER_WORDS,
    grammar_word,
    inner_edits,
    language_word,
    operator_word,
    period_word_meaning,
)

_WORD = re.compile(r"[^\W\d_]{4,}", re.UNICODE)
_UMLAUT = {"ae": "ä", "oe": "ö", "ue": "ü"}
_UMLAUTS = re.compile("ae|oe|ue")  # German typed without umlauts
_FULL = 5  # a word this long may carry any one inner edit
_LONG_FILLER = 6  # a filler any edit may reach (shorter ones sit near names: "prima"/"Prisma")


def _reader_meaning(fold: str) -> object | None:
    """What the question reader reads ``fold`` as (None: no cue word of the reader)."""
    language = language_word(fold)
    if language is not None:
        return ("language", language)
    if fold in LANGUAGE_NOUNS:
        return "language-noun"
    if fold in ORDER_WORDS:
        return ("order", ORDER_WORDS[fold])
    if len(fold) >= _FULL and operator_word(fold):  # "sinse 2024"; a shorter one is too near other words
        return ("operator", fold)
    return period_word_meaning(fold)


def _swaps(word: str) -> Iterator[str]:
    """Two inner neighbours of ``word`` swapped (the last two too)."""
    for i in range(1, len(word) - 1):
        yield word[:i] + word[i + 1] + word[i] + word[i + 2:]


def _insertions(word: str) -> Iterator[str]:
    """``word`` with one letter missing put back (first and last letters kept)."""
    return (edit for edit in inner_edits(word) if len(edit) == len(word) + 1)


class Speller:
    """Corrects a follow-up's words against the reader's vocabulary and the grammar's own words."""

    def __init__(self, own_words: Mapping[str, str], fillers: frozenset[str], known: Callable[[str], bool]) -> None:
        self.own_words = own_words  # word -> meaning ("page", "next", ...)
        self.fillers = fillers  # literal filler words a typo may be read as
        self.known = known  # a word read as it is (a filler's stem, "seit"): never corrected

    def meaning(self, fold: str, *, fillers: int | None = None) -> object | None:
        """What ``fold`` means; a filler of at least ``fillers`` letters counts (None: no filler)."""
        found = _reader_meaning(fold)
        if found is None and fold in self.own_words:
            found = ("own", self.own_words[fold])
        if found is None and fillers is not None and len(fold) >= fillers and fold in self.fillers:
            found = "filler"
        return found

    def correction(self, word: str, *, inside: bool) -> str | None:
        """The one word ``word`` is a typo of (kept in its case's shape), or None."""
        fold = word.casefold().replace("ё", "е")
        if self.meaning(fold, fillers=0) is not None or self.known(fold) or grammar_word(fold):
            return None
        umlauts = _UMLAUTS.sub(lambda m: _UMLAUT[m.group(0)], fold)
        if umlauts != fold and self.meaning(umlauts, fillers=0) is not None:
            return umlauts[:1].upper() + umlauts[1:] if word[:1].isupper() else umlauts  # "naechste", "aeltere"
        lower = word == fold  # a filler is a typo's target only when typed lower-case
        if len(fold) < _FULL:
            if inside and not lower:
                return None  # a name inside the text ("and Mach?")
            near = {e: m for e in _swaps(fold) if (m := self.meaning(e, fillers=4)) is not None}
            near.update({e: m for e in _insertions(fold) if (m := _reader_meaning(e)) is not None})
        else:
            longer = _LONG_FILLER if lower else None
            near = {e: m for e in inner_edits(fold) if (m := self.meaning(e, fillers=longer)) is not None}
        if len(set(map(repr, near.values()))) != 1:
            return None  # none near, or two meanings near
        fix = min(near)
        return fix[:1].upper() + fix[1:] if word[:1].isupper() else fix  # a capital may mark a name

    def spelled(self, text: str) -> str:
        """``text`` with every word typed one edit off written as the word meant."""
        out, position = [], 0
        for match in _WORD.finditer(text):
            fix = self.correction(match.group(0), inside=bool(text[:match.start()].strip()))
            if fix is not None:
                out.append(text[position:match.start()] + fix)
                position = match.end()
        out.append(text[position:])
        return "".join(out)
