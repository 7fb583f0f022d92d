"""The tool registry: what the LLM may call (SPEC §3) and the provider-name mapping.

Canonical names (`SearchArticles`, ...) are used everywhere in Turnout: the gateway, the
audit trail, results. Only the engine, at the LLM boundary, speaks provider names; a
mapping that would make two tools indistinguishable stops start-up.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from infra.results import Language, LanguageFilter
from infra.settings import ConfigError
from infra.status import ResultType
from retrieval.search import check_language_filter, language_filter_schema

SEARCH = "SearchArticles"
ASK = "AskArticles"
SEARCH_AND_ASK = "SearchAndAskArticles"

# OpenAI's function-name rule; most compatible servers enforce the same.
PROVIDER_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_PROVIDER_NAME_MAX = 64
# Search arguments the combined tool does not take: it always answers from page 1.
_COMBINED_EXCLUDED = ("page", "pageSize")


ASK_LANGUAGE_DESCRIPTION = (
    "The articles' language (ru, en, de), or a list of them (e.g. [\"de\", \"en\"]) when the user names "
    "several; omitted, the articles in the question's language are used (all languages only when the user says so)."
)


class AskArgs(BaseModel):
    """Arguments of AskArticles (and the answer half of SearchAndAskArticles). Strict: no coercion."""

    model_config = ConfigDict(extra="forbid", strict=True)

    question: str = Field(
        min_length=1,
        description="The question to answer from the articles' content, in the user's words.",
    )
    language: LanguageFilter | None = Field(
        default=None,
        description=ASK_LANGUAGE_DESCRIPTION,
    )
    answerLanguage: Language | None = Field(  # the wire name, as the model sees it
        default=None,
        description="Language of the answer (ru, en, de). Default: the language the user wrote in.",
    )

    @field_validator("language", mode="before")
    @classmethod
    def _language_filter(cls, value: object) -> LanguageFilter | None:
        return check_language_filter(value)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema, additionalProperties false
    result_type: ResultType

    @property
    def argument_names(self) -> frozenset[str]:
        return frozenset(self.parameters.get("properties", {}))


class ToolNameCollision(ConfigError):
    """Two tools map to the same provider name: start-up must stop."""


def provider_name(name: str) -> str:
    """The name the provider sees: disallowed characters become `_`, long names get a hash suffix."""
    sanitized = re.sub(r"[^A-Za-z0-9_-]", "_", name) or "_"
    if len(sanitized) <= _PROVIDER_NAME_MAX:
        return sanitized
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{sanitized[: _PROVIDER_NAME_MAX - 9]}_{digest}"


class ToolRegistry:
    """Canonical tool specs plus the two-way provider-name table, checked at construction."""

    def __init__(self, specs: Iterable[ToolSpec]) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._to_provider: dict[str, str] = {}
        self._from_provider: dict[str, str] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise ToolNameCollision(f"tool {spec.name!r} is registered twice")
            mapped = provider_name(spec.name)
            other = self._from_provider.get(mapped)
            if other is not None:
                raise ToolNameCollision(
                    f"tools {other!r} and {spec.name!r} both map to the provider name {mapped!r}; "
                    "rename one of them"
                )
            self._specs[spec.name] = spec
            self._to_provider[spec.name] = mapped
            self._from_provider[mapped] = spec.name

    @property
    def names(self) -> list[str]:
        return list(self._specs)

    @property
    def specs(self) -> list[ToolSpec]:
        return list(self._specs.values())

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def to_provider(self, name: str) -> str:
        return self._to_provider.get(name, name)

    def from_provider(self, mapped: str) -> str:
        """Canonical name for a provider name; an unknown name passes through (the gateway rejects it)."""
        return self._from_provider.get(mapped, mapped)

    def openai_tools(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": self._to_provider[spec.name],
                    "description": spec.description,
                    "parameters": spec.parameters,
                },
            }
            for spec in self._specs.values()
        ]


def _strip_titles(schema: Any) -> Any:
    """Pydantic adds `title` everywhere; the model only needs types, enums and descriptions."""
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Resolve local `$defs` so every tool schema is self-contained (some servers reject `$ref`)."""
    defs = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                target = copy.deepcopy(defs[ref.removeprefix("#/$defs/")])
                extra = {k: v for k, v in node.items() if k != "$ref"}
                return resolve({**target, **extra})
            return {k: resolve(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


def _drop_null(prop: dict[str, Any]) -> dict[str, Any]:
    """`X | None = None` means "may be omitted": the model sees plain X (as SearchArticles does)."""
    variants = prop.get("anyOf")
    if not variants:
        return prop
    kept = [v for v in variants if v.get("type") != "null"]
    if len(kept) != 1:
        return prop
    merged = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
    return {**kept[0], **merged}


def clean_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    cleaned: dict[str, Any] = _strip_titles(_inline_refs(dict(schema)))
    cleaned["properties"] = {k: _drop_null(v) for k, v in cleaned.get("properties", {}).items()}
    cleaned["additionalProperties"] = False
    return cleaned


def ask_args_schema() -> dict[str, Any]:
    schema = clean_schema(AskArgs.model_json_schema())
    schema["properties"]["language"] = language_filter_schema(ASK_LANGUAGE_DESCRIPTION)
    return schema


def combined_args_schema(search_schema: Mapping[str, Any]) -> dict[str, Any]:
    """Search filters (no paging) + the question and answer language."""
    search = clean_schema(search_schema)
    ask = ask_args_schema()
    properties = {k: v for k, v in search["properties"].items() if k not in _COMBINED_EXCLUDED}
    properties["question"] = ask["properties"]["question"]
    properties["answerLanguage"] = ask["properties"]["answerLanguage"]
    return {"type": "object", "properties": properties, "required": ["question"], "additionalProperties": False}


SEARCH_DESCRIPTION = (
    "Find articles and return them as a filtered, paginated list. Use it when the user wants to see "
    "articles (find, show, list), optionally filtered by keywords, the articles' language and a date range. "
    "The articles' language defaults to the question's; set it only when the user names one."
)
ASK_DESCRIPTION = (
    "Answer a question from the content of the articles (retrieval-augmented answer with sources). "
    "Use it when the user asks something that the articles' text should answer."
)
SEARCH_AND_ASK_DESCRIPTION = (
    "First find articles with filters (keywords, language, date range), then answer a question or "
    "summarize/compare using only the articles found. Use it when the user wants both, or asks about "
    "a period (\"what changed in 2025?\"). The articles' language defaults to the question's."
)


def build_specs(search_schema: Mapping[str, Any]) -> list[ToolSpec]:
    return [
        ToolSpec(SEARCH, SEARCH_DESCRIPTION, clean_schema(search_schema), ResultType.SEARCH),
        ToolSpec(ASK, ASK_DESCRIPTION, ask_args_schema(), ResultType.ANSWER),
        ToolSpec(SEARCH_AND_ASK, SEARCH_AND_ASK_DESCRIPTION, combined_args_schema(search_schema), ResultType.COMBINED),
    ]


@lru_cache(maxsize=1)
def default_registry() -> ToolRegistry:
    from retrieval.search import search_args_schema

    return ToolRegistry(build_specs(search_args_schema()))


def combined_search_keys(registry: ToolRegistry) -> frozenset[str]:
    """Which SearchAndAskArticles arguments belong to its search half."""
    spec = registry.get(SEARCH_AND_ASK)
    assert spec is not None
    return spec.argument_names - {"question", "answerLanguage"}


# ---- json_schema mode: one grammar per tool ----
# ISO dates the grammar can produce (llama.cpp turns `pattern` into grammar rules).
DATE_PATTERN = "^[12][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$"
REASON_MAX_CHARS = 80


def _grammar_property(prop: Mapping[str, Any]) -> dict[str, Any]:
    """A tool argument as the decision grammar sees it: type, enum or date pattern, no prose.
    (`uniqueItems` is left out: grammars cannot express it; the gateway drops duplicates.)"""
    if "anyOf" in prop:  # a language filter: one code or a list of codes
        return {"anyOf": [_grammar_property(variant) for variant in prop["anyOf"]]}
    out = {k: v for k, v in prop.items() if k in ("type", "enum", "minimum", "maximum", "minLength", "minItems",
                                                  "maxItems")}
    if "items" in prop:
        out["items"] = _grammar_property(prop["items"])
    if prop.get("format") == "date":
        out["pattern"] = DATE_PATTERN
    return out


# With code-filled filters the model writes only what code cannot read: the tool and the topic.
TOPIC_FIELD = "text"
TOPIC_MAX_CHARS = 80


def decision_schema(registry: ToolRegistry, *, code_filters: bool = False) -> dict[str, Any]:
    """`anyOf` one `{tool: const, arguments: {that tool's fields only}}` per tool, plus a decline.

    A constrained decoder (llama.cpp's grammar) then cannot mix fields across tools, invent
    fields or send `null` for one; every argument is optional except the required ones, so
    leaving out what the user did not say is always possible. With `code_filters` a tool's
    arguments are only its topic (`text`), and a tool without one (AskArticles) is just its
    name: the filters and the question come from code (`router.code_filters`), so a model
    cannot invent them and each decision is a few tokens.
    """
    variants: list[dict[str, Any]] = []
    for spec in registry.specs:
        params = spec.parameters
        properties = params.get("properties", {})
        if code_filters:
            variant: dict[str, Any] = {"type": "object", "properties": {"tool": {"const": spec.name}},
                                       "required": ["tool"], "additionalProperties": False}
            if TOPIC_FIELD in properties:
                topic = {"type": "string", "minLength": 1, "maxLength": TOPIC_MAX_CHARS}
                variant["properties"]["arguments"] = {
                    "type": "object", "properties": {TOPIC_FIELD: topic}, "required": [TOPIC_FIELD],
                    "additionalProperties": False,
                }
                variant["required"] = ["tool", "arguments"]
            variants.append(variant)
            continue
        arguments: dict[str, Any] = {
            "type": "object",
            "properties": {name: _grammar_property(p) for name, p in properties.items()},
            "additionalProperties": False,
        }
        if params.get("required"):
            arguments["required"] = list(params["required"])
        variants.append({
            "type": "object",
            "properties": {"tool": {"const": spec.name}, "arguments": arguments},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        })
    variants.append({
        "type": "object",
        "properties": {"tool": {"type": "null"}, "reason": {"type": "string", "maxLength": REASON_MAX_CHARS}},
        "required": ["tool", "reason"],
        "additionalProperties": False,
    })
    return {"anyOf": variants}
