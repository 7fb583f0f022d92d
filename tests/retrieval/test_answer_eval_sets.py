"""The shipped answer-evaluation sets (retrieval/data/answer_eval_{dev,test,fresh,blind,fourth,periods}.jsonl) hold labels
that the real corpus supports: the format `turnout eval-answers` reads, checked against the articles."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from infra.corpus import ArticleRecord, read_corpus
from tests.support import services

DATA = Path(__file__).resolve().parents[2] / "retrieval" / "data"
LANGUAGES = {"ru", "en", "de"}
TOOLS = {"AskArticles", "SearchAndAskArticles"}
FIELDS = {"id", "split", "question", "today", "tool", "questionLanguage", "answerLanguage", "language",
          "articleIds", "keyFacts", "tags"}


def _rows(split: str) -> list[dict[str, Any]]:
    text = (DATA / f"answer_eval_{split}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def corpus() -> dict[str, ArticleRecord]:
    return {r.id: r for r in read_corpus(services.SHARED_CORPUS) if isinstance(r, ArticleRecord)}


def _text(record: ArticleRecord) -> str:
    return f"{record.title}\n{record.summary}\n{record.body_html_or_md}".lower()


def test_both_halves_have_the_shape_the_command_reads() -> None:
    dev, test = _rows("dev"), _rows("test")
    assert not {r["id"] for r in dev} & {r["id"] for r in test}
    assert not {r["question"] for r in dev} & {r["question"] for r in test}
    for split, rows in (("dev", dev), ("test", test)):
        assert len(rows) >= 40
        assert len({r["id"] for r in rows}) == len(rows)
        by_language = Counter(r["questionLanguage"] for r in rows)
        assert by_language.keys() == LANGUAGES and min(by_language.values()) >= len(rows) // 4, by_language
        tags = Counter(t for r in rows for t in r["tags"])
        assert tags["combined"] >= 5 and tags["cross_language"] >= 3 and tags["answer_language"] >= 3, tags
        assert 2 <= tags["no_answer"] <= 3, tags
        for row in rows:
            assert FIELDS <= row.keys() and row["split"] == split, row["id"]
            assert row["tool"] in TOOLS and ("search" in row) == (row["tool"] == "SearchAndAskArticles"), row["id"]
            assert {row["questionLanguage"], row["answerLanguage"]} <= LANGUAGES, row["id"]
            assert row["language"] in LANGUAGES | {None}, row["id"]
            date.fromisoformat(row["today"])
            assert row["questionLanguage"] in row["tags"], row["id"]
            assert ("answer_language" in row["tags"]) == (row["answerLanguage"] != row["questionLanguage"]), row["id"]
            assert (not row["articleIds"]) == (not row["keyFacts"]) == ("no_answer" in row["tags"]), row["id"]
            assert not row["keyFacts"] or 2 <= len(row["keyFacts"]) <= 4, row["id"]
            assert all(fact and all(isinstance(form, str) and form for form in fact) for fact in row["keyFacts"])


def _later_set(split: str, earlier_splits: tuple[str, ...]) -> list[dict[str, Any]]:
    """``split``'s rows, checked to be new: their own split and fields, no id and no answering article of
    an earlier set (written blind after the earlier sets were run)."""
    later, earlier = _rows(split), [r for s in earlier_splits for r in _rows(s)]
    assert all(r["split"] == split and FIELDS <= r.keys() for r in later)
    assert not {r["id"] for r in later} & {r["id"] for r in earlier}
    assert not {i for r in later for i in r["articleIds"]} & {i for r in earlier for i in r["articleIds"]}
    return later


@pytest.mark.parametrize(("split", "earlier_splits"), [("fresh", ("dev", "test")), ("blind", ("dev", "test", "fresh")),
                                                      ("fourth", ("dev", "test", "fresh", "blind")),
                                                      ("sixth", ("dev", "test", "fresh", "blind", "fourth", "periods")),
                                                      ("seventh", ("dev", "test", "fresh", "blind", "fourth", "periods",
                                                                   "sixth")),
                                                      ("eighth", ("dev", "test", "fresh", "blind", "fourth", "periods",
                                                                  "sixth", "seventh"))])
def test_a_later_set_is_new_and_has_the_shape_the_command_reads(split: str, earlier_splits: tuple[str, ...]) -> None:
    later = _later_set(split, earlier_splits)
    assert len(later) >= 30
    tags = Counter(t for r in later for t in r["tags"])
    assert tags["cross_language"] >= 5 and tags["answer_language"] >= 3 and tags["combined"] >= 5, tags
    assert 2 <= tags["no_answer"] <= 3, tags
    by_language = Counter(r["questionLanguage"] for r in later)
    assert by_language.keys() == LANGUAGES and min(by_language.values()) >= len(later) // 4, by_language


def test_the_period_set_is_new_and_every_question_names_a_period() -> None:
    later = _later_set("periods", ("dev", "test", "fresh", "blind", "fourth"))
    assert len(later) == 30
    assert all(r["tool"] == "AskArticles" and "period" in r["tags"] for r in later)
    tags = Counter(t for r in later for t in r["tags"])
    assert tags["cross_language"] >= 5 and tags["answer_language"] >= 3 and tags["no_answer"] == 3, tags
    assert Counter(r["questionLanguage"] for r in later) == {"ru": 10, "en": 10, "de": 10}


@pytest.mark.parametrize("split", ["dev", "test", "fresh", "blind", "fourth", "periods", "sixth", "seventh", "eighth"])
def test_labels_point_at_articles_that_hold_the_key_facts(split: str, corpus: dict[str, ArticleRecord]) -> None:
    for row in _rows(split):
        records = [corpus[i] for i in row["articleIds"]]  # KeyError names an id the corpus lacks
        if row["language"] is not None:
            assert all(r.language == row["language"] for r in records), row["id"]
        languages = {r.language for r in records}
        if records:
            assert ("cross_language" in row["tags"]) == (row["questionLanguage"] not in languages), row["id"]
        for fact in row["keyFacts"]:
            assert any(form.lower() in _text(r) for r in records for form in fact), (row["id"], fact)
        if row["tool"] == "SearchAndAskArticles":
            _check_search(row, records)


def _check_search(row: dict[str, Any], records: list[ArticleRecord]) -> None:
    search = row["search"]
    assert search.keys() >= {"text", "language", "dateFrom", "dateTo"} and search["language"] == row["language"]
    for record in records:  # the answering articles are on the page the implied search returns
        day = record.created_at.date()
        assert not search["dateFrom"] or day >= date.fromisoformat(search["dateFrom"]), row["id"]
        assert not search["dateTo"] or day <= date.fromisoformat(search["dateTo"]), row["id"]
    assert search["dateTo"] is None or search["dateTo"] <= row["today"], row["id"]
