"""Reading article corpora (JSONL, the format of shared/corpus/articles.jsonl)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from infra.results import Language
from infra.text import content_hash, to_plain_text
from infra.validation import first_error

SAMPLE_CORPUS = Path(__file__).parent / "sample_corpus" / "articles.jsonl"


class ArticleRecord(BaseModel):
    """One line of a corpus file. Extra fields are allowed and ignored."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=200)
    language: Language
    title: str = Field(min_length=1)
    summary: str = ""
    body_html_or_md: str = ""
    body_format: str = "html"
    created_at: datetime
    updated_at: datetime | None = None
    url: str | None = None
    kind: str | None = None
    source: str | None = None
    author: str | None = None
    tags: list[str] = Field(default_factory=list)
    translation_key: str | None = None
    published: bool | None = None  # None: keep what the database has (new rows: published)
    hidden: bool | None = None

    @field_validator("created_at", "updated_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("must carry a UTC offset, e.g. 2024-05-01T00:00:00Z")
        return value

    @property
    def article_id(self) -> str:
        return self.translation_key or self.id

    @property
    def slug(self) -> str | None:
        if not self.url:
            return None
        return self.url.rstrip("/").rsplit("/", 1)[-1] or None

    def plain_text(self) -> str:
        return to_plain_text(self.body_html_or_md, self.body_format)

    def hash(self) -> str:
        return content_hash(self.title, self.summary, self.body_html_or_md, self.created_at.isoformat())


@dataclass(frozen=True)
class BadLine:
    line_no: int
    error: str


def _describe(exc: ValidationError) -> str:
    where, first = first_error(exc, "record")
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


def read_corpus(path: Path) -> Iterator[ArticleRecord | BadLine]:
    """Yield each record, or a BadLine with its 1-based line number; blank lines are skipped."""
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield ArticleRecord.model_validate(json.loads(line))
            except json.JSONDecodeError as exc:
                yield BadLine(line_no, f"not valid JSON: {exc.msg} at column {exc.colno}")
            except ValidationError as exc:
                yield BadLine(line_no, _describe(exc))
