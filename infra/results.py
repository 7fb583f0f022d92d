"""The result document (SPEC §8): what every job returns and every page repeats.

One set of models for all producers (router, fallback, pages) and consumers (API, webhooks).
Field names are camelCase on the wire.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from infra.status import ResultStatus, ResultType

Language = Literal["ru", "en", "de"]  # Turnout's languages: defined here only
LANGUAGES: tuple[Language, ...] = get_args(Language)
Sort = Literal["newest", "oldest"]


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class NormalizedSearch(WireModel):
    """The search filters actually executed (after validation, clamping and defaults)."""

    text: str | None = None
    language: Language | None = None
    date_from: date | None = None
    date_to: date | None = None
    sort: Sort = "newest"
    page: int = 1
    page_size: int = 20
    adjustments: list[str] = Field(default_factory=list)  # e.g. "pageSize 51 clamped to 50"


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
    routed_by: Literal["llm", "fallback", "cache", "caller"] = "llm"  # caller: an MCP host chose the tool
    routed_reason: str | None = None  # why the router went the way it did (fallback, refusal), in code's words
    tool: str | None = None  # the executed tool's name
    message: str | None = None  # a reason for refused / no_results / failed
    usage: Usage = Field(default_factory=Usage)
