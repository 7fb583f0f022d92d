"""The in-run baselines for bench/api_bench.py: bare Celery round trips with the job's hops.

`bench.relay` runs on the `router` queue and waits for the real `turnout.search.search` task on
the `search` queue, as a job's runner waits for its search: client -> router -> search ->
router -> client, with the same search work and nothing else (no API, no job state, no LLM,
no audit).

`bench.relay_llm` is the same round trip with the job's other hop added: before the search, one
chat completion from the router to the same zero-latency scripted LLM, with the request the
router sends (system prompt, user question, tools), through the `openai` client. A zero-latency
LLM still costs its HTTP round trip; this baseline has it too, so the ratio against it is what
the job machinery adds (API, job state, audit, validation, caches).

Loaded only into the benchmark's worker (`--include`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import Any

import openai

from infra.settings import get_settings
from infra.status import Queue
from router.prompt import system_prompt
from router.tools import default_registry
from workers.app import celery_app


def _search(search: dict[str, Any]) -> dict[str, Any]:
    reply = celery_app.send_task("turnout.search.search", args=[search], queue=Queue.SEARCH.value)
    # A task waiting on a subtask is what the job runner does too; Celery wants it said explicitly.
    page: dict[str, Any] = reply.get(timeout=30, disable_sync_subtasks=False)
    return page


@cache
def _llm() -> tuple[openai.OpenAI, dict[str, Any]]:
    settings = get_settings()
    registry = default_registry()
    client = openai.OpenAI(
        base_url=settings.llm_base_url, api_key=settings.llm_api_key.get_secret_value(), max_retries=0
    )
    request = {
        "model": settings.llm_router_model,
        "messages": [
            {"role": "system", "content": system_prompt(datetime.now(UTC).date(), settings.llm_mode, registry)},
            {"role": "user", "content": "ruby news, benchmark question"},
        ],
        "tools": registry.openai_tools(),
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "max_tokens": 256,
    }
    return client, request


RELAY_TASK = "bench.relay"
RELAY_LLM_TASK = "bench.relay_llm"


def send_relay(task: str, search: dict[str, Any]) -> dict[str, Any]:
    """One raw round trip from a client: send `task` to the router queue, wait for its reply."""
    page: dict[str, Any] = celery_app.send_task(task, args=[search], queue=Queue.ROUTER.value).get(timeout=30)
    return page


@celery_app.task(name=RELAY_TASK, queue=Queue.ROUTER.value, ignore_result=False, acks_late=True)
def relay(search: dict[str, Any]) -> dict[str, Any]:
    return _search(search)


@celery_app.task(name=RELAY_LLM_TASK, queue=Queue.ROUTER.value, ignore_result=False, acks_late=True)
def relay_llm(search: dict[str, Any]) -> dict[str, Any]:
    client, request = _llm()
    completion = client.chat.completions.create(**request)
    if not completion.choices[0].message.tool_calls:
        raise RuntimeError("the scripted LLM answered the baseline without a tool call")
    return _search(search)
