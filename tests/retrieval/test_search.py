"""SearchArticles against the real PostgreSQL with the shared ru/en/de corpus.

Words, dates and titles are picked from the corpus at run time, so the tests check behaviour
(stemming, fallback, visibility, paging) rather than remembered counts.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from typing import Any

import asyncpg
import pytest

from infra.corpus import ArticleRecord, read_corpus
from infra.db import search as search_db
from infra.db.articles import count_localizations, set_visibility
from infra.results import ArticlesPage, NormalizedSearch
from infra.settings import Limits
from retrieval.search import normalize_search, search_articles, search_filter
from tests.support.services import SHARED_CORPUS

TODAY = date(2026, 11, 29)

pytestmark = pytest.mark.usefixtures("shared_corpus")


@cache
def corpus() -> tuple[ArticleRecord, ...]:
    return tuple(r for r in read_corpus(SHARED_CORPUS) if isinstance(r, ArticleRecord))


@cache
def corpus_ids() -> frozenset[str]:
    return frozenset(r.id for r in corpus())


@cache
def texts() -> dict[str, str]:
    return {r.id: f"{r.title}\n{r.summary}\n{r.plain_text()}" for r in corpus()}


def full_text(record: ArticleRecord) -> str:
    return texts()[record.id]


def has_word(text: str, word: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.IGNORECASE) is not None


async def search(pool: asyncpg.Pool, **raw: Any) -> ArticlesPage:
    return await search_articles(pool, normalize_search(raw, limits=Limits(), today=TODAY))


async def all_ids(pool: asyncpg.Pool, **raw: Any) -> list[str]:
    ids: list[str] = []
    page = 1
    while True:
        result = await search(pool, **raw, page=page, pageSize=50)
        ids += [item.id for item in result.items]
        if page >= result.total_pages:
            return ids
        page += 1


# Inflected query form -> a different form of the same word that the stemmer must connect.
STEM_PAIRS = {
    "ru": [("релизы", "релиз"), ("уязвимости", "уязвимость"), ("версии", "версия"), ("выпуски", "выпуск"),
           ("сертификаты", "сертификат")],
    "de": [("Sicherheitslücken", "Sicherheitslücke"), ("Versionen", "Version"), ("Zertifikate", "Zertifikat"),
           ("Veröffentlichungen", "Veröffentlichung")],
    "en": [("releases", "released"), ("vulnerabilities", "vulnerability"), ("fixing", "fixes"),
           ("certificates", "certificate"), ("releasing", "release")],
}


def stem_case(language: str) -> tuple[str, ArticleRecord]:
    """A query form and a document that has only another form of that word."""
    for query_form, doc_form in STEM_PAIRS[language]:
        for record in corpus():
            text = full_text(record)
            if record.language == language and has_word(text, doc_form) and not has_word(text, query_form):
                return query_form, record
    raise AssertionError(f"no stemming pair of {language} found in the corpus")


@pytest.mark.parametrize("language", ["ru", "de", "en"])
async def test_stemming_connects_word_forms(db: asyncpg.Pool, language: str) -> None:
    query_form, record = stem_case(language)
    day = record.created_at.date().isoformat()
    for scope in ({"language": language}, {}):  # with a language, and each row in its own language
        result = await search(db, text=query_form, dateFrom=day, dateTo=day, **scope)
        assert record.id in [item.id for item in result.items], (query_form, record.title, scope)
    # And it is the stemmed full-text match that found it, not the fuzzy fallback.
    query = normalize_search({"text": query_form, "language": language}, limits=Limits(), today=TODAY)
    async with search_db.snapshot(db) as conn:
        total = await search_db.count_matches(conn, search_filter(query), search_db.FullTextMatch(query_form))
        found = [r["id"] for r in await search_db.fetch_page(
            conn, search_filter(query), search_db.FullTextMatch(query_form), limit=total, offset=0)]
    assert record.id in found


def test_stemming_pairs_differ_on_the_surface() -> None:
    for pairs in STEM_PAIRS.values():
        assert all(a.lower() != b.lower() for a, b in pairs)


async def test_text_matches_title_summary_and_body_of_the_language(db: asyncpg.Pool) -> None:
    record = next(r for r in corpus() if r.language == "de" and len(r.title.split()) >= 3)
    day = record.created_at.astimezone(UTC).date().isoformat()
    result = await search(db, text=record.title, language="de", dateFrom=day, dateTo=day)
    assert record.id in [item.id for item in result.items]
    assert all(item.language == "de" for item in result.items)
    other = await search(db, text=record.title, language="ru", dateFrom=day, dateTo=day)
    assert record.id not in [item.id for item in other.items]


def partial_word_case() -> tuple[str, ArticleRecord]:
    """A fragment from inside a long title word that no word in the corpus equals."""
    vocabulary = {w.lower() for r in corpus() for w in re.findall(r"\w+", full_text(r))}
    for record in corpus():
        for word in re.findall(r"[^\W\d_]{11,}", record.title):
            fragment = word[1:-2]
            if fragment.lower() not in vocabulary:
                return fragment, record
    raise AssertionError("no long title word in the corpus")


async def test_partial_word_falls_back_to_trigram_match(db: asyncpg.Pool) -> None:
    fragment, record = partial_word_case()
    query = normalize_search({"text": fragment}, limits=Limits(), today=TODAY)
    async with search_db.snapshot(db) as conn:
        assert await search_db.count_matches(conn, search_filter(query), search_db.FullTextMatch(fragment)) == 0
    ids = await all_ids(db, text=fragment)
    assert record.id in ids
    # Every hit really contains the fragment in its title or summary, or a word starting like it
    # (the prefix goes through the stemmer, which may drop the fragment's last letters).
    stem_head = fragment.lower()[: max(3, len(fragment) - 3)]
    for hit in (r for r in corpus() if r.id in set(ids)):
        assert fragment.lower() in f"{hit.title} {hit.summary}".lower() or re.search(
            rf"(?<!\w){re.escape(stem_head)}", full_text(hit).lower()
        ), (fragment, hit.title)


async def test_word_prefix_in_the_body_is_found(db: asyncpg.Pool) -> None:
    """The start of a word that only bodies contain (so not the trigram half) still matches."""
    vocabulary = {w.lower() for r in corpus() for w in re.findall(r"\w+", full_text(r))}
    heads = " ".join(f"{r.title} {r.summary}" for r in corpus()).lower()
    checked = 0
    for record in corpus():
        day = record.created_at.astimezone(UTC).date().isoformat()
        for word in re.findall(r"[^\W\d_]{10,}", record.plain_text()):
            prefix = word[:7]
            if prefix.lower() in vocabulary or prefix.lower() in heads:
                continue
            query = normalize_search({"text": prefix, "language": record.language}, limits=Limits(), today=TODAY)
            async with search_db.snapshot(db) as conn:
                if await search_db.count_matches(conn, search_filter(query), search_db.FullTextMatch(prefix)):
                    continue  # the stemmer made a real word of it: not a fallback case
            result = await search(db, text=prefix, language=record.language, dateFrom=day, dateTo=day)
            assert record.id in [item.id for item in result.items], (prefix, word)
            checked += 1
            if checked == 3:
                return
    raise AssertionError("fewer than three body-only words in the corpus")


async def test_version_strings_match(db: asyncpg.Pool) -> None:
    versioned = next(r for r in corpus() if re.search(r"\b\d+\.\d+\.\d+\b", r.title))
    version = re.search(r"\b\d+\.\d+\.\d+\b", versioned.title).group(0)  # type: ignore[union-attr]
    ids = await all_ids(db, text=version)
    assert versioned.id in ids
    expected = {r.id for r in corpus() if version in full_text(r)}
    assert set(ids) & corpus_ids() <= expected  # "3.4.0" must not match "3.4.1"


async def test_cve_identifier_and_its_prefix_match(db: asyncpg.Pool) -> None:
    record = next(r for r in corpus() if re.search(r"CVE-\d{4}-\d{4,}", r.title))
    cve = re.search(r"CVE-\d{4}-\d{4,}", record.title).group(0)  # type: ignore[union-attr]
    assert record.id in await all_ids(db, text=cve)
    assert record.id in await all_ids(db, text=cve[:-1])


@pytest.fixture
async def hidden_and_unpublished(db: asyncpg.Pool) -> AsyncIterator[tuple[ArticleRecord, ArticleRecord]]:
    """Two corpus rows marked hidden / unpublished for the test, restored afterwards."""
    titles = [r.title for r in corpus()]
    unique = [r for r in corpus() if titles.count(r.title) == 1 and re.search(r"[^\W\d_]{8,}", r.title)]
    hidden, unpublished = unique[3], unique[-3]
    async with db.acquire() as conn:
        assert await set_visibility(conn, [hidden.id], hidden=True) == 1
        assert await set_visibility(conn, [unpublished.id], published=False) == 1
    try:
        yield hidden, unpublished
    finally:
        async with db.acquire() as conn:
            await set_visibility(conn, [hidden.id], hidden=False)
            await set_visibility(conn, [unpublished.id], published=True)


async def test_hidden_and_unpublished_are_never_returned(
    db: asyncpg.Pool, hidden_and_unpublished: tuple[ArticleRecord, ArticleRecord]
) -> None:
    for record in hidden_and_unpublished:
        day = record.created_at.date().isoformat()
        word = max(re.findall(r"[^\W\d_]+", record.title), key=len)
        searches: list[dict[str, Any]] = [
            {"text": record.title},  # exact title, full text
            {"text": record.title, "language": record.language, "dateFrom": day, "dateTo": day},
            {"text": word[1:-1]},  # fragment: the fallback path
            {"dateFrom": day, "dateTo": day},  # no text: pure filter
            {"language": record.language, "sort": "oldest"},
        ]
        for raw in searches:
            assert record.id not in await all_ids(db, **raw), raw
    # Visible again once restored (the fixture's finally) is checked by every other test.


async def test_visible_rows_come_back_after_unhiding(db: asyncpg.Pool) -> None:
    record = corpus()[7]
    day = record.created_at.date().isoformat()
    async with db.acquire() as conn:
        await set_visibility(conn, [record.id], hidden=True)
        try:
            assert record.id not in await all_ids(db, dateFrom=day, dateTo=day)
        finally:
            await set_visibility(conn, [record.id], hidden=False)
    assert record.id in await all_ids(db, dateFrom=day, dateTo=day)


async def test_without_text_it_is_a_pure_filter(db: asyncpg.Pool) -> None:
    # Other suites may add rows of their own: compare on the corpus rows.
    for language in ("ru", "en", "de"):
        ids = await all_ids(db, language=language)
        assert set(ids) & corpus_ids() == {r.id for r in corpus() if r.language == language}
        assert (await search(db, language=language)).total_items == len(ids)
    first, last = date(2015, 1, 1), date(2018, 6, 30)
    expected = {r.id for r in corpus() if first <= r.created_at.astimezone(UTC).date() <= last}
    assert set(await all_ids(db, dateFrom=first.isoformat(), dateTo=last.isoformat())) & corpus_ids() == expected


async def test_date_to_includes_its_whole_day(db: asyncpg.Pool) -> None:
    latest_in_day = max(corpus(), key=lambda r: r.created_at.astimezone(UTC).time())
    assert latest_in_day.created_at.astimezone(UTC).time() > time(0, 0)  # a row after midnight
    day = latest_in_day.created_at.astimezone(UTC).date()
    prev, nxt = (day - timedelta(days=1)).isoformat(), (day + timedelta(days=1)).isoformat()
    assert latest_in_day.id in await all_ids(db, dateTo=day.isoformat(), dateFrom=prev)
    assert latest_in_day.id in await all_ids(db, dateFrom=day.isoformat(), dateTo=day.isoformat())
    assert latest_in_day.id not in await all_ids(db, dateTo=prev)
    assert latest_in_day.id not in await all_ids(db, dateFrom=nxt, dateTo=nxt)
    # Exactly the rows of that UTC day, no more (the bound is the next midnight, exclusive).
    same_day = {r.id for r in corpus() if r.created_at.astimezone(UTC).date() == day}
    assert set(await all_ids(db, dateFrom=day.isoformat(), dateTo=day.isoformat())) & corpus_ids() == same_day


def assert_in_order(items: Sequence[Any], newest: bool) -> None:
    keys = [(item.created_at, item.id) for item in items]
    assert keys == sorted(keys, reverse=newest)


@pytest.mark.parametrize("raw", [
    {"text": "ruby", "dateFrom": "2016-01-01"}, {"language": "en"}, {"text": "Sicherheit", "language": "de"},
])
async def test_pages_are_stable_and_disjoint(db: asyncpg.Pool, raw: dict[str, Any]) -> None:
    first = await search(db, **raw, pageSize=7)
    assert first.total_pages == -(-first.total_items // 7) and first.total_pages >= 3

    async def walk() -> list[list[str]]:
        pages = []
        for n in range(1, first.total_pages + 1):
            page = await search(db, **raw, page=n, pageSize=7)
            assert (page.page, page.page_size, page.total_items) == (n, 7, first.total_items)
            pages.append(page)
        assert_in_order([item for page in pages for item in page.items], newest=True)
        return [[item.id for item in page.items] for page in pages]

    once, again = await walk(), await walk()
    assert once == again
    flat = [i for page in once for i in page]
    assert len(flat) == len(set(flat)) == first.total_items
    oldest = await all_ids(db, **raw, sort="oldest")
    assert oldest == flat[::-1]
    beyond = await search(db, **raw, page=first.total_pages + 1, pageSize=7)
    assert beyond.items == [] and beyond.total_items == first.total_items


async def test_same_timestamp_rows_are_ordered_by_id(db: asyncpg.Pool) -> None:
    by_time: dict[datetime, list[str]] = {}
    for r in corpus():
        by_time.setdefault(r.created_at, []).append(r.id)
    moment, ids = max(by_time.items(), key=lambda kv: len(kv[1]))
    assert len(ids) >= 2
    day = moment.astimezone(UTC).date().isoformat()
    result = await search(db, dateFrom=day, dateTo=day, pageSize=50)
    tied = [item.id for item in result.items if item.created_at == moment]
    assert tied == sorted(ids, reverse=True)


async def test_page_size_51_is_clamped_to_50_and_reported(db: asyncpg.Pool) -> None:
    query = normalize_search({"pageSize": 51}, limits=Limits(), today=TODAY)
    result = await search_articles(db, query)
    assert query.adjustments == ["pageSize 51 clamped to 50"]
    assert result.page_size == 50 and len(result.items) == 50
    assert result.total_pages == -(-result.total_items // 50)


@pytest.mark.parametrize("text", [
    "'; DROP TABLE localizations; --",
    "%' OR '1'='1",
    "%", "_", "%%%___", "\\", "\\'", "a & | ! <-> :* ((( \"",
    "ruby' || pg_sleep(5) || '",
    "$1 $2 ::regclass",
    "\x00ruby\x00",
])
async def test_sql_metacharacters_are_harmless(db: asyncpg.Pool, text: str) -> None:
    async with db.acquire() as conn:
        before = await count_localizations(conn)
    result = await search(db, text=text)
    async with db.acquire() as conn:
        assert await count_localizations(conn) == before
    assert result.total_items <= before
    if not re.search(r"[^\W_]", text):
        # Only punctuation: no words to search, and % or _ must not act as wildcards.
        assert result.total_items == 0
    for item in (i for i in result.items if i.id in corpus_ids()):
        record = next(r for r in corpus() if r.id == item.id)
        assert any(w.lower() in full_text(record).lower() for w in re.findall(r"[^\W_]+", text)), (text, item.title)


async def test_very_long_text_is_harmless_and_reported(db: asyncpg.Pool) -> None:
    words = [w for r in corpus()[:40] for w in r.title.split()]
    text = " ".join(words * 20)
    assert len(text) > 5_000
    query = normalize_search({"text": text}, limits=Limits(), today=TODAY)
    assert query.text is not None and text.startswith(query.text)
    assert query.adjustments == [f"text of {len(text)} characters truncated to {len(query.text)} (max 256)"]
    result = await search_articles(db, query)
    assert result == await search(db, text=query.text)  # what ran is what the query reports
    one_word = await search(db, text="x" * 100_000)
    assert one_word.total_items == 0


async def test_works_on_a_connection_and_inside_a_transaction(db: asyncpg.Pool) -> None:
    query = NormalizedSearch(text="ruby", language="en", page_size=5)
    expected = await search_articles(db, query)
    async with db.acquire() as conn:
        assert await search_articles(conn, query) == expected
        async with conn.transaction():
            assert await search_articles(conn, query) == expected


async def test_items_are_database_records(db: asyncpg.Pool) -> None:
    result = await search(db, text="Sicherheitslücke", language="de", pageSize=5)
    assert result.items
    for item in result.items:
        record = next(r for r in corpus() if r.id == item.id)
        assert (item.title, item.summary, item.language, item.article_id) == (
            record.title, record.summary, record.language, record.article_id)
        assert item.created_at == record.created_at and item.url == record.url


async def test_counts_follow_visibility_content_and_deletion(db: asyncpg.Pool) -> None:
    # totalItems is counted in the narrow `localization_search` copy (migration 0001): every kind of
    # write to `localizations` must reach it in the same transaction.
    word, created = "zqxjvordle", datetime(2003, 3, 3, 12, tzinfo=UTC)
    day = created.date().isoformat()

    async def total() -> int:
        # pageSize 1 with two matching rows: the page is full, so the total comes from the count.
        return (await search(db, text=word, language="en", dateFrom=day, dateTo=day, pageSize=1)).total_items

    async def side_table_matches_visible_rows(conn: asyncpg.Connection) -> None:
        visible = await conn.fetch(
            "SELECT id, language, created_at, search_vector FROM localizations WHERE published AND NOT hidden ORDER BY id"
        )
        copied = await conn.fetch("SELECT id, language, created_at, search_vector FROM localization_search ORDER BY id")
        assert [tuple(r) for r in copied] == [tuple(r) for r in visible]

    ids = ["count-probe-a", "count-probe-b"]
    async with db.acquire() as conn:
        await conn.executemany("INSERT INTO articles (id, created_at) VALUES ($1, $2)", [(i, created) for i in ids])
        await conn.executemany(
            "INSERT INTO localizations (id, article_id, language, title, body_text, created_at, content_hash) "
            "VALUES ($1, $1, 'en', $2, $3, $4, 'probe')",
            [(i, f"Probe {i}", f"A body about {word}.", created) for i in ids],
        )
        try:
            assert await total() == 2
            await side_table_matches_visible_rows(conn)
            await set_visibility(conn, [ids[0]], hidden=True)
            assert await total() == 1
            await set_visibility(conn, [ids[0]], hidden=False)
            await set_visibility(conn, [ids[1]], published=False)
            assert await total() == 1
            await set_visibility(conn, [ids[1]], published=True)
            assert await total() == 2
            await side_table_matches_visible_rows(conn)
            await conn.execute("UPDATE localizations SET body_text = 'Nothing here.' WHERE id = $1", ids[0])
            await conn.execute("UPDATE localizations SET created_at = created_at + interval '2 days' WHERE id = $1",
                               ids[1])
            assert await total() == 0
            await side_table_matches_visible_rows(conn)
        finally:
            await conn.execute("DELETE FROM articles WHERE id = ANY($1::text[])", ids)
        assert await conn.fetchval("SELECT count(*) FROM localization_search WHERE id = ANY($1::text[])", ids) == 0
