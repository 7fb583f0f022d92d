"""LLM fault drills through the real job API and the real router worker: 429 storms (with and
without Retry-After), 500s, timeouts, empty messages, malformed tool arguments, unknown tool
names. Every job ends final exactly once; a failed one says why; an LLM that keeps failing
routes through the deterministic fallback (`routedBy: "fallback"`); usage equals the audited
LLM calls. The jobs run concurrently (one question per fault, told apart by a tag)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.api.support import WebhookReceiver
from tests.proof.conftest import (
    SEARCH_RUBY,
    DrillStack,
    TaggedLLM,
    assert_final_once,
    assert_usage_matches_audit,
    submit,
    wait_final,
)
from tests.support.llm_server import Delay, HttpError, Step, Text, ToolCall

pytestmark = pytest.mark.slow

ATTEMPTS = 2  # TURNOUT_LLM_MAX_RETRIES=1 in the drill workers


def always(step: Step) -> Callable[[int, dict[str, Any]], Step]:
    return lambda n, body: step


def first_then(first: Step, then: Step) -> Callable[[int, dict[str, Any]], Step]:
    return lambda n, body: first if n == 0 else then


@dataclass
class Case:
    tag: str
    script: Callable[[int, dict[str, Any]], Step]
    check: Callable[[dict[str, Any], list[dict[str, Any]], int], None]  # (job doc, audit rows, LLM requests)


def _fallback(reason_part: str) -> Callable[[dict[str, Any], list[dict[str, Any]], int], None]:
    def check(doc: dict[str, Any], audit: list[dict[str, Any]], requests: int) -> None:
        assert doc["status"] == "succeeded", doc
        assert doc["result"]["routedBy"] == "fallback"
        assert doc["result"]["resultType"] == "SearchResult"
        assert requests == ATTEMPTS  # retried once, then given up on
        [fallback] = [r for r in audit if r["kind"] == "fallback"]
        assert fallback["outcome"] == "routed" and reason_part in fallback["error"], fallback
        assert not [r for r in audit if r["kind"] == "llm_round"]  # no completion was ever received
        assert [r["tool"] for r in audit if r["kind"] == "tool_execution"] == ["SearchArticles"]

    return check


def _storm_that_ends(doc: dict[str, Any], audit: list[dict[str, Any]], requests: int) -> None:
    assert doc["status"] == "succeeded" and doc["result"]["routedBy"] == "llm", doc
    assert doc["result"]["articles"]["items"]
    assert requests == 2 and doc["usage"]["llmCalls"] == 1  # the 429 cost a retry, not a round


def _empty_message(doc: dict[str, Any], audit: list[dict[str, Any]], requests: int) -> None:
    # Content "" and no tool call: one corrective round, then the deterministic router decides, and
    # the job document says so (not a silent success, not a failure).
    assert doc["status"] == "succeeded" and doc["result"]["routedBy"] == "fallback", doc
    assert "prose" in doc["result"]["routedReason"]
    assert requests == 2 and [r["outcome"] for r in audit if r["kind"] == "llm_round"] == ["text", "text"]
    assert [r["kind"] for r in audit if r["kind"] in ("fallback", "tool_execution")] == ["fallback", "tool_execution"]


def _malformed_then_valid(doc: dict[str, Any], audit: list[dict[str, Any]], requests: int) -> None:
    assert doc["status"] == "succeeded" and doc["result"]["routedBy"] == "llm", doc
    [rejected] = [r for r in audit if r["kind"] == "tool_rejected"]
    assert "not valid JSON" in rejected["error"], rejected
    assert [r["kind"] for r in audit if r["kind"] in ("llm_round", "tool_rejected", "tool_execution")] == [
        "llm_round", "tool_rejected", "llm_round", "tool_execution"]
    assert requests == 2


def _unknown_tool(doc: dict[str, Any], audit: list[dict[str, Any]], requests: int) -> None:
    # Never executed. The model is told the tools it has; the same call again ends the loop (no more
    # rounds burnt) and the deterministic router decides instead.
    assert doc["status"] == "succeeded" and doc["result"]["routedBy"] == "fallback", doc
    assert "same rejected" in doc["result"]["routedReason"]
    rejected = [r for r in audit if r["kind"] == "tool_rejected"]
    assert len(rejected) == requests == 2
    assert all("unknown tool 'DropAllTables'" in r["error"] for r in rejected)
    assert [r["tool"] for r in audit if r["kind"] == "tool_execution"] == ["SearchArticles"]


CASES = [
    Case("429-retry-after", always(HttpError(429, "slow down", {"Retry-After": "1"})), _fallback("HTTP 429")),
    Case("429-bare", always(HttpError(429, "slow down")), _fallback("HTTP 429")),
    Case("429-then-ok", first_then(HttpError(429, "slow down", {"Retry-After": "1"}), SEARCH_RUBY), _storm_that_ends),
    Case("500", always(HttpError(500, "upstream exploded")), _fallback("HTTP 500")),
    Case("timeout", always(Delay(4.0, SEARCH_RUBY)), _fallback("unreachable")),
    Case("empty", always(Text("")), _empty_message),
    Case("malformed-args", first_then(ToolCall("SearchArticles", '{"text": "ruby", "language": '), SEARCH_RUBY),
         _malformed_then_valid),
    Case("unknown-tool", always(ToolCall("DropAllTables", {"confirm": True})), _unknown_tool),
]


def test_llm_faults_end_every_job_once(drill_stack: DrillStack, tagged: TaggedLLM,
                                       hooks: Callable[..., WebhookReceiver]) -> None:
    receiver = hooks()
    for case in CASES:
        tagged.on(case.tag, case.script)
    with drill_stack.client("llm-faults") as c:
        jobs = {case.tag: submit(c, f"find ruby news [drill:{case.tag}]", receiver.url) for case in CASES}
        docs = wait_final(c, list(jobs.values()), timeout=60)
    assert_final_once(drill_stack.settings, docs, webhook=True)
    failures = []
    for case in CASES:
        doc = docs[jobs[case.tag]]
        audit = assert_usage_matches_audit(drill_stack.settings, doc)
        try:
            case.check(doc, audit, len(tagged.requests_for(case.tag)))
        except AssertionError as exc:
            failures.append(f"{case.tag}: {exc}")
        assert len(receiver.for_job(doc["id"])) == 1, f"{case.tag}: webhook POSTs {receiver.for_job(doc['id'])}"
    assert not failures, "\n".join(failures)
