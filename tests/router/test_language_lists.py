"""The tools' `language` argument as one code or a list of codes: validation in the gateway (all
three tools) and a search routed end to end with the scripted LLM over the real corpus."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from infra.settings import Settings
from infra.status import ResultStatus
from router.gateway import CallValidator, Rejection, ValidatedCall
from router.service import RouteRequest, route_question
from router.tools import ASK, SEARCH, SEARCH_AND_ASK, default_registry
from tests.router.conftest import TODAY, make_deps
from tests.support.llm_server import ScriptedLLM, ToolCall

pytestmark = pytest.mark.usefixtures("shared_corpus")


def validate(tool: str, arguments: dict[str, Any], question: str = "What is new in Ruby?") -> ValidatedCall | Rejection:
    validator = CallValidator(default_registry(), Settings().limits, today=TODAY, question=question,
                              user_language="en")
    return validator.validate(tool, arguments)


@pytest.mark.parametrize(("given", "normalized"), [
    (["ru", "de"], ["de", "ru"]), (["de", "DE ", "en"], ["de", "en"]), (["de"], "de"),
])
def test_every_tool_takes_a_list_of_languages_normalized(given: list[str], normalized: Any) -> None:
    search = validate(SEARCH, {"text": "Ruby", "language": given})
    assert isinstance(search, ValidatedCall) and search.search is not None
    assert search.search.language == normalized and search.normalized_arguments()["language"] == normalized

    ask = validate(ASK, {"question": "What is new in Ruby?", "language": given})
    assert isinstance(ask, ValidatedCall) and ask.language == normalized
    assert ask.normalized_arguments()["language"] == normalized

    combined = validate(SEARCH_AND_ASK, {"text": "Ruby", "question": "What is new?", "language": given})
    assert isinstance(combined, ValidatedCall) and combined.search is not None
    assert combined.search.language == normalized and combined.language == normalized  # the RAG scope's filter too


@pytest.mark.parametrize("tool", [SEARCH, ASK, SEARCH_AND_ASK])
@pytest.mark.parametrize(("given", "bad"), [(["de", "fr"], "fr"), (["xx"], "xx"), (["en", 3], "3")])
def test_a_bad_code_in_the_list_is_rejected_naming_it(tool: str, given: list[Any], bad: str) -> None:
    arguments: dict[str, Any] = {"language": given, "question": "What is new?"} if tool != SEARCH else {
        "language": given}
    verdict = validate(tool, arguments)
    assert isinstance(verdict, Rejection)
    assert verdict.reason.startswith(f"{tool}: ") and bad in verdict.reason, verdict.reason
    assert verdict.message.startswith("ERROR: ")


async def test_a_search_over_two_languages_returns_both_and_echoes_the_list(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool
) -> None:
    llm.script(ToolCall(SEARCH, {"text": "Ruby", "language": ["en", "de"], "pageSize": 50}))
    result = await route_question(make_deps(settings, db, None),
                                  RouteRequest(question="Ruby articles in English and German", today=TODAY))
    assert result.status is ResultStatus.ANSWERED and result.search is not None and result.articles is not None
    assert result.search.language == ["de", "en"]
    assert result.wire()["search"]["language"] == ["de", "en"]
    assert {item.language for item in result.articles.items} == {"de", "en"}


async def test_a_bad_code_goes_back_to_the_model_naming_it(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool
) -> None:
    llm.script(ToolCall(ASK, {"question": "What is new in Ruby?", "language": ["en", "fr"]}),
               ToolCall(SEARCH, {"text": "Ruby", "language": ["en", "ru"], "pageSize": 5}))
    result = await route_question(make_deps(settings, db, None),
                                  RouteRequest(question="What is new in Ruby?", today=TODAY))
    assert result.status is ResultStatus.ANSWERED and result.search is not None
    assert result.search.language == ["en", "ru"]
    [tool_message] = [m for m in llm.chat_requests[1]["messages"] if m["role"] == "tool"]
    assert tool_message["content"] == "ERROR: AskArticles: language 'fr' is not supported; use one of ru, en, de"
