"""The scripted LLM server speaks the OpenAI wire format to the real `openai` client."""

from __future__ import annotations

import json

import openai
import pytest
from openai.types.chat import ChatCompletionMessageFunctionToolCall

from tests.support.llm_server import Garbage, HttpError, ScriptedLLM, Text, ToolCall


def client(llm: ScriptedLLM) -> openai.OpenAI:
    return openai.OpenAI(base_url=llm.base_url, api_key="k", max_retries=0, timeout=5)


def test_tool_call_and_recording(llm: ScriptedLLM) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "docker"}), Text("hello"))
    c = client(llm)
    first = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    assert call.function.name == "SearchArticles"
    assert json.loads(call.function.arguments) == {"text": "docker"}
    assert first.usage is not None and first.usage.total_tokens == 140
    second = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "again"}])
    assert second.choices[0].message.content == "hello"
    assert [r["messages"][0]["content"] for r in llm.chat_requests] == ["q", "again"]


def test_errors_and_garbage(llm: ScriptedLLM) -> None:
    llm.script(HttpError(429, headers={"Retry-After": "1"}), Garbage(), HttpError(400))
    c = client(llm)
    with pytest.raises(openai.RateLimitError) as rate:
        c.chat.completions.create(model="m", messages=[])
    assert rate.value.response.headers["retry-after"] == "1"
    with pytest.raises((json.JSONDecodeError, openai.APIResponseValidationError)):
        c.chat.completions.create(model="m", messages=[])
    with pytest.raises(openai.BadRequestError):
        c.chat.completions.create(model="m", messages=[])


def test_unscripted_request_fails_loudly(llm: ScriptedLLM) -> None:
    with pytest.raises(openai.InternalServerError, match="no reply scripted"):
        client(llm).chat.completions.create(model="m", messages=[])
