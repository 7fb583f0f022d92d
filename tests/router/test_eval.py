"""`turnout eval`: the harness scores a scripted endpoint from the labels, and the fallback router."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from infra.settings import Settings
from router.cli import evaluate
from router.eval import SHIPPED_SET, EvalCase, load_cases
from router.service import RouteRequest, decide_fallback
from tests.support.llm_server import ScriptedLLM, Step, Text, ToolCall
from tests.support.services import REPO_ROOT

WRONG_TOOL = "en-search-01"  # answered with AskArticles
WRONG_LANGUAGE = "de-search-02"  # answered with language "de" instead of "en"


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) else value


def label_answer(case: EvalCase) -> Step:
    """What a perfect router would send for this label (first alternative, omitted when None)."""
    if case.expected_tool is None:
        return Text("NO_TOOL: not about the articles")
    arguments = {k: _first(v) for k, v in case.expected_arguments.items() if _first(v) is not None}
    if case.id == WRONG_TOOL:
        return ToolCall("AskArticles", {"question": case.question})
    if case.id == WRONG_LANGUAGE:
        arguments["language"] = "de"
    return ToolCall(case.expected_tool, arguments)


def script_from_labels(llm: ScriptedLLM) -> list[EvalCase]:
    cases = load_cases(SHIPPED_SET)
    by_question = {c.question: c for c in cases}

    def reply(body: dict[str, Any]) -> Step:
        question = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return label_answer(by_question[question])

    llm.on_chat(reply)
    return cases


def test_shipped_set_is_large_and_covers_every_kind() -> None:
    cases = load_cases(SHIPPED_SET)
    assert len(cases) >= 60
    tags = {t for c in cases for t in c.tags}
    assert {"ru", "en", "de", "search", "ask", "combined", "relative-date", "cross-language", "no-tool",
            "injection"} <= tags
    assert {c.expected_tool for c in cases} == {"SearchArticles", "AskArticles", "SearchAndAskArticles", None}


async def test_harness_scores_a_scripted_endpoint_from_the_labels(llm: ScriptedLLM, settings: Settings) -> None:
    cases = script_from_labels(llm)
    report = await evaluate(SHIPPED_SET, settings, fallback=False)
    s = report.summary
    n = len(cases)
    # A decline goes to the deterministic router (issue 15): where it finds a request, that is the decision.
    overridden = {c.id for c in cases if c.expected_tool is None
                  and decide_fallback(settings, RouteRequest(c.question, today=c.today)).tool is not None}
    wrong = 1 + len(overridden)
    assert s["cases"] == n and s["errors"] == 0
    assert s["toolAccuracy"] == {"correct": n - wrong, "total": n, "accuracy": round((n - wrong) / n, 4)}
    assert s["exactAccuracy"]["correct"] == n - wrong - 1  # the wrong tool, the wrong language, the overridden
    searches = [c for c in cases if c.expected_tool in ("SearchArticles", "SearchAndAskArticles")]
    assert s["fieldAccuracy"]["language"]["total"] == len(searches) + sum(c.expected_tool == "AskArticles" for c in cases)
    assert s["fieldAccuracy"]["language"]["correct"] == s["fieldAccuracy"]["language"]["total"] - 2
    assert s["fieldAccuracy"]["text"]["correct"] == len(searches) - 1
    dated = [c for c in cases if c.expected_arguments.get("dateFrom") or c.expected_arguments.get("dateTo")]
    assert s["dateBoundAccuracy"] == {"correct": len(dated), "total": len(dated), "accuracy": 1.0}
    refusals = sum(c.expected_tool is None for c in cases)
    assert s["llmCalls"] == n == len(llm.chat_requests)  # one decision per case, no corrections needed
    assert s["tokens"]["input"] == 120 * (n - refusals) + 100 * refusals
    assert s["latencyMs"]["p50"] is not None and s["latencyMs"]["max"] >= s["latencyMs"]["p50"]
    misses = {c.id for c in report.cases if not (c.tool_ok and all(c.fields.values()))}
    assert misses == {WRONG_TOOL, WRONG_LANGUAGE} | overridden


async def test_harness_counts_corrections_and_failures(llm: ScriptedLLM, settings: Settings, tmp_path: Any) -> None:
    path = tmp_path / "set.jsonl"
    rows = [
        {"id": "a", "question": "Ruby articles this year", "today": "2026-09-15",
         "expected": {"tool": "SearchArticles", "arguments": {"text": "Ruby", "dateFrom": "2026-01-01",
                                                             "dateTo": ["2026-09-15", None]}}},
        {"id": "b", "question": "Hello", "today": "2026-09-15", "expected": {"tool": None, "arguments": {}}},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    llm.script(
        ToolCall("SearchArticles", {"text": "Ruby", "dateFrom": "2025-01-01"}),  # wrong year -> ERROR round
        ToolCall("SearchArticles", {"text": "Ruby", "dateFrom": "2026-01-01"}),
        Text("Hi! How can I help?"), Text("Still chatting."),  # prose twice -> the fallback refuses "Hello"
    )
    report = await evaluate(path, settings, fallback=False)
    first, second = report.cases
    assert first.tool_ok and first.dates_ok and first.llm_calls == 2
    assert "ERROR" in llm.chat_requests[1]["messages"][-1]["content"]
    assert second.tool_ok is True and second.error is None and second.llm_calls == 2
    assert report.summary["errors"] == 0


def _cli(*args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "infra", "eval", *args], cwd=REPO_ROOT, env=dict(os.environ),
        capture_output=True, text=True, timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def test_cli_against_the_scripted_endpoint(llm: ScriptedLLM) -> None:
    script_from_labels(llm)
    report = _cli("--json", "--limit", "6", "--model", "scripted-router", str(SHIPPED_SET))
    assert report["router"].startswith("scripted-router @ http://127.0.0.1")
    assert report["summary"]["cases"] == 6
    assert report["summary"]["toolAccuracy"]["correct"] == 5  # en-search-01 is answered wrong on purpose
    assert {c["id"] for c in report["cases"]} >= {WRONG_TOOL}
    assert all(r["model"] == "scripted-router" for r in llm.chat_requests)


def test_cli_fallback_router_makes_no_llm_call(llm: ScriptedLLM) -> None:
    llm.fail_every_call("the fallback evaluation must not call the LLM")
    report = _cli("--fallback", "--json")
    summary = report["summary"]
    assert summary["cases"] >= 60 and summary["llmCalls"] == 0
    assert 0.5 < summary["toolAccuracy"]["accuracy"] < 1.0  # a floor, not a perfect router
    assert summary["dateBoundAccuracy"]["total"] > 15
    assert llm.chat_requests == []
    text = subprocess.run(
        [sys.executable, "-m", "infra", "eval", "--fallback"], cwd=REPO_ROOT, env=dict(os.environ),
        capture_output=True, text=True, timeout=180,
    ).stdout
    assert "tool accuracy" in text and "date-bound accuracy" in text and "latency ms" in text
