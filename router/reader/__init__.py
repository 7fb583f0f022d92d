"""The question reader: the period, the order, the languages, the count ("the 5 newest") and what it leaves
out ("but not Rails") a question names, read in code.

Periods are a small grammar, not a list of phrases: word classes (`_lexicon`: months, units,
relative words, seasons, ordinals, decades, operators, in ru/en/de with their inflections;
`_numbers`: numerals as words to ninety-nine and fractions such as "полгода", "half a year",
"ein halbes Jahr") are combined by anchors (`_anchors`: a year, a month of a year, a day, a
season, a quarter, a half, a part of a year, a decade, this/last/the one before last + a unit,
N units ago, the past N units, the first or last N days/weeks/months of a year or month, the nth
week or month of one) under operators (`_periods`: in/during, since/from, after, before/until,
between…and, from…to, to now, comparisons such as "older than" / "не позднее" / "nicht früher als",
with a range's first end completed from its second),
resolved to an inclusive [from, to] against today. A period cue no phrase consumed (a month
name, a year, "ago", a quarter word) is reported, never dropped silently (`_scan`). Before the grammar
reads, years and versions said in words become digits (`_number_words`: "twenty twenty four", "в
двадцать пятом году") and fixed-date holidays their days (`_holidays`: "since Christmas").

Why not a library: `dateparser` parses one date ("12 months ago", "1 марта 2025") but no periods
-- no "в марте прошлого года", "im vorigen Quartal", "the nineties", "с 1 по 14 февраля", no
inclusive ranges, and no "before/since" operators; its search mode finds dates in text but
reads "полгода" and "vor drei Wochen" as single days and drops what it cannot read without
saying so. Duckling-style rule sets (duckling itself is Haskell, served over HTTP) cover
English intervals well but have thin Russian and German time grammars (no Russian
"позапрошлый", no German "vorletzte"/"-er Jahre" decades, no seasons of a relative year) and
would add a server; recognizers-text and parsedatetime are English-centred. The grammar here
is ~1,500 lines of word classes and combinators, tested by a generated matrix of ~4,000 phrasings
(tests/router/test_reader_*).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from router.reader._calendar import shift, unit_span
from router.reader._counts import CountReading, read_count
from router.reader._exclusions import ExclusionReading, read_exclusions
from router.reader._fields import as_words
from router.reader._holidays import HOLIDAY_WISHES
from router.reader._languages import (
    COLLECTION_NOUN,
    COLLECTION_PATTERN,
    WHICH_LANGUAGES,
    LanguageCues,
    language_cues,
)
from router.reader._number_words import spelled_numbers_as_digits
from router.reader._numbers import NUMBER_WORD_ALTERNATION, NUMBER_WORDS, number_value
from router.reader._order import OrderReading, read_order
from router.reader._patterns import cut_match, without_spans, words_pattern
from router.reader._periods import DateExpectation
from router.reader._scan import PeriodReading, as_the_grammar_reads, read_period
from router.reader._spelling import inner_edits
from router.reader._vocabulary import (
    LANGUAGE_NOUNS,
    ORDER_WORDS,
    grammar_word,
    language_word,
    operator_word,
    period_word_meaning,
)

__all__ = [
    "HOLIDAY_WISHES",
    "WHICH_LANGUAGES",
    "as_the_grammar_reads",
    "spelled_numbers_as_digits",
    "COLLECTION_NOUN",
    "COLLECTION_PATTERN",
    "NUMBER_WORD_ALTERNATION",
    "as_words",
    "cut_match",
    "number_value",
    "words_pattern",
    "LANGUAGE_NOUNS", "NUMBER_WORDS", "ORDER_WORDS", "DateExpectation", "LanguageCues", "OrderReading", "PeriodReading",
    "QuestionCues", "find_period", "grammar_word", "inner_edits", "language_cues", "language_word", "operator_word",
    "period_word_meaning", "read_cues", "read_order", "read_period", "shift", "unit_span",
]


@dataclass(frozen=True)
class QuestionCues:
    """Everything the reader reads from one question."""

    languages: LanguageCues
    period: PeriodReading
    order: OrderReading
    rest: str  # the question without its language cues, period (read or not), order words, count and exclusions
    count: CountReading = CountReading(None, ())
    exclusions: ExclusionReading = ExclusionReading((), ())


def find_period(text: str, today: date) -> DateExpectation | None:
    """The period ``text`` names, resolved against ``today`` (None: it names none the grammar reads)."""
    return read_period(as_words(text), today).period


def read_cues(question: str, today: date, *, counts_and_exclusions: bool = True) -> QuestionCues:
    """``counts_and_exclusions``: read how many articles it asks for and what it leaves out (a follow-up's
    own grammar reads page sizes, and a follow-up that leaves a topic out is the model's)."""
    languages = language_cues(question)
    period = read_period(languages.rest, today)
    order = read_order(period.rest)
    rest = without_spans(period.rest, list(order.spans))
    count, exclusions = CountReading(None, ()), ExclusionReading((), ())
    if counts_and_exclusions:
        count = read_count(rest)
        rest = without_spans(rest, list(count.spans))
        exclusions = read_exclusions(rest)
        rest = without_spans(rest, list(exclusions.spans))
    # "Since July, what has …": what stood before the period is no part of the question's form
    return QuestionCues(languages, period, order, " ".join(rest.split()).lstrip(",;:–—- "), count, exclusions)
