"""The period grammar on a generated matrix (issue 22): anchors x operators x languages, each
phrase inside a request, each expected range computed independently (tests/router/_period_matrix.py).
Every phrase must be read exactly, and nothing of it may stay in the search text."""

from __future__ import annotations

from datetime import date

import pytest

from router.reader import read_cues
from tests.router._period_matrix import GENERATORS, cases

SENTENCE = {"en": "Show posts about Ruby {p}", "ru": "Найди статьи о Ruby {p}", "de": "Zeige Beiträge über Ruby {p}"}
REST = {"en": "Show posts about Ruby", "ru": "Найди статьи о Ruby", "de": "Zeige Beiträge über Ruby"}


@pytest.mark.parametrize("lang", ["en", "ru", "de"])
def test_every_generated_phrasing_is_read_exactly(lang: str) -> None:
    matrix = cases(lang)
    assert len({(c.phrase, c.today) for c in matrix}) >= 500
    wrong = []
    for case in matrix:
        cues = read_cues(SENTENCE[lang].format(p=case.phrase), case.today)
        period = cues.period.period
        got = (period.date_from, period.date_to) if period else None
        if got != (case.date_from, case.date_to) or cues.rest != REST[lang] or cues.period.unread:
            wrong.append(f"{case.phrase!r} (today {case.today}): {got} rest={cues.rest!r} unread={cues.period.unread}"
                         f" expected {(case.date_from, case.date_to)}")
    assert not wrong, f"{len(wrong)} of {len(matrix)} wrong:\n" + "\n".join(wrong[:60])


@pytest.mark.parametrize("generate", GENERATORS, ids=lambda g: g.__name__)
def test_every_anchor_class_is_in_the_matrix_for_every_language(generate: object) -> None:
    for lang in ("en", "ru", "de"):
        assert list(generate(lang)), (generate, lang)  # type: ignore[operator]


@pytest.mark.parametrize("question", [
    "Ruby releases up to and including 2012", "Ruby posts until including 2012", "Ruby-Beiträge bis einschließlich 2012",
    "Ruby-Beiträge bis inklusive 2012",
])
def test_an_inclusive_end_is_an_open_end_through_that_period(question: str) -> None:
    """ "up to and including 2012": every date to the end of 2012, and no leftover words in the topic."""
    from datetime import date

    from router.question_reading import read_question

    reading = read_question(question, date(2026, 3, 4))
    assert (reading.filters["dateFrom"], reading.filters["dateTo"]) == (None, "2012-12-31")
    assert not {"including", "einschließlich", "inklusive", "and"} & set((reading.keywords() or "").lower().split())


@pytest.mark.parametrize(("question", "today", "week"), [
    # a week by its ISO number (round 14): Monday to Sunday, in the year named or the latest that has begun
    ("Zeige Beiträge über Ruby aus KW 12 2026", date(2026, 4, 15), (date(2026, 3, 16), date(2026, 3, 22))),
    ("Zeige Beiträge über Ruby aus der KW 12/2025", date(2026, 4, 15), (date(2025, 3, 17), date(2025, 3, 23))),
    ("Zeige Beiträge über Ruby der 2. Kalenderwoche", date(2026, 4, 15), (date(2026, 1, 5), date(2026, 1, 11))),
    ("Zeige Beiträge über Ruby aus KW20", date(2026, 4, 15), (date(2025, 5, 12), date(2025, 5, 18))),
    ("Show posts about Ruby from week 12 of 2026", date(2026, 4, 15), (date(2026, 3, 16), date(2026, 3, 22))),
    ("Show posts about Ruby from calendar week 3", date(2026, 4, 15), (date(2026, 1, 12), date(2026, 1, 18))),
    ("Найди статьи о Ruby за 12-ю неделю 2025 года", date(2026, 4, 15), (date(2025, 3, 17), date(2025, 3, 23))),
])
def test_a_week_is_read_by_its_number(question: str, today: date, week: tuple[date, date]) -> None:
    period = read_cues(question, today).period.period
    assert period is not None and (period.date_from, period.date_to) == week


@pytest.mark.parametrize("question", ["Show posts about Ruby 3.4 week 2", "Найди статьи о Ruby за 12 недель"])
def test_a_bare_week_number_or_a_count_of_weeks_is_no_numbered_week(question: str) -> None:
    period = read_cues(question, date(2026, 4, 15)).period.period
    assert period is None or period.date_to == date(2026, 4, 15)  # none, or the rolling 12 weeks


@pytest.mark.parametrize("question", [
    "Was gab es im letzten Halbjahr zu Certbot?", "Beiträge über OCSP aus dem vergangenen Halbjahr",
    "Posts about OCSP from the last half-year", "Статьи про OCSP за последнее полугодие",
])
def test_the_last_half_year_is_the_six_months_up_to_today_in_every_language(question: str) -> None:
    period = read_cues(question, date(2025, 12, 1)).period.period  # the convention (docs/router.md): rolling
    assert period is not None and (period.date_from, period.date_to) == (date(2025, 6, 1), date(2025, 12, 1))


def test_the_previous_half_year_in_russian_is_the_calendar_half_before_this_one() -> None:
    period = read_cues("Статьи про OCSP за прошлое полугодие", date(2025, 12, 1)).period.period
    assert period is not None and (period.date_from, period.date_to) == (date(2025, 1, 1), date(2025, 6, 30))


@pytest.mark.parametrize("question", [
    "Ruby posts from the last quarter", "Статьи про Ruby за последний квартал", "Beiträge aus dem letzten Quartal",
    "posts from last quarter", "статьи за прошлый квартал",
])
def test_the_last_quarter_is_the_calendar_quarter_before_this_one(question: str) -> None:
    period = read_cues(question, date(2026, 11, 3)).period.period  # the convention (docs/router.md)
    assert period is not None and (period.date_from, period.date_to) == (date(2026, 7, 1), date(2026, 9, 30))


@pytest.mark.parametrize("question", ["posts from the past quarter", "статьи за последние три месяца"])
def test_the_past_quarter_or_three_months_is_the_window_up_to_today(question: str) -> None:
    period = read_cues(question, date(2026, 11, 3)).period.period
    assert period is not None and period.date_to == date(2026, 11, 3)


@pytest.mark.parametrize(("question", "today", "period"), [
    # a holiday with a fixed date is that day: of the year named, or the latest one
    ("posts from christmas twenty twenty", date(2026, 3, 1), (date(2020, 12, 25), date(2020, 12, 25))),
    ("what went out on new year's day 2024", date(2026, 3, 1), (date(2024, 1, 1), date(2024, 1, 1))),
    ("anything from Valentine's Day last year?", date(2026, 3, 1), (date(2025, 2, 14), date(2025, 2, 14))),
    ("Beiträge von Heiligabend 2018", date(2026, 3, 1), (date(2018, 12, 24), date(2018, 12, 24))),
    ("Beiträge zwischen Weihnachten und Silvester 2021", date(2026, 3, 1), (date(2021, 12, 25), date(2021, 12, 31))),
    ("статьи на католическое Рождество 2019 года", date(2026, 3, 1), (date(2019, 12, 25), date(2019, 12, 25))),
    ("статьи про Ruby на Первомай 2023", date(2026, 3, 1), (date(2023, 5, 1), date(2023, 5, 1))),
])
def test_a_holiday_with_a_fixed_date_is_that_day(question: str, today: date, period: tuple[date, date]) -> None:
    read = read_cues(question, today).period.period
    assert read is not None and (read.date_from, read.date_to) == period, read


@pytest.mark.parametrize(("question", "since"), [
    ("everything on YJIT since Christmas", date(2025, 12, 25)), ("alles zu YJIT seit Neujahr", date(2026, 1, 1)),
    ("всё про YJIT с Нового года", date(2026, 1, 1)), ("всё про YJIT с прошлого Рождества", date(2026, 1, 7)),
])
def test_since_a_holiday_runs_from_its_latest_day(question: str, since: date) -> None:
    read = read_cues(question, date(2026, 3, 1)).period.period
    assert read is not None and read.date_from == since and read.date_to in (date(2026, 3, 1), None), read


@pytest.mark.parametrize("question", ["Happy New Year! 🎉", "С Новым годом!", "Frohe Weihnachten euch allen",
                                      "merry christmas", "What is in the Christmas release of Ruby 3.4?",
                                      "что в рождественском релизе Ruby?"])
def test_a_holiday_greeting_names_no_period(question: str) -> None:
    assert read_cues(question, date(2026, 1, 1)).period.period is None


@pytest.mark.parametrize(("question", "period"), [
    # a vague count: a couple or "ein paar" is two, a few or "einige" three
    ("vor ein paar Wochen gab es was zu YJIT", (date(2026, 4, 27), date(2026, 5, 3))),
    ("Bundler posts from a few months ago", (date(2026, 2, 1), date(2026, 2, 28))),
    ("was kam in den letzten paar Tagen?", (date(2026, 5, 11), date(2026, 5, 13))),
    ("статьи за последние несколько недель", (date(2026, 4, 22), date(2026, 5, 13))),
    ("posts in the last few months about Ruby", (date(2026, 2, 13), date(2026, 5, 13))),
])
def test_a_vague_count_is_read_as_two_or_three(question: str, period: tuple[date, date]) -> None:
    read = read_cues(question, date(2026, 5, 13)).period.period
    assert read is not None and (read.date_from, read.date_to) == period, read
