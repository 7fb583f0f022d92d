"""Listing the `jobs` table: one key's (or, for an admin, every key's) jobs newest first, filtered,
in keyset pages (`GET /v1/jobs`, MCP `tasks/list`, bulk retry runs).

Pages are keyset, not offset: `after` = (created_at, id) of the last job of the previous page, so
a page costs the same at row 10 and row 1,000,000, and jobs added meanwhile (newer, above the
cursor) never shift a page: no duplicates, no gaps. Indexes (migration 0011): `jobs_key_created_id`
(with the question's words included, so a `q` page of one key can be an index-only scan)
per key, `jobs_created` over all keys, `jobs_question_search` for `q`.

The WHERE clause is assembled from constant fragments, one per filter given, so each combination
gets its own plan (a generic plan with `$n IS NULL OR ...` arms could not use the key index).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

import asyncpg

from infra.db.jobs import JobRow, job_row
from infra.results import JobResultSummary


@dataclass(frozen=True)
class ListedJob:
    """A listed job: its row without the result (`job.result` is None), and the result's summary."""

    job: JobRow
    summary: JobResultSummary | None

    @classmethod
    def from_record(cls, row: asyncpg.Record) -> ListedJob:
        values = dict(row)
        summary = values.pop("result_summary")
        values["result"] = None  # not read: a page of articles each, a list page would carry megabytes
        return cls(job_row(values), JobResultSummary.model_validate(summary) if summary is not None else None)


@dataclass(frozen=True)
class JobFilter:
    """What to list. `api_key_id` None: every key (admins only; the caller checks)."""

    api_key_id: str | None
    statuses: tuple[str, ...] = ()
    tool: str | None = None
    source: str | None = None
    routed_by: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    q: str | None = None  # words of the question (websearch syntax, `simple` configuration)
    priority: str | None = None  # "interactive" | "batch"

    def wire(self) -> dict[str, Any]:
        """As stored with a bulk retry run (JSON)."""
        return {
            "apiKeyId": self.api_key_id, "status": list(self.statuses), "tool": self.tool, "source": self.source,
            "routedBy": self.routed_by, "q": self.q, "priority": self.priority,
            "createdAfter": self.created_after.isoformat() if self.created_after else None,
            "createdBefore": self.created_before.isoformat() if self.created_before else None,
        }

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> JobFilter:
        def when(name: str) -> datetime | None:
            return datetime.fromisoformat(data[name]) if data.get(name) else None

        return cls(api_key_id=data.get("apiKeyId"), statuses=tuple(data.get("status") or ()), tool=data.get("tool"),
                   source=data.get("source"), routed_by=data.get("routedBy"), q=data.get("q"),
                   priority=data.get("priority"),
                   created_after=when("createdAfter"), created_before=when("createdBefore"))


Position = tuple[datetime, str]  # (created_at, id) of a listed job

# A listed job's `result` is its summary, not the document (a page of articles each: a list page
# would carry megabytes): what a list shows and filters on.
_SUMMARY = """CASE WHEN result IS NULL THEN NULL ELSE jsonb_strip_nulls(jsonb_build_object(
    'resultType', result->'resultType', 'status', result->'status', 'tool', result->'tool',
    'routedBy', result->'routedBy', 'totalItems', result#>'{articles,totalItems}')) END AS result_summary"""
_COLUMNS = ", ".join([f.name for f in fields(JobRow) if f.name != "result"] + [_SUMMARY])


@dataclass
class _Where:
    parts: list[str] = field(default_factory=list)
    args: list[Any] = field(default_factory=list)

    def add(self, fragment: str, value: Any) -> None:
        """`fragment` holds `{}` where the value's parameter goes."""
        self.args.append(value)
        self.parts.append(fragment.format(f"${len(self.args)}"))

    def sql(self) -> str:
        return " AND ".join(self.parts) if self.parts else "true"


def _where(f: JobFilter, after: Position | None) -> _Where:
    w = _Where()
    if f.api_key_id is not None:
        w.add("api_key_id = {}", f.api_key_id)
    if f.statuses:
        w.add("status = ANY({}::text[])", list(f.statuses))
    if f.source is not None:
        w.add("source = {}", f.source)
    if f.priority is not None:
        w.add("priority = {}", f.priority)
    if f.tool is not None:
        w.add("result->>'tool' = {}", f.tool)
    if f.routed_by is not None:
        w.add("result->>'routedBy' = {}", f.routed_by)
    if f.created_after is not None:
        w.add("created_at >= {}", f.created_after)
    if f.created_before is not None:
        w.add("created_at < {}", f.created_before)
    if f.q is not None:
        w.add("question_search @@ websearch_to_tsquery('simple', {})", f.q)
    if after is not None:
        w.add("created_at <= {}", after[0])  # lets the planner bound the index range; the tuple decides
        w.args.append(after[1])
        w.parts.append(f"(created_at, id) < (${len(w.args) - 1}, ${len(w.args)})")
    return w


async def list_jobs(
    conn: asyncpg.Connection, f: JobFilter, *, limit: int, after: Position | None = None
) -> list[ListedJob]:
    """Up to `limit` jobs matching `f`, newest first, strictly after the position `after`, each with
    its result's summary (resultType, status, tool, routedBy, totalItems)."""
    w = _where(f, after)
    w.args.append(limit)
    # The page's ids first, then their columns: a sort (the GIN path) computes its rows' select list
    # before it sorts, and the summary reads each matching job's result (TOASTed, kilobytes).
    sql = f"""
        SELECT {_COLUMNS} FROM jobs WHERE id IN (
            SELECT id FROM jobs WHERE {w.sql()} ORDER BY created_at DESC, id DESC LIMIT ${len(w.args)}
        ) ORDER BY created_at DESC, id DESC"""  # noqa: S608 (constant fragments)
    if f.q is None:
        return [ListedJob.from_record(r) for r in await conn.fetch(sql, *w.args)]
    # A word's frequency decides the plan (rare: the GIN index, then sort; common: the key's date
    # index, filtered). A prepared statement's generic plan cannot see the word and walks the date
    # index for a rare one too (measured: 222 ms p95 against 8 ms, bench/job_list_bench.py), so
    # this statement is planned for its values each time.
    async with conn.transaction():
        await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
        return [ListedJob.from_record(r) for r in await conn.fetch(sql, *w.args)]


async def count_jobs(conn: asyncpg.Connection, f: JobFilter) -> int:
    w = _where(f, None)
    n: int = await conn.fetchval(f"SELECT count(*) FROM jobs WHERE {w.sql()}", *w.args)  # noqa: S608
    return n
