"""The reader's vocabulary, word by word: what a single word means to the question reader.

For readers outside that correct a word typed one letter off against the reader's own words
(`router.followup_spelling`): a language word (read by the language cues' own pattern), the
language nouns of the all-languages phrases, the order words, the period words (months, units,
seasons, relative words: the lexicon's), and the words the period grammar reads as they are.
"""

from __future__ import annotations

from infra.results import Language
from router.reader import _lexicon as lx
from router.reader._languages import _MENTION
from router.reader._numbers import NUMBER_WORDS
from router.reader._spelling import _meaning, _period_word

# The nouns "language(s)" as the reader's all-languages phrases write them.
LANGUAGE_NOUNS = frozenset({"language", "languages", "sprache", "sprachen", "язык", "языка", "языке", "языки",
                            "языках", "языков"})

# The order words' usual forms (router/reader/_order.py reads each), with what it means; "first"
# orders by the word beside it. No "older"/"newer": one edit from "order", "oder", "never"; the
# order grammar's stems read them ("oldr first") anyway.
ORDER_WORDS: dict[str, str] = {
    **dict.fromkeys(("oldest", "earliest", "älteste", "ältesten", "ältere", "älteren", "früheste", "frühesten",
                     "старые", "старых", "старейшие", "ранние", "ранних"), "oldest"),
    **dict.fromkeys(("newest", "latest", "neueste", "neuesten", "neuere", "neueren", "aktuellste", "aktuellsten",
                     "новые", "новых", "новейшие", "свежие", "свежих"), "newest"),
    **dict.fromkeys(("first", "zuerst", "сначала", "вперед"), "first"),
}


def language_word(fold: str) -> Language | None:
    """The language a single word names as the reader reads it ("deutsch", "немецкие"), or None."""
    match = _MENTION.fullmatch(fold)
    return next((c for c in ("de", "en", "ru") if match.group(c)), None) if match else None


def period_word_meaning(fold: str) -> tuple[str, object] | None:
    """What a period word means (a month, a unit, a season, a relative word), or None."""
    return _meaning(fold) if _period_word(fold) else None


def operator_word(fold: str) -> str | None:
    """The period grammar's operator a word is ("since", "zwischen", "после"), or None."""
    return fold if fold in lx.OPERATORS else None


def grammar_word(fold: str) -> bool:
    """A word the period grammar reads as it is: an operator, an article, a count, a period or year word."""
    return _period_word(fold) or fold in lx.OPERATORS or fold in lx.ARTICLES or fold in lx.YEAR_WORDS \
        or fold in lx.RANGE_JOIN or fold in lx.AGO or fold in NUMBER_WORDS
