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


TextMatch = FullTextMatch | PartialMatch


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


def _where(flt: SearchFilter, match: TextMatch | None) -> _Statement:
    stmt = _Statement()
    languages = list(TS_CONFIG) if flt.languages is None else sorted(set(flt.languages))
    if flt.languages is not None:
        unknown = [lang for lang in languages if lang not in TS_CONFIG]
        if unknown or not languages:
            raise ValueError(f"unsupported language filter {list(flt.languages)!r}")
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
        text = stmt.bind(match.text)
        # Each row is matched by its own language's stemmer.
        per_language = [
            f"(l.language = '{lang}' AND l.search_vector @@ websearch_to_tsquery('{TS_CONFIG[lang]}', {text}))"
            for lang in languages
        ]
        stmt.where.append("(" + " OR ".join(per_language) + ")")
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


async def fetch_page(
    conn: asyncpg.Connection, flt: SearchFilter, match: TextMatch | None = None, *, limit: int, offset: int
) -> list[asyncpg.Record]:
    """One page in the stable order: creation date, then id, both in the sort direction."""
    stmt = _where(flt, match)
    direction = "DESC" if flt.newest_first else "ASC"
    sql = (
        f"SELECT {_COLUMNS} FROM localizations l WHERE {' AND '.join(stmt.where)} "  # noqa: S608 (constant fragments)
        f"ORDER BY l.created_at {direction}, l.id {direction} "
        f"LIMIT {stmt.bind(limit)} OFFSET {stmt.bind(offset)}"
    )
    return list(await conn.fetch(sql, *stmt.params))
