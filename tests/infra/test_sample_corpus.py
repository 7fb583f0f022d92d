"""The project's own sample corpus (infra/sample_corpus/articles.jsonl): shape, spread, flags,
translations, that it imports cleanly, and that it was not copied from the shared corpus."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter, defaultdict
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest

from infra.corpus import SAMPLE_CORPUS, ArticleRecord, BadLine, read_corpus
from infra.text import to_plain_text
from tests.infra.test_import import run_import
from tests.support import services

REQUIRED = {"id", "language", "title", "summary", "body_html_or_md", "body_format", "created_at", "url", "kind",
            "author", "tags", "translation_key", "published", "hidden"}


@pytest.fixture(scope="module")
def raw() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_every_line_is_a_valid_record_with_all_fields(raw: list[dict[str, Any]]) -> None:
    parsed = list(read_corpus(SAMPLE_CORPUS))
    assert not [p for p in parsed if isinstance(p, BadLine)]
    for record in raw:
        assert REQUIRED <= record.keys(), record["id"]
        assert record["body_format"] == "html"
        assert isinstance(record["published"], bool) and isinstance(record["hidden"], bool)
        assert record["translation_key"] and record["author"] and record["tags"]
        assert record["url"].startswith("https://") and record["url"].rstrip("/").endswith(record["translation_key"])
    assert len({r["id"] for r in raw}) == len(raw)
    assert len({(r["translation_key"], r["language"]) for r in raw}) == len(raw)  # one version per language


def test_counts_and_languages(raw: list[dict[str, Any]]) -> None:
    per_language = Counter(r["language"] for r in raw)
    assert len(raw) >= 90
    assert set(per_language) == {"ru", "en", "de"}
    assert min(per_language.values()) >= 30, per_language


def test_dates_spread_over_2023_to_2026_and_none_in_the_future(raw: list[dict[str, Any]]) -> None:
    dates = [datetime.fromisoformat(r["created_at"].replace("Z", "+00:00")) for r in raw]
    assert all(d.tzinfo is not None and d.utcoffset() == UTC.utcoffset(None) for d in dates)
    assert min(dates) >= datetime(2023, 1, 1, tzinfo=UTC)
    assert max(dates) < datetime(2026, 11, 30, tzinfo=UTC)
    per_year = Counter(d.year for d in dates)
    assert set(per_year) == {2023, 2024, 2025, 2026}
    assert min(per_year.values()) >= 15, per_year  # spread, not clustered in one year


def test_some_unpublished_and_some_hidden(raw: list[dict[str, Any]]) -> None:
    unpublished = [r for r in raw if not r["published"]]
    hidden = [r for r in raw if r["hidden"]]
    assert len(unpublished) >= 2 and len(hidden) >= 2
    assert len({r["language"] for r in unpublished + hidden}) == 3
    # A hidden translation of a story whose other versions are visible (search must still hide it).
    by_key = defaultdict(list)
    for r in raw:
        by_key[r["translation_key"]].append(r)
    assert any(len(by_key[r["translation_key"]]) > 1 for r in unpublished + hidden)


def test_several_stories_exist_in_more_than_one_language(raw: list[dict[str, Any]]) -> None:
    languages = defaultdict(set)
    for r in raw:
        languages[r["translation_key"]].add(r["language"])
    multi = [key for key, langs in languages.items() if len(langs) > 1]
    all_three = [key for key, langs in languages.items() if langs == {"ru", "en", "de"}]
    assert len(multi) >= 10 and len(all_three) >= 5
    # Translations are different texts, not copies: titles differ between languages of one story.
    for key in multi:
        titles = [r["title"] for r in raw if r["translation_key"] == key]
        assert len(set(titles)) == len(titles), key


def test_bodies_are_html_with_several_paragraphs(raw: list[dict[str, Any]]) -> None:
    for r in raw:
        assert r["body_html_or_md"].count("<p>") >= 2, r["id"]
        assert len(to_plain_text(r["body_html_or_md"], "html").split()) >= 40, r["id"]
        assert "<" not in to_plain_text(r["body_html_or_md"], "html")


def test_newcomer_questions_have_material(raw: list[dict[str, Any]]) -> None:
    visible = [r for r in raw if r["published"] and not r["hidden"]]
    german_dotnet_2026 = [r for r in visible if r["language"] == "de" and "dotnet" in r["tags"]
                          and r["created_at"].startswith("2026")]
    assert len(german_dotnet_2026) >= 3  # "Найди статьи о .NET на немецком за 2026 год"
    aca_english = [r for r in visible if r["language"] == "en" and "Azure Container Apps" in r["body_html_or_md"]]
    assert len(aca_english) >= 3  # "How was Azure Container Apps used?"
    openai = [r for r in visible if "openai" in r["tags"]]
    assert len({r["translation_key"] for r in openai}) >= 5 and len({r["language"] for r in openai}) == 3


def test_not_copied_from_the_shared_corpus(raw: list[dict[str, Any]]) -> None:
    shared = services.SHARED_CORPUS.read_text(encoding="utf-8")
    shared_titles = {json.loads(line)["title"] for line in shared.splitlines() if line.strip()}
    assert not shared_titles & {r["title"] for r in raw}
    for r in raw:  # no sentence of ours appears verbatim over there
        for sentence in re.split(r"(?<=[.!?])\s+", to_plain_text(r["body_html_or_md"], "html")):
            if len(sentence) > 60:
                assert sentence not in shared, (r["id"], sentence)


def test_imports_cleanly_and_keeps_flags(fresh_dsn: str, raw: list[dict[str, Any]]) -> None:
    first = run_import(fresh_dsn, SAMPLE_CORPUS, "--strict")
    assert first.returncode == 0, first.stderr
    assert f"{len(raw)} inserted" in first.stderr

    async def fetch() -> tuple[list[asyncpg.Record], int]:
        conn = await asyncpg.connect(fresh_dsn)
        try:
            rows = await conn.fetch("SELECT id, article_id, language, published, hidden FROM localizations")
            return rows, int(await conn.fetchval("SELECT count(*) FROM articles"))
        finally:
            await conn.close()

    rows, stories = asyncio.run(fetch())
    expected = {r["id"]: r for r in raw}
    assert {row["id"] for row in rows} == set(expected)
    for row in rows:
        source = expected[row["id"]]
        assert (row["article_id"], row["language"], row["published"], row["hidden"]) == (
            source["translation_key"], source["language"], source["published"], source["hidden"])
    assert stories == len({r["translation_key"] for r in raw})

    second = run_import(fresh_dsn, SAMPLE_CORPUS, "--strict")
    assert second.returncode == 0, second.stderr
    assert f"0 inserted, 0 updated, {len(raw)} unchanged" in second.stderr


def test_records_parse_as_article_records(raw: list[dict[str, Any]]) -> None:
    records = [ArticleRecord.model_validate(r) for r in raw]
    assert all(rec.slug == rec.translation_key for rec in records)
