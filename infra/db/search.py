"""SQL for article search: visible localizations filtered by language, dates and text.

The rules of search (validation, fallback, paging) live in ``retrieval/search.py``; this module
only turns a filter into SQL. Every value is a bound parameter; the only strings spliced into a
statement are constant fragments chosen here (column lists, configuration names, ``$n``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeAlias

import asyncpg
from asyncpg.pool import PoolConnectionProxy

PoolOrConnection: TypeAlias = asyncpg.Pool | asyncpg.Connection | PoolConnectionProxy

# Each language's own text-search configuration (the generated `search_vector` uses the same).
TS_CONFIG = {"ru": "russian", "de": "german", "en": "english"}

# The text the trigram half of the fallback matches; it must equal the expression of the GIN index
# `localizations_search_trgm` (migration 0001) or the planner cannot use that index. Title and
# summary only: re-checking ILIKE over whole bodies costs seconds when a fragment is common.
TRIGRAM_TEXT = "(l.title || ' ' || l.summary)"

_COLUMNS = "l.id, l.article_id, l.language, l.title, l.summary, l.created_at, l.url, l.slug"


@dataclass(frozen=True)
class SearchFilter:
    languages: Sequence[str] | None = None  # None: every language
    created_from: datetime | None = None  # inclusive
    created_before: datetime | None = None  # exclusive
    newest_first: bool = True


@dataclass(frozen=True)
class FullTextMatch:
    """Stemmed full-text match (websearch syntax) in each row's own language configuration."""

    text: str


@dataclass(frozen=True)
class PartialMatch:
    """Every term occurs as a fragment: inside the title or summary (trigram index), or as the
    start of a word anywhere, body included (prefix query on the full-text index)."""

    terms: Sequence[str]


@dataclass(frozen=True)
class AnyWordsMatch:
    """Relaxed full text: at least one of ``words`` matches; rows holding more of them come first,
    then by rank (ts_rank of the words), then the stable date order."""

    words: Sequence[str]


TextMatch = FullTextMatch | PartialMatch | AnyWordsMatch


def like_escape(term: str) -> str:
    """A term matched literally by LIKE/ILIKE (its own %, _ and \\ are not wildcards)."""
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def prefix_query(term: str) -> str:
    """A to_tsquery() operand matching words that start with ``term`` (quoted: operators are literal)."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "':*"


@dataclass
class _Statement:
    params: list[Any] = field(default_factory=list)
    where: list[str] = field(default_factory=lambda: ["l.published", "NOT l.hidden"])

    def bind(self, value: Any) -> str:
        self.params.append(value)
        return f"${len(self.params)}"


def _languages(flt: SearchFilter) -> list[str]:
    languages = list(TS_CONFIG) if flt.languages is None else sorted(set(flt.languages))
    if not languages or any(lang not in TS_CONFIG for lang in languages):
        raise ValueError(f"unsupported language filter {flt.languages!r}")
    return languages


def _where(flt: SearchFilter, match: TextMatch | None) -> _Statement:
    stmt = _Statement()
    languages = _languages(flt)
    if flt.languages is not None:
        if len(languages) == 1:
            # A plain equality keeps the (language, created_at, id) index's order usable for the page.
            stmt.where.append(f"l.language = {stmt.bind(languages[0])}")
        else:
            stmt.where.append(f"l.language = ANY({stmt.bind(languages)}::text[])")
    if flt.created_from is not None:
        stmt.where.append(f"l.created_at >= {stmt.bind(flt.created_from)}")
    if flt.created_before is not None:
        stmt.where.append(f"l.created_at < {stmt.bind(flt.created_before)}")
    if isinstance(match, FullTextMatch):
        stmt.where.append(fulltext_condition(stmt.bind(match.text), languages, match.text))
    elif isinstance(match, AnyWordsMatch):
        if not match.words:
            raise ValueError("a relaxed match needs at least one word")
        stmt.where.append("(" + " OR ".join(fulltext_condition(stmt.bind(w), languages, w) for w in match.words) + ")")
    elif isinstance(match, PartialMatch):
        if not match.terms:
            raise ValueError("a partial match needs at least one term")
        # Prefixes go through the row language's stemmer and through `simple` (no stemming):
        # "Sicherheitslü" only matches stemmed, "encry" only unstemmed.
        configs = [TS_CONFIG[lang] for lang in languages]
        for term in match.terms:
            pattern = stmt.bind("%" + like_escape(term) + "%")
            prefix = stmt.bind(prefix_query(term))
            tsquery = " || ".join(f"to_tsquery('{cfg}', {prefix})" for cfg in ["simple", *configs])
            stmt.where.append(f"({TRIGRAM_TEXT} ILIKE {pattern} OR l.search_vector @@ ({tsquery}))")
    return stmt


def _query(text: str, own: str, configs: Sequence[str] | None = None) -> str:
    """``text`` as a tsquery under the row language's configuration OR'ed with the other languages':
    a cross-language text (German words around an English name over English rows) is not
    blocked by one language's stop words ("und", "über" are words to `english`); each row's
    vector stays in its own configuration, so its own stemmer still decides word forms.
    ``configs``: the configurations to parse it under (default: every language's)."""
    configs = configs or [own, *(cfg for cfg in TS_CONFIG.values() if cfg != own)]
    return "(" + " || ".join(f"websearch_to_tsquery('{cfg}', {text})" for cfg in configs) + ")"


def distinct_parses(value: str, own: str) -> list[str]:
    """The configurations whose parses of ``value`` can differ, ``own`` first: a parse another one
    equals adds nothing to the OR but doubles the index work (the search's p95 did, measured in
    bench/search_bench.py). When every letter is ASCII, `russian` parses as `english` (Postgres
    maps every ASCII token type of `russian` to `english_stem`); when every letter is Cyrillic,
    `english` and `german` parse alike (neither stems Cyrillic nor lists it as a stop word; the
    same for every Cyrillic word of the shared corpus, 6,923)."""
    configs = [own, *(cfg for cfg in TS_CONFIG.values() if cfg != own)]
    letters = [ch for ch in value if ch.isalpha()]
    if all(ch.isascii() for ch in letters):
        alike = ("russian", "english")
    elif all("а" <= ch.lower() <= "я" or ch.lower() == "ё" for ch in letters):
        alike = ("german", "english")
    else:
        return configs
    drop = alike[0] if alike[0] != own else alike[1]
    return [cfg for cfg in configs if cfg != drop]


def fulltext_condition(text: str, languages: Sequence[str], value: str | None = None) -> str:
    """The rows of ``languages`` whose vector matches the bound ``text`` (a ``$n``); with its
    ``value``, parsed only under the configurations that can differ (`distinct_parses`)."""
    per_language = []
    for lang in languages:
        own = TS_CONFIG[lang]
        configs = distinct_parses(value, own) if value is not None else None
        per_language.append(f"(l.language = '{lang}' AND l.search_vector @@ {_query(text, own, configs)})")
    return "(" + " OR ".join(per_language) + ")"


def _words_present(stmt: _Statement, words: Sequence[str], languages: Sequence[str]) -> str:
    """How many of ``words`` a row holds (each bound again: the ORDER BY comes after the WHERE)."""
    return " + ".join(f"({fulltext_condition(stmt.bind(w), languages, w)})::int" for w in words)


def _rank(stmt: _Statement, words: Sequence[str], languages: Sequence[str]) -> str:
    anyof = stmt.bind(" or ".join(words))  # websearch syntax: any of the words
    cases = " ".join(
        f"WHEN '{lang}' THEN ts_rank(l.search_vector, {_query(anyof, TS_CONFIG[lang])})" for lang in languages
    )
    return f"CASE l.language {cases} END"


@asynccontextmanager
async def snapshot(pool_or_conn: PoolOrConnection) -> AsyncIterator[asyncpg.Connection]:
    """One read-only, repeatable-read transaction, so a count and its page see the same rows.

    Plans are made per call (custom plans): a generic plan cannot tell a rare term (use the
    GIN index) from a common one (walk the date index), and a wrong guess costs 100x.
    """
    if isinstance(pool_or_conn, asyncpg.Pool):
        async with pool_or_conn.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
            yield conn
    elif pool_or_conn.is_in_transaction():
        # The caller's transaction decides isolation; the setting still ends with it.
        await pool_or_conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
        yield pool_or_conn
    else:
        async with pool_or_conn.transaction(isolation="repeatable_read", readonly=True):
            await pool_or_conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
            yield pool_or_conn


_VISIBLE = ("l.published", "NOT l.hidden")


async def count_matches(conn: asyncpg.Connection, flt: SearchFilter, match: TextMatch | None = None) -> int:
    stmt = _where(flt, match)
    if isinstance(match, PartialMatch):  # title/summary fragments: only `localizations` has them
        table, where = "localizations", stmt.where
    else:
        # `localization_search` holds exactly the visible rows' language, date and vector (same
        # column names), narrow enough to count from memory (migration 0001). Same snapshot, same rows.
        table, where = "localization_search", [c for c in stmt.where if c not in _VISIBLE] or ["true"]
    sql = f"SELECT count(*) FROM {table} l WHERE " + " AND ".join(where)  # noqa: S608 (constant fragments)
    return int(await conn.fetchval(sql, *stmt.params))


async def count_words(conn: asyncpg.Connection, flt: SearchFilter, words: Sequence[str]) -> list[int]:
    """For each of ``words``, how many rows of the filter match it alone (one statement)."""
    stmt = _where(flt, None)
    languages = _languages(flt)
    where = [c for c in stmt.where if c not in _VISIBLE] or ["true"]
    counts = ", ".join(f"count(*) FILTER (WHERE {fulltext_condition(stmt.bind(w), languages, w)})" for w in words)
    sql = f"SELECT {counts} FROM localization_search l WHERE " + " AND ".join(where)  # noqa: S608 (constant fragments)
    row = await conn.fetchrow(sql, *stmt.params)
    assert row is not None
    return [int(value) for value in row]


async def fetch_page(
    conn: asyncpg.Connection, flt: SearchFilter, match: TextMatch | None = None, *, limit: int, offset: int
) -> list[asyncpg.Record]:
    """One page in the stable order: creation date, then id, both in the sort direction."""
    stmt = _where(flt, match)
    direction = "DESC" if flt.newest_first else "ASC"
    order = f"l.created_at {direction}, l.id {direction}"
    if isinstance(match, AnyWordsMatch):
        languages = _languages(flt)
        order = (f"{_words_present(stmt, match.words, languages)} DESC, "
                 f"{_rank(stmt, match.words, languages)} DESC, {order}")
    sql = (
        f"SELECT {_COLUMNS} FROM localizations l WHERE {' AND '.join(stmt.where)} "  # noqa: S608 (constant fragments)
        f"ORDER BY {order} LIMIT {stmt.bind(limit)} OFFSET {stmt.bind(offset)}"
    )
    return list(await conn.fetch(sql, *stmt.params))
