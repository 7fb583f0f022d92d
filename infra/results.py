"""The result document (SPEC §8): what every job returns and every page repeats.

One set of models for all producers (router, fallback, pages) and consumers (API, webhooks).
Field names are camelCase on the wire.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any, Literal, TypeAlias, cast, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from infra.status import ResultStatus, ResultType

Language = Literal["ru", "en", "de"]  # Turnout's languages: defined here only
LANGUAGES: tuple[Language, ...] = get_args(Language)


def as_language(value: str | None, *, name: str = "language") -> Language | None:
    """`value` as one of Turnout's languages (None stays None); ValueError naming `name` otherwise."""
    if value is None:
        return None
    if value not in LANGUAGES:
        raise ValueError(f"{name} {value!r} is not one of {', '.join(LANGUAGES)}")
    return cast(Language, value)


Sort = Literal["newest", "oldest"]
# How the tool was chosen. caller: an MCP host chose it; followup: code changed the previous
# turn's filters (no LLM).
RoutedBy = Literal["llm", "fallback", "cache", "caller", "followup"]
# The articles' language filter: one code, or several distinct codes (sorted, two or more).
LanguageFilter: TypeAlias = Language | list[Language]


def normalize_language_filter(value: object) -> LanguageFilter | None:
    """A language filter in its one normal form: case and spaces folded, duplicates dropped, the
    codes sorted, a single code as a plain string; ``None`` or an empty list means no filter.
    Raises ``ValueError`` naming the bad code (or the bad type)."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise ValueError(f"language must be a code or a list of codes ({', '.join(LANGUAGES)}), got {value!r}")
    codes: set[str] = set()
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"language codes must be strings ({', '.join(LANGUAGES)}), got {item!r}")
        code = item.strip().casefold()
        if code not in LANGUAGES:
            raise ValueError(f"language {code!r} is not supported; use one of {', '.join(LANGUAGES)}")
        codes.add(code)
    ordered: list[Language] = sorted(codes)  # type: ignore[arg-type]  # each one checked above
    if not ordered:
        return None
    return ordered[0] if len(ordered) == 1 else ordered


def language_codes(value: str | Sequence[str] | None) -> list[str] | None:
    """The codes a language filter allows, as a list (None: every language)."""
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class NormalizedSearch(WireModel):
    """The search filters actually executed (after validation, clamping and defaults)."""

    text: str | None = None
    language: LanguageFilter | None = None
    date_from: date | None = None
    date_to: date | None = None
    sort: Sort = "newest"
    page: int = 1
    page_size: int = 20
    adjustments: list[str] = Field(default_factory=list)  # e.g. "pageSize 51 clamped to 50"

    @field_validator("language", mode="before")
    @classmethod
    def _one_normal_form(cls, value: Any) -> Any:
        # Also for a payload read back (a page request, a task message): one filter, one form.
        return normalize_language_filter(value)


class SearchItem(WireModel):
    """A structured record from the database, never LLM prose."""

    id: str  # localization id: the article id clients see
    article_id: str  # the story this localization belongs to
    language: Language
    title: str
    summary: str
    created_at: datetime
    url: str | None = None
    slug: str | None = None


class ArticlesPage(WireModel):
    items: list[SearchItem]
    total_items: int
    page: int
    page_size: int
    total_pages: int
    # How the search had to relax its text to find these (e.g. not all of its words in any
    # article); the result's `search.adjustments` repeats them. On the wire only when there are some.
    adjustments: list[str] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _without_empty_adjustments(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not self.adjustments:
            data.pop("adjustments", None)
        return data


class Source(WireModel):
    article_id: str  # localization id, as in SearchItem.id
    title: str
    snippet: str
    score: float
    language: Language | None = None
    chunk: int | None = None  # position of the chunk the snippet comes from (the article's best)
    chunks: list[int] | None = None  # positions of every chunk of this article the answer model read


class Usage(WireModel):
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    # USD by the price table (infra/settings.py `llm_prices`), per call of each model.
    cost_usd: float = 0.0

    def add_cost(self, usd: float) -> None:
        self.cost_usd = round(self.cost_usd + usd, 8)  # no float noise on the wire


class QuestionResult(WireModel):
    result_type: ResultType
    status: ResultStatus
    answer: str | None = None
    answer_language: Language | None = None
    answer_kind: Literal["llm", "extractive"] | None = None  # extractive = degraded, no LLM wrote it
    sources: list[Source] = Field(default_factory=list)
    articles: ArticlesPage | None = None
    search: NormalizedSearch | None = None
    question: str | None = None  # the RAG question actually asked (normalized tool argument)
    coverage_limited: bool = False
    routed_by: RoutedBy = "llm"
    routed_reason: str | None = None  # why the router went the way it did (fallback, refusal), in code's words
    tool: str | None = None  # the executed tool's name
    message: str | None = None  # a reason for refused / no_results / failed
    usage: Usage = Field(default_factory=Usage)


class JobResultSummary(WireModel):
    """A listed job's result in brief (infra/db/job_list.py reads it in SQL; the document has the rest)."""

    result_type: ResultType
    status: ResultStatus
    tool: str | None = None
    routed_by: RoutedBy | None = None
    total_items: int | None = Field(None, description="Matching articles of a search or combined result")
