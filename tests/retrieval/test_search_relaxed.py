"""Search text that can match its articles (issue 23), on the real corpus in PostgreSQL: a topic
no article holds whole is relaxed to the words some article holds, ranked by how many, and says
so; a topic in another language than the articles finds them. The oracle is a direct scan of
the corpus file (the records whose text holds the word), never the search."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import asyncpg
import pytest

from infra.corpus import ArticleRecord
from retrieval.search import relax_words
from tests.retrieval.test_search import all_ids, corpus, full_text, search

pytestmark = pytest.mark.usefixtures("shared_corpus")

LACKING = "zqxwnotices"  # a word no article of the corpus holds (checked below)


def holds(record: ArticleRecord, word: str) -> bool:
    # Whole words outside URLs and paths (the text-search parser makes those one token).
    return re.search(rf"(?<![\w/.]){re.escape(word)}(?![\w/])", full_text(record), re.IGNORECASE) is not None


def oracle(language: str | Sequence[str], *words: str) -> set[str]:
    """Visible records of ``language`` holding every one of ``words``."""
    languages = {language} if isinstance(language, str) else set(language)
    return {r.id for r in corpus()
            if r.language in languages and r.published is not False and r.hidden is not True
            and all(holds(r, w) for w in words)}


def test_the_lacking_word_is_in_no_article() -> None:
    assert not any(LACKING in full_text(r).casefold() for r in corpus())


async def pages(pool: asyncpg.Pool, size: int, **raw: Any) -> list[list[str]]:
    first = await search(pool, **raw, pageSize=size)
    out = [[i.id for i in first.items]]
    for n in range(2, first.total_pages + 1):
        out.append([i.id for i in (await search(pool, **raw, page=n, pageSize=size)).items])
    return out


@pytest.mark.parametrize(("language", "word"), [("en", "REXML"), ("ru", "REXML"), (["de", "en"], "zlib")])
async def test_a_topic_with_a_word_the_collection_lacks_finds_the_articles_with_the_others(
    db: asyncpg.Pool, language: Any, word: str
) -> None:
    expected = oracle(language, word)
    assert expected
    text = f"{word} {LACKING}"
    ids = await all_ids(db, text=text, language=language)
    assert set(ids) == expected and len(ids) == len(expected)
    first = await search(db, text=text, language=language, pageSize=5)
    assert first.total_items == len(expected)
    assert first.adjustments == [f"no article has all of '{text}'; showing those with '{word}'"]


async def test_articles_holding_more_of_the_words_come_first(db: asyncpg.Pool) -> None:
    both = oracle("en", "REXML", "CVE-2024-35176")
    rexml = oracle("en", "REXML")
    assert both and rexml - both
    text = f"REXML CVE-2024-35176 {LACKING}"
    ids = await all_ids(db, text=text, language="en")
    assert set(ids[: len(both)]) == both and set(ids) == rexml
    first = await search(db, text=text, language="en", pageSize=50)
    assert first.adjustments == [
        f"no article has all of '{text}'; showing those with 'REXML' or 'CVE-2024-35176' (most of these words first)"
    ]


async def test_relaxed_pages_are_stable_and_disjoint(db: asyncpg.Pool) -> None:
    raw = {"text": f"zlib REXML {LACKING}", "language": "en"}
    by_three = await pages(db, 3, **raw)
    assert by_three == await pages(db, 3, **raw)  # the same page N every time
    flat = [i for page in by_three for i in page]
    assert len(flat) == len(set(flat)) == len(oracle("en", "zlib") | oracle("en", "REXML"))
    assert flat == [i for page in await pages(db, 50, **raw) for i in page]  # page size does not reorder
    oldest = [i for page in await pages(db, 50, **raw, sort="oldest") for i in page]
    assert set(oldest) == set(flat)


async def test_nothing_is_relaxed_when_all_words_match_or_none_occurs(db: asyncpg.Pool) -> None:
    whole = await search(db, text="REXML CVE-2024-35176", language="en")
    assert whole.total_items == len(oracle("en", "REXML", "CVE-2024-35176")) and whole.adjustments == []
    nothing = await search(db, text=f"{LACKING} zqxwother", language="en")
    assert nothing.total_items == 0 and nothing.adjustments == []
    single = await search(db, text=LACKING)
    assert single.total_items == 0 and single.adjustments == []


async def test_a_topic_in_another_language_than_the_articles_finds_them(db: asyncpg.Pool) -> None:
    # German words around a name, English articles: the German word is in none of them.
    text = "REXML Sicherheitslücken"
    assert not oracle("en", "Sicherheitslücken")
    ids = await all_ids(db, text=text, language="en")
    assert set(ids) == oracle("en", "REXML")
    assert (await search(db, text=text, language="en")).adjustments == [
        f"no article has all of '{text}'; showing those with 'REXML'"]
    # German stop words in the text do not block English articles (each language's configuration):
    # "über" and "die" are not English stop words, so the English configuration alone found nothing.
    found = await all_ids(db, text="über die REXML", language="en")
    assert set(found) == oracle("en", "REXML")
    assert (await search(db, text="über die REXML", language="en")).adjustments == []  # matched whole, not relaxed


def test_relax_words_skip_web_search_operators() -> None:
    assert relax_words('"REXML" or -zlib CVE-2024-35176, rexml') == ["REXML", "CVE-2024-35176"]
