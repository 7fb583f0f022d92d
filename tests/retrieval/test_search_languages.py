"""SearchArticles over several articles' languages, on the real corpus in PostgreSQL.

The oracle is the corpus file itself (which records are visible, in which language, in which
order), never the search."""

from __future__ import annotations

import asyncpg
import pytest

from tests.retrieval.test_search import all_ids, corpus, search

pytestmark = pytest.mark.usefixtures("shared_corpus")


def visible_in(languages: set[str]) -> list[str]:
    """The visible records of these languages in the search order (newest first, then id)."""
    records = [r for r in corpus() if r.language in languages and r.published is not False and r.hidden is not True]
    records.sort(key=lambda r: (r.created_at, r.id), reverse=True)
    return [r.id for r in records]


@pytest.mark.parametrize("languages", [["de", "ru"], ["en", "de"], ["ru", "en", "de"]])
async def test_several_languages_list_exactly_their_articles_in_the_stable_order(
    db: asyncpg.Pool, languages: list[str]
) -> None:
    ids = await all_ids(db, language=languages)
    assert ids == visible_in(set(languages))
    first = await search(db, language=languages, pageSize=7)
    assert first.total_items == len(ids)
    assert [i.id for i in first.items] == ids[:7]


async def test_text_over_two_languages_is_the_union_of_each_languages_search(db: asyncpg.Pool) -> None:
    for text in ("Ruby", "Sicherheitslücke", "уязвимость", "CVE"):
        both = await all_ids(db, text=text, language=["de", "ru"])
        each = set(await all_ids(db, text=text, language="de")) | set(await all_ids(db, text=text, language="ru"))
        assert set(both) == each and len(both) == len(each), text
        assert (await search(db, text=text, language=["ru", "de"], pageSize=1)).total_items == len(each)


async def test_the_fragment_fallback_honours_the_list(db: asyncpg.Pool) -> None:
    fragment = "Sicherheitslü"  # matches nothing whole: the fallback runs
    assert await all_ids(db, text=fragment, language=["en", "ru"]) == []
    both = await all_ids(db, text=fragment, language=["de", "en"])
    assert both and both == await all_ids(db, text=fragment, language="de")
