"""Years and versions said in words (router/reader/_number_words.py): dictated and typed-out numbers are
read as the digits they stand for, so a period or a version in words is read as one in digits. Phrasings
written for these tests, in no eval case. Pure: no database."""

from __future__ import annotations

from datetime import date

import pytest

from router.dates import check_against_question
from router.reader import read_cues, spelled_numbers_as_digits

TODAY = date(2026, 6, 17)


@pytest.mark.parametrize(("said", "digits"), [
    # English: a year said in two pairs, or as "two thousand (and) …"
    ("posts from twenty twenty three", "posts from 2023"),
    ("news since twenty eleven", "news since 2011"),
    ("talks in nineteen ninety eight", "talks in 1998"),
    ("releases from twenty oh nine", "releases from 2009"),
    ("advisories before two thousand and twelve", "advisories before 2012"),
    ("the two thousand seven release", "the 2007 release"),
    ("what changed in twenty twenty-two", "what changed in 2022"),
    # Russian: the year an ordinal, in any case; "N-й год" said short
    ("статьи за две тысячи двадцать третий год", "статьи за 2023 год"),
    ("что было в две тысячи девятнадцатом году", "что было в 2019 году"),
    ("новости с две тысячи десятого года", "новости с 2010 года"),
    ("релизы тысяча девятьсот девяносто восьмого года", "релизы 1998 года"),
    ("посты за двадцать первый год", "посты за 2021 год"),
    ("в восемнадцатом году", "в 2018 году"),
    ("в девяносто девятом году", "в 1999 году"),
    # German: one compound word, or two
    ("Beiträge aus zweitausenddreiundzwanzig", "Beiträge aus 2023"),
    ("seit zweitausendelf", "seit 2011"),
    ("im Jahr neunzehnhundertachtundneunzig", "im Jahr 1998"),
    ("vor zweitausend fünfzehn", "vor 2015"),
    # a version: "three point four", "drei Punkt zwei", "три точка три"
    ("what is new in ruby three point four", "what is new in ruby 3.4"),
    ("Neuerungen in Ruby drei Punkt zwei", "Neuerungen in Ruby 3.2"),
    ("изменения в руби три точка три", "изменения в руби 3.3"),
])
def test_a_year_or_a_version_in_words_is_read_as_digits(said: str, digits: str) -> None:
    assert spelled_numbers_as_digits(said) == digits


@pytest.mark.parametrize("text", [
    # counts, days of a month and numbers that are no year stay words
    "twenty five posts", "the last twenty years", "двадцать четвёртого мая", "двадцать пять статей",
    "zweitausend Artikel", "two thousand articles", "one of the posts", "fünf Beiträge",
    "der zwanzigste Beitrag", "третий пост", "первый год работы", "в десятые годы", "в двадцатых годах",
])
def test_a_count_or_a_day_stays_in_words(text: str) -> None:
    assert spelled_numbers_as_digits(text) == text


@pytest.mark.parametrize(("question", "period"), [
    ("Let's Encrypt posts from twenty twenty four", (date(2024, 1, 1), date(2024, 12, 31))),
    ("что выходило в марте две тысячи двадцать пятого года", (date(2025, 3, 1), date(2025, 3, 31))),
    ("Bundler-Meldungen im Herbst zweitausendzweiundzwanzig", (date(2022, 9, 1), date(2022, 11, 30))),
    ("posts about YJIT before twenty twenty", (None, date(2019, 12, 31))),
])
def test_a_period_with_a_year_in_words_is_read(question: str, period: tuple[date | None, date]) -> None:
    read = read_cues(question, TODAY).period.period
    assert read is not None and (read.date_from, read.date_to) == period, read


def test_the_gateways_date_check_reads_the_year_in_words_too() -> None:
    """The model's (or the fallback's) bounds are checked against the period the question names: a year in
    words is that year there as well, so the right bounds are not rejected as contradicting "May"."""
    question = "что выходило в мае две тысячи двадцать пятого года"
    assert check_against_question(question, date(2025, 5, 1), date(2025, 5, 31), TODAY) is None
    assert check_against_question(question, date(2026, 5, 1), date(2026, 5, 31), TODAY) is not None
