"""Listing jobs from the API's side (`GET /v1/jobs`, MCP `tasks/list`, bulk retry runs): the
filters as a query model, who may list whose jobs, and the opaque page cursor.

A cursor is the position (created_at, id) of a page's last job, base64url of JSON: it names a
place in the newest-first order, not an offset, so a page is as cheap deep down as at the top and
jobs added meanwhile do not shift it (infra/db/job_list.py). The same cursor serves both APIs.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime
from typing import Literal, get_args

import asyncpg
from pydantic import AwareDatetime, ConfigDict, Field, field_validator, model_validator

from api.errors import ApiError
from infra.db.api_keys import ApiKey
from infra.db.job_list import JobFilter, ListedJob, Position, list_jobs
from infra.job_document import JobFields
from infra.results import JobResultSummary, RoutedBy, WireModel
from infra.status import JobStatus
from router.tools import ASK, SEARCH, SEARCH_AND_ASK

ALL_KEYS = "*"  # an admin's apiKeyId for every key's jobs
LIST_LIMIT_MAX = 100
LIST_LIMIT_DEFAULT = 20
Q_MAX_CHARS = 200
ToolName = Literal["SearchArticles", "AskArticles", "SearchAndAskArticles"]
assert set(get_args(ToolName)) == {SEARCH, ASK, SEARCH_AND_ASK}  # one vocabulary with the router
JobSource = Literal["http", "mcp"]


class JobFilters(WireModel):
    """The list filters (also the body of an admin bulk retry). Unknown names are rejected."""

    model_config = ConfigDict(extra="forbid")

    status: list[JobStatus] = Field(
        default_factory=list, description="One or more statuses (repeat the parameter: `status=failed&status=cancelled`)"
    )
    tool: ToolName | None = Field(None, description="The tool the job ran")
    source: JobSource | None = Field(None, description="http: POST /v1/questions; mcp: an MCP tool call")
    routed_by: RoutedBy | None = Field(None, description="How the tool was chosen")
    priority: Literal["interactive", "batch"] | None = Field(None, description="The priority it was submitted with")
    created_after: AwareDatetime | None = Field(None, description="Created at or after (ISO 8601 with offset)")
    created_before: AwareDatetime | None = Field(None, description="Created before (ISO 8601 with offset)")
    q: str | None = Field(
        None, min_length=1, max_length=Q_MAX_CHARS,
        description="Words of the question (PostgreSQL full text, `simple` configuration: each word as written, "
        "any language; `\"a phrase\"`, `or`, `-word` as in web search)",
    )
    api_key_id: str | None = Field(
        None, min_length=1, max_length=64,
        description=f"Admin keys only: another key's jobs, or `{ALL_KEYS}` for every key's. Default: the caller's",
    )

    @field_validator("q")
    @classmethod
    def _words(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must contain a word")
        return value

    @field_validator("created_after", "created_before")
    @classmethod
    def _in_utc(cls, value: datetime | None) -> datetime | None:
        """In UTC, as stored; a time that has no UTC (year 1 at +14:00) is a 422, not a database error."""
        try:
            return value.astimezone(UTC) if value is not None else None
        except OverflowError:
            raise ValueError("out of range once converted to UTC") from None

    @model_validator(mode="after")
    def _range(self) -> JobFilters:
        if self.created_after and self.created_before and self.created_after >= self.created_before:
            raise ValueError("createdAfter must be before createdBefore")
        return self

    def for_key(self, key: ApiKey) -> JobFilter:
        """The filter as `key` may run it; PermissionError when it names other keys without admin."""
        owner: str | None = key.id
        if self.api_key_id is not None and self.api_key_id != key.id:
            if not key.is_admin:
                raise PermissionError("apiKeyId: only an admin key may list another key's jobs")
            owner = None if self.api_key_id == ALL_KEYS else self.api_key_id
        return JobFilter(
            api_key_id=owner, statuses=tuple(s.value for s in self.status), tool=self.tool, source=self.source,
            routed_by=self.routed_by, created_after=self.created_after, created_before=self.created_before,
            q=self.q.strip() if self.q else None, priority=self.priority,
        )


class JobListQuery(JobFilters):
    """`GET /v1/jobs` query parameters: the filters and the page."""

    limit: int = Field(LIST_LIMIT_DEFAULT, ge=1, le=LIST_LIMIT_MAX, description="Jobs per page")
    cursor: str | None = Field(None, min_length=1, max_length=512, description="`nextCursor` of the previous page")


def encode_cursor(created_at: datetime, job_id: str) -> str:
    raw = json.dumps([created_at.isoformat(), job_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> Position | None:
    """The (created_at, id) a cursor names; None when it is not one of ours."""
    try:
        created, job_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        at = datetime.fromisoformat(created)
    except (ValueError, TypeError, binascii.Error):
        return None
    if at.tzinfo is None or not isinstance(job_id, str):
        return None
    return at, job_id


class JobListItem(JobFields):
    """A job as listed: its document without the result, with the result's summary."""

    result_summary: JobResultSummary | None = Field(description="Present when status is succeeded")

    @classmethod
    def from_listed(cls, listed: ListedJob, *, base_url: str | None) -> JobListItem:
        """A job as infra.db.job_list lists it: its result's summary, not the result."""
        return cls(**cls.fields_of(listed.job, base_url), result_summary=listed.summary)


class JobPage(WireModel):
    """One page of jobs, newest first."""

    items: list[JobListItem]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page")


async def list_page(pool: asyncpg.Pool, key: ApiKey, query: JobListQuery, *, base_url: str | None) -> JobPage:
    """A page of the jobs `key` may list; ApiError for a cursor that is not ours or another key's jobs."""
    try:
        job_filter = query.for_key(key)
    except PermissionError as exc:
        raise ApiError(403, "forbidden", str(exc), {"field": "apiKeyId"}) from None
    after = None
    if query.cursor is not None and (after := decode_cursor(query.cursor)) is None:
        raise ApiError(422, "invalid_request", "cursor: not a cursor of this API (pass a page's nextCursor unchanged)",
                       [{"field": "cursor", "message": "not a cursor of this API"}])
    async with pool.acquire() as conn:
        jobs = await list_jobs(conn, job_filter, limit=query.limit + 1, after=after)
    page = jobs[:query.limit]
    more = len(jobs) > query.limit
    return JobPage(items=[JobListItem.from_listed(job, base_url=base_url) for job in page],
                   next_cursor=encode_cursor(page[-1].job.created_at, page[-1].job.id) if more else None)
