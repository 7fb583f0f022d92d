"""SearchArticles: deterministic, filtered, paginated search over the visible localizations.

One service for every caller (the router's tools, LLM-free pagination, the API, the `search`
Celery task): raw arguments go through ``normalize_search`` (validation and clamping, in code),
and the resulting ``NormalizedSearch`` is executed by ``search_articles``.

Text matching: PostgreSQL full-text search in each localization's own language configuration
(russian/german/english stemming). Only when that finds nothing does the fuzzy fallback run:
every term of three or more characters must occur as a fragment, either inside the title or
summary (pg_trgm ILIKE) or as the start of any word, body included (prefix full-text query).
That catches partial words, version strings ("3.4", "CVE-2025-25186") and names the stemmer
splits or mangles. Relevance never reorders results: SPEC §4 fixes the order (creation date,
then id) so pages are stable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import asyncpg
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from infra.db import search as search_db
from infra.results import (
    LANGUAGES,
    ArticlesPage,
    LanguageFilter,
    NormalizedSearch,
    SearchItem,
    language_codes,
    normalize_language_filter,
)
from infra.settings import Limits
from infra.text import squash_controls
from infra.validation import first_error

SORTS = ("newest", "oldest")
TEXT_MAX_CHARS = 256  # longer text is cut at a word boundary and reported
MAX_PAGE = 100_000  # keeps OFFSET far from overflow; pages past the last one are simply empty
FALLBACK_MIN_TERM = 3  # a trigram index needs three characters to narrow anything down
FALLBACK_MAX_TERMS = 8
RELAX_MAX_WORDS = 8  # the relaxed search counts each word once: a bounded number of index lookups

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
LANGUAGE_ERROR = "language_code"  # the pydantic error type of a bad language filter

LANGUAGE_DESCRIPTION = (
    "Language of the articles: ru, en or de, or a list of them (e.g. [\"de\", \"en\"]) when the user names "
    "several. Set it only when the user names one; omitted, the router searches the question's language "
    "(every language when the user asks for all)."
)


def language_filter_schema(description: str) -> dict[str, Any]:
    """JSON Schema of a language filter: one code, or a list of distinct codes."""
    code = {"type": "string", "enum": list(LANGUAGES)}
    several = {"type": "array", "items": code, "minItems": 1, "maxItems": len(LANGUAGES), "uniqueItems": True}
    return {"description": description, "anyOf": [code, several]}


def check_language_filter(value: Any) -> LanguageFilter | None:
    """``normalize_language_filter`` as a pydantic validator: a bad code is a ``language_code``
    error whose message names it."""
    try:
        return normalize_language_filter(value)
    except ValueError as exc:
        raise PydanticCustomError(LANGUAGE_ERROR, str(exc)) from None


class SearchArgs(BaseModel):
    """The raw SearchArticles arguments as a tool or client sends them (wire names, all optional)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False)

    text: StrictStr | None = Field(
        None, description=(
            "Words to find in title, summary and body; omit to list by filters only. Web-search syntax: "
            "\"an exact phrase\", or, -word to leave out articles with that word."
        ),
    )
    language: LanguageFilter | None = Field(None, description=LANGUAGE_DESCRIPTION)
    date_from: StrictStr | None = Field(
        None,
        alias="dateFrom",
        description="Earliest creation date, inclusive (YYYY-MM-DD).",
        json_schema_extra={"format": "date"},
    )
    date_to: StrictStr | None = Field(
        None,
        alias="dateTo",
        description="Latest creation date, inclusive of the whole day (YYYY-MM-DD).",
        json_schema_extra={"format": "date"},
    )
    sort: StrictStr | None = Field(
        None, description="newest (default) or oldest first.", json_schema_extra={"enum": list(SORTS)}
    )
    page: StrictInt | None = Field(None, description="Page number, 1 or more (default 1).")
    page_size: StrictInt | None = Field(None, alias="pageSize", description="Items per page.")

    @field_validator("sort", mode="before")
    @classmethod
    def _fold_case(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("language", mode="before")
    @classmethod
    def _language_filter(cls, value: Any) -> LanguageFilter | None:
        return check_language_filter(value)


class SearchArgumentError(ValueError):
    """A rejected search argument. ``message`` names the field and says what is accepted."""

    def __init__(self, field: str, message: str) -> None:
        # args = (field, message) so Celery can rebuild the exception on the caller's side.
        super().__init__(field, message)
        self.field = field
        self.message = message

    def __str__(self) -> str:
        return self.message


def search_args_schema(limits: Limits | None = None) -> dict[str, Any]:
    """JSON Schema of ``SearchArgs`` for tool definitions (additionalProperties false, no nulls)."""
    limits = limits or Limits()
    schema = SearchArgs.model_json_schema(by_alias=True)
    properties: dict[str, Any] = {}
    for name, prop in schema["properties"].items():
        # `X | None` with default None means "may be omitted": the schema shows plain X.
        variants = [v for v in prop.get("anyOf", [prop]) if v.get("type") != "null"]
        clean = {k: v for k, v in variants[0].items() if k != "title"}
        clean.update({k: v for k, v in prop.items() if k not in ("anyOf", "title", "default")})
        properties[name] = clean
    properties["language"] = language_filter_schema(LANGUAGE_DESCRIPTION)
    properties["pageSize"]["description"] = (
        f"Items per page: default {limits.page_size_default}, at most {limits.page_size_max}; the number "
        "asked for (\"the 5 newest\")."
    )
    return {"type": "object", "properties": properties, "additionalProperties": False}


def _field_error(exc: ValidationError) -> SearchArgumentError:
    field, first = first_error(exc, "arguments")
    got = first.get("input")
    if first["type"] == "extra_forbidden":
        allowed = ", ".join(f.alias or name for name, f in SearchArgs.model_fields.items())
        return SearchArgumentError(field, f"unknown argument {field!r}; allowed: {allowed}")
    if first["type"] == LANGUAGE_ERROR:
        return SearchArgumentError(field, first["msg"])
    if first["type"] in ("int_type", "int_from_float"):
        return SearchArgumentError(field, f"{field} must be an integer, got {got!r}")
    if first["type"] == "string_type":
        return SearchArgumentError(field, f"{field} must be a string, got {got!r}")
    return SearchArgumentError(field, f"{field}: {first['msg']} (got {got!r})")


def _parse_date(field: str, value: str) -> date:
    value = value.strip()
    if not _ISO_DATE.fullmatch(value):
        raise SearchArgumentError(field, f"{field} must be an ISO date YYYY-MM-DD, got {value!r}")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise SearchArgumentError(field, f"{field} {value!r} is not a calendar date (YYYY-MM-DD)") from None


def _normalize_text(raw: str, adjustments: list[str]) -> str | None:
    text = squash_controls(raw)
    if len(text) > TEXT_MAX_CHARS:
        head = text[: TEXT_MAX_CHARS + 1]
        cut = head.rsplit(" ", 1)[0] if " " in head else head[:TEXT_MAX_CHARS]
        text = cut.rstrip()
        adjustments.append(f"text of {len(raw)} characters truncated to {len(text)} (max {TEXT_MAX_CHARS})")
    return text or None


def _clamp(name: str, value: int, low: int, high: int, adjustments: list[str]) -> int:
    clamped = min(max(value, low), high)
    if clamped != value:
        adjustments.append(f"{name} {value} clamped to {clamped}")
    return clamped


def normalize_search(raw: Mapping[str, Any], *, limits: Limits, today: date) -> NormalizedSearch:
    """Validate and normalize raw arguments (SPEC §5). Raises ``SearchArgumentError``.

    Rejected: unknown arguments, wrong types, unsupported language or sort, malformed dates,
    ``dateFrom`` after ``dateTo``, ``dateFrom`` after ``today`` (nothing could match).
    Clamped and reported in ``adjustments``: ``dateTo`` after ``today`` (to today), ``page``
    outside 1..MAX_PAGE, ``pageSize`` outside 1..limits.page_size_max, overlong ``text``.
    ``null`` and empty strings count as absent.
    """
    if not isinstance(raw, Mapping):
        raise SearchArgumentError("arguments", f"arguments must be an object, got {type(raw).__name__}")
    # Unknown keys are kept whatever their value, so that `{"includeHidden": null}` is rejected too.
    known = {f.alias or name for name, f in SearchArgs.model_fields.items()}
    present = {
        k: v for k, v in raw.items() if k not in known or not (v is None or (isinstance(v, str) and not v.strip()))
    }
    try:
        args = SearchArgs.model_validate(present)
    except ValidationError as exc:
        raise _field_error(exc) from None

    if args.sort is not None and args.sort not in SORTS:
        raise SearchArgumentError("sort", f"sort {args.sort!r} is not supported; use newest or oldest")

    adjustments: list[str] = []
    date_from = _parse_date("dateFrom", args.date_from) if args.date_from is not None else None
    date_to = _parse_date("dateTo", args.date_to) if args.date_to is not None else None
    if date_from is not None and date_to is not None and date_from > date_to:
        raise SearchArgumentError("dateFrom", f"dateFrom {date_from} is after dateTo {date_to}")
    if date_from is not None and date_from > today:
        raise SearchArgumentError(
            "dateFrom", f"dateFrom {date_from} is after today ({today}): no article can match; use a past date"
        )
    if date_to is not None and date_to > today:
        adjustments.append(f"dateTo {date_to} is after today; clamped to {today}")
        date_to = today

    text = _normalize_text(args.text, adjustments) if args.text is not None else None
    page = _clamp("page", args.page if args.page is not None else 1, 1, MAX_PAGE, adjustments)
    page_size = _clamp(
        "pageSize",
        args.page_size if args.page_size is not None else limits.page_size_default,
        1,
        limits.page_size_max,
        adjustments,
    )
    return NormalizedSearch.model_validate(
        {
            "text": text,
            "language": args.language,
            "dateFrom": date_from,
            "dateTo": date_to,
            "sort": args.sort or "newest",
            "page": page,
            "pageSize": page_size,
            "adjustments": adjustments,
        }
    )


def fallback_terms(text: str) -> list[str]:
    """Terms for the trigram fallback: punctuation trimmed from the ends, short ones dropped."""
    terms: list[str] = []
    seen: set[str] = set()
    for word in text.split():
        term = _trim_punctuation(word)
        if len(term) >= FALLBACK_MIN_TERM and term.casefold() not in seen:
            seen.add(term.casefold())
            terms.append(term)
    return terms[:FALLBACK_MAX_TERMS]


def relax_words(text: str) -> list[str]:
    """The words of a text the relaxed search may match one by one (web-search operators left out)."""
    words: list[str] = []
    seen: set[str] = set()
    for token in text.split():
        word = _trim_punctuation(token)
        if not word or token.startswith("-") or word.casefold() == "or" or word.casefold() in seen:
            continue
        seen.add(word.casefold())
        words.append(word)
    return words[:RELAX_MAX_WORDS]


async def relaxed_match(
    conn: asyncpg.Connection, flt: search_db.SearchFilter, text: str
) -> tuple[search_db.AnyWordsMatch, str] | None:
    """When no article holds all of a text's words: the words some article of the filter holds
    (the others are dropped), to be ranked by how many each article holds, and the note that
    says so. None when the text has one word, or none of its words occurs."""
    words = relax_words(text)
    if len(words) < 2:
        return None
    counts = await search_db.count_words(conn, flt, words)
    present = [word for word, count in zip(words, counts, strict=True) if count]
    if not present:
        return None
    shown = " or ".join(f"'{word}'" for word in present)
    note = f"no article has all of '{text}'; showing those with {shown}"
    if len(present) > 1:
        note += " (most of these words first)"
    return search_db.AnyWordsMatch(present), note


def _trim_punctuation(word: str) -> str:
    start, end = 0, len(word)
    while start < end and not word[start].isalnum():
        start += 1
    while end > start and not word[end - 1].isalnum():
        end -= 1
    return word[start:end]


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def search_filter(query: NormalizedSearch) -> search_db.SearchFilter:
    # Dates are UTC days; dateTo is inclusive, so its exclusive bound is the next midnight.
    before = None
    if query.date_to is not None and query.date_to < date.max:
        before = _day_start(query.date_to + timedelta(days=1))
    return search_db.SearchFilter(
        languages=language_codes(query.language),
        created_from=_day_start(query.date_from) if query.date_from is not None else None,
        created_before=before,
        newest_first=query.sort == "newest",
    )


async def search_articles(pool_or_conn: search_db.PoolOrConnection, query: NormalizedSearch) -> ArticlesPage:
    """Execute a normalized search: published, not hidden localizations only, in a stable order."""
    if query.page < 1:
        raise SearchArgumentError("page", f"page must be at least 1, got {query.page}")
    if query.page_size < 1:
        raise SearchArgumentError("pageSize", f"pageSize must be at least 1, got {query.page_size}")
    flt = search_filter(query)
    offset = (query.page - 1) * query.page_size

    async def page_of(conn: asyncpg.Connection, match: search_db.TextMatch | None) -> tuple[list[asyncpg.Record], int]:
        rows = await search_db.fetch_page(conn, flt, match, limit=query.page_size, offset=offset)
        if rows and len(rows) < query.page_size:
            return rows, offset + len(rows)  # the last page: the total needs no count
        if not rows and offset == 0:
            return rows, 0
        return rows, await search_db.count_matches(conn, flt, match)

    notes: list[str] = []
    async with search_db.snapshot(pool_or_conn) as conn:
        if not query.text:
            rows, total = await page_of(conn, None)
        else:
            rows, total = await page_of(conn, search_db.FullTextMatch(query.text))
            terms = fallback_terms(query.text) if total == 0 else []
            if terms:
                rows, total = await page_of(conn, search_db.PartialMatch(terms))
            relaxed = await relaxed_match(conn, flt, query.text) if total == 0 else None
            if relaxed is not None:
                rows, total = await page_of(conn, relaxed[0])
                notes.append(relaxed[1])
    items = [
        SearchItem(
            id=row["id"],
            article_id=row["article_id"],
            language=row["language"],
            title=row["title"],
            summary=row["summary"],
            created_at=row["created_at"],
            url=row["url"],
            slug=row["slug"],
        )
        for row in rows
    ]
    return ArticlesPage(
        items=items,
        total_items=total,
        page=query.page,
        page_size=query.page_size,
        total_pages=-(-total // query.page_size),
        adjustments=notes,
    )
