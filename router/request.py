"""`RouteRequest`: what a routing run is asked (the question and the caller's settings)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from infra.conversation import PreviousTurn
from infra.results import Language, as_language
from infra.settings import Limits
from router.gateway import CallValidator
from router.tools import ToolRegistry


@dataclass
class RouteRequest:
    question: str
    answer_language: Language | None = None  # ru | en | de; None = the language the user wrote in
    page_size: int | None = None
    job_id: str | None = None
    today: date | None = None  # default: today in UTC
    # {tool, arguments} chosen by the caller (an MCP host's model): the gateway checks and runs it, no LLM.
    tool_call: dict[str, Any] | None = None
    # The articles' language by default (a UI locale); a language the question names wins over it.
    client_language: Language | None = None
    previous: PreviousTurn | None = None  # the turn a follow-up continues (issue 28)

    def __post_init__(self) -> None:  # the types say it; a caller's unchecked string is stopped here
        as_language(self.answer_language, name="answer_language")
        as_language(self.client_language)

    def validator(self, registry: ToolRegistry, limits: Limits, *, today: date, question: str,
                  user_language: Language) -> CallValidator:
        """The gateway's validator for calls made on this request (the model's, the rules', the caller's)."""
        return CallValidator(
            registry, limits, today=today, question=question, user_language=user_language,
            page_size=self.page_size, answer_language=self.answer_language, client_language=self.client_language,
        )
