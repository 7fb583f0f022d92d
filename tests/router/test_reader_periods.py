"""The period grammar on a generated matrix (issue 22): anchors x operators x languages, each
phrase inside a request, each expected range computed independently (tests/router/_period_matrix.py).
Every phrase must be read exactly, and nothing of it may stay in the search text."""

from __future__ import annotations

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
