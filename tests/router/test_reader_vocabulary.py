"""The reader's word-by-word vocabulary (`router/reader/_vocabulary.py`) agrees with its grammar,
and the periods "a couple of weeks ago" / "недели три назад" are read (issue 28: follow-ups
read periods with the question reader, so both gain)."""

from __future__ import annotations

from datetime import date

import pytest

from router.reader import LANGUAGE_NOUNS, ORDER_WORDS, language_cues, language_word, read_cues, read_order

TODAY = date(2026, 6, 30)  # a Tuesday


@pytest.mark.parametrize(("word", "meaning"), sorted(ORDER_WORDS.items()))
def test_every_order_word_is_read_by_the_order_grammar(word: str, meaning: str) -> None:
    sort = read_order(f"{word} first" if meaning != "first" else f"oldest {word}").sort
    assert sort == (meaning if meaning != "first" else "oldest")


@pytest.mark.parametrize("noun", sorted(LANGUAGE_NOUNS))
def test_every_language_noun_makes_an_all_languages_phrase(noun: str) -> None:
    preposition = "на всех" if noun.startswith("язык") else ("in allen" if noun.startswith("sprach") else "in all")
    assert language_cues(f"{preposition} {noun}").all_languages


@pytest.mark.parametrize(("word", "language"), [
    ("deutsch", "de"), ("немецкие", "de"), ("english", "en"), ("английском", "en"), ("russisch", "ru"),
    ("germn", None), ("Helm", None),
])
def test_a_language_word_is_read_as_the_language_cues_read_it(word: str, language: str | None) -> None:
    assert language_word(word.casefold()) == language


@pytest.mark.parametrize(("question", "date_from", "date_to"), [
    ("posts from a couple of weeks ago", date(2026, 6, 15), date(2026, 6, 21)),
    ("a couple months ago", date(2026, 4, 1), date(2026, 4, 30)),
    ("статьи пару недель назад", date(2026, 6, 15), date(2026, 6, 21)),
    ("что писали недели три назад", date(2026, 6, 8), date(2026, 6, 14)),
    ("месяца два назад", date(2026, 4, 1), date(2026, 4, 30)),
    ("за последние пару недель", date(2026, 6, 16), TODAY),
    # "back" for "ago", units typed short, "YTD"
    ("posts from three years back", date(2023, 1, 1), date(2023, 12, 31)),
    ("Ruby news 2 yrs ago", date(2024, 1, 1), date(2024, 12, 31)),
    ("OCSP posts 3 mo ago", date(2026, 3, 1), date(2026, 3, 31)),
    ("статьи про YJIT 3 мес назад", date(2026, 3, 1), date(2026, 3, 31)),
    ("certbot posts, last 2 wks", date(2026, 6, 16), TODAY),
    ("Let's Encrypt posts YTD", date(2026, 1, 1), date(2026, 12, 31)),
])
def test_a_couple_an_inverted_russian_count_back_and_short_units_are_read(question: str, date_from: date,
                                                                          date_to: date) -> None:
    period = read_cues(question, TODAY).period.period
    assert period is not None and (period.date_from, period.date_to) == (date_from, date_to)


# "vor ein paar Wochen" is read since round 16 (a couple is two: tests/router/test_reader_periods.py)
@pytest.mark.parametrize("question", ["a couple of articles about Ruby", "неделя три", "a few posts about Ruby"])
def test_a_few_and_a_couple_of_things_are_no_count_of_units(question: str) -> None:
    cues = read_cues(question, TODAY)
    assert cues.period.period is None
