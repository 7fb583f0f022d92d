"""The text-search parses a search ORs together (infra/db/search.py `distinct_parses`): a parse
another one equals is left out, and only then. The equivalences are checked in the real
PostgreSQL over the shared corpus's own words; the matches are compared with every parse kept."""

from __future__ import annotations

import re

import asyncpg
import pytest

from infra.db import search as search_db
from tests.retrieval.test_search import all_ids, corpus

pytestmark = pytest.mark.usefixtures("shared_corpus")

ALL = ["russian", "german", "english"]


def test_a_parse_that_equals_another_is_left_out_and_only_then() -> None:
    assert search_db.distinct_parses("Kubernetes Helm-Charts 2024", "english") == ["english", "german"]
    assert search_db.distinct_parses("Kubernetes", "russian") == ["russian", "german"]  # own first, english alike
    assert search_db.distinct_parses("Docker", "german") == ["german", "english"]
    assert search_db.distinct_parses("уязвимости Ёжик", "russian") == ["russian", "english"]
    assert search_db.distinct_parses("уязвимости", "german") == ["german", "russian"]
    assert search_db.distinct_parses("уязвимости", "english") == ["english", "russian"]
    for mixed in ("über Docker", "Sicherheitslücke", "Ruby уязвимости", "Café"):
        assert sorted(search_db.distinct_parses(mixed, "english")) == sorted(ALL), mixed


async def test_the_parses_left_out_equal_the_ones_kept_for_every_word_of_the_corpus(db: asyncpg.Pool) -> None:
    words = {w for r in corpus() for w in re.findall(r"\w[\w.+#-]*", f"{r.title} {r.summary or ''}")}
    ascii_words = sorted(w for w in words if all(ch.isascii() for ch in w if ch.isalpha()))
    cyrillic = sorted(w for w in words if w.isalpha() and all("а" <= ch.lower() <= "я" or ch.lower() == "ё" for ch in w))
    assert len(ascii_words) > 1000 and len(cyrillic) > 1000
    async with db.acquire() as conn:
        await conn.execute("SET client_min_messages = warning")  # stop words alone: a NOTICE each
        differ = await conn.fetch(
            "SELECT w FROM unnest($1::text[]) AS w "
            "WHERE websearch_to_tsquery('russian', w)::text <> websearch_to_tsquery('english', w)::text", ascii_words)
        assert [r["w"] for r in differ] == []
        differ = await conn.fetch(
            "SELECT w FROM unnest($1::text[]) AS w "
            "WHERE websearch_to_tsquery('german', w)::text <> websearch_to_tsquery('english', w)::text", cyrillic)
        assert [r["w"] for r in differ] == []


@pytest.mark.parametrize("text", ["Ruby", "Kubernetes Helm", "уязвимость", "релиз Ruby", "Sicherheitslücke",
                                  "über Docker", "CVE-2024"])
async def test_searches_match_what_every_parse_matched(
    db: asyncpg.Pool, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    languages = ["ru", "en", "de"]
    deduped = await all_ids(db, text=text, language=languages)
    monkeypatch.setattr(search_db, "distinct_parses", lambda value, own: [own, *(c for c in ALL if c != own)])
    assert deduped == await all_ids(db, text=text, language=languages)
