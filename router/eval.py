"""The evaluation harness: how well does a router (a model behind an endpoint, or the
deterministic fallback) route a labelled question set?

A case: `{"id", "question", "today", "answerLanguage"?, "tags"?, "expected": {"tool", "arguments"}}`
(`tool` null = the router should refuse: greetings, off-topic, pure injection attempts).
Each case is decided exactly as in production (same prompt, same gateway validation and
ERROR-correction rounds) but nothing is executed. Scoring, per case:
- tool: the decided tool equals the expected one (null for a refusal);
- fields: every argument of the expected tool, on the normalized arguments. Free text
  (`text`, `question`) matches when each expected key term starts a word of the value
  (case-insensitive: "Zertifikat" matches "Zertifikate"); other fields match exactly
  (omitted = the default); a label may list acceptable alternatives;
- date bounds: both dateFrom and dateTo right, over the cases whose label has a date.
A field or date counts as wrong when the tool was wrong.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from router.service import RoutingDecision
from router.tools import ASK, SEARCH, SEARCH_AND_ASK

SHIPPED_SET = Path(__file__).parent / "data" / "eval_questions.jsonl"
FIELDS: dict[str, tuple[str, ...]] = {
    SEARCH: ("text", "language", "dateFrom", "dateTo", "sort"),
    ASK: ("question", "language", "answerLanguage"),
    SEARCH_AND_ASK: ("text", "language", "dateFrom", "dateTo", "sort", "question", "answerLanguage"),
}
FREE_TEXT = frozenset({"text", "question"})
DEFAULTS: dict[str, Any] = {"sort": "newest"}
_WORD = re.compile(r"[\w.+#]+", re.U)  # hyphens split: "DNS-Challenge" has the term "dns"


class EvalFileError(ValueError):
    """A labelled set that cannot be used, with the line that is wrong."""


@dataclass(frozen=True)
class EvalCase:
    id: str
    question: str
    today: date
    expected_tool: str | None
    expected_arguments: dict[str, Any]
    answer_language: str | None = None
    tags: tuple[str, ...] = ()


def load_cases(path: Path) -> list[EvalCase]:
    cases: list[EvalCase] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            expected = data["expected"]
            tool = expected["tool"]
            if tool is not None and tool not in FIELDS:
                raise ValueError(f"unknown expected tool {tool!r}")
            arguments = expected.get("arguments") or {}
            unknown = set(arguments) - set(FIELDS.get(tool, ()))
            if unknown:
                raise ValueError(f"arguments {sorted(unknown)} are not fields of {tool}")
            case = EvalCase(
                id=str(data["id"]), question=str(data["question"]), today=date.fromisoformat(data["today"]),
                expected_tool=tool, expected_arguments=arguments, answer_language=data.get("answerLanguage"),
                tags=tuple(data.get("tags", ())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EvalFileError(f"{path}:{number}: {type(exc).__name__}: {exc}") from None
        if case.id in seen:
            raise EvalFileError(f"{path}:{number}: duplicate id {case.id!r}")
        seen.add(case.id)
        cases.append(case)
    if not cases:
        raise EvalFileError(f"{path}: no cases")
    return cases


def _words(value: Any) -> list[str]:
    return [w.casefold() for w in _WORD.findall(str(value))] if value is not None else []


def field_matches(name: str, expected: Any, actual: Any) -> bool:
    if isinstance(expected, list):
        return any(field_matches(name, option, actual) for option in expected)
    if name in FREE_TEXT:
        if expected is None:
            return actual is None
        words = _words(actual)
        return all(any(w.startswith(term) for w in words) for term in _words(expected))
    default = DEFAULTS.get(name)
    return (expected if expected is not None else default) == (actual if actual is not None else default)


@dataclass
class CaseResult:
    id: str
    question: str
    expected_tool: str | None
    actual_tool: str | None
    tool_ok: bool
    fields: dict[str, bool]
    dates_ok: bool | None  # None: the label has no date
    latency_ms: float
    llm_calls: int
    input_tokens: int
    output_tokens: int
    arguments: dict[str, Any]
    error: str | None = None
    tags: tuple[str, ...] = ()


def score(case: EvalCase, decision: RoutingDecision, latency_ms: float) -> CaseResult:
    tool_ok = decision.tool == case.expected_tool
    fields: dict[str, bool] = {}
    for name in FIELDS.get(case.expected_tool or "", ()):
        fields[name] = tool_ok and field_matches(name, case.expected_arguments.get(name), decision.arguments.get(name))
    has_dates = any(case.expected_arguments.get(k) is not None for k in ("dateFrom", "dateTo"))
    dates_ok = (fields.get("dateFrom", False) and fields.get("dateTo", False)) if has_dates else None
    return CaseResult(
        id=case.id, question=case.question, expected_tool=case.expected_tool, actual_tool=decision.tool,
        tool_ok=tool_ok, fields=fields, dates_ok=dates_ok, latency_ms=latency_ms,
        llm_calls=decision.usage.llm_calls, input_tokens=decision.usage.input_tokens,
        output_tokens=decision.usage.output_tokens, arguments=decision.arguments,
        error=f"{decision.error}: {decision.message}" if decision.error else None, tags=case.tags,
    )


def _ratio(correct: int, total: int) -> dict[str, Any]:
    return {"correct": correct, "total": total, "accuracy": round(correct / total, 4) if total else None}


def summarize(results: Sequence[CaseResult]) -> dict[str, Any]:
    per_field: dict[str, list[bool]] = {}
    for r in results:
        for name, ok in r.fields.items():
            per_field.setdefault(name, []).append(ok)
    dated = [r.dates_ok for r in results if r.dates_ok is not None]
    latencies = sorted(r.latency_ms for r in results)
    tags: dict[str, list[bool]] = {}
    for r in results:
        for tag in r.tags:
            tags.setdefault(tag, []).append(r.tool_ok)
    return {
        "cases": len(results),
        "toolAccuracy": _ratio(sum(r.tool_ok for r in results), len(results)),
        "exactAccuracy": _ratio(sum(r.tool_ok and all(r.fields.values()) for r in results), len(results)),
        "fieldAccuracy": {name: _ratio(sum(oks), len(oks)) for name, oks in sorted(per_field.items())},
        "dateBoundAccuracy": _ratio(sum(bool(d) for d in dated), len(dated)),
        "toolAccuracyByTag": {tag: _ratio(sum(oks), len(oks)) for tag, oks in sorted(tags.items())},
        "latencyMs": {
            "mean": round(statistics.fmean(latencies), 1) if latencies else None,
            "p50": round(latencies[len(latencies) // 2], 1) if latencies else None,
            "p95": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))], 1) if latencies else None,
            "max": round(latencies[-1], 1) if latencies else None,
        },
        "llmCalls": sum(r.llm_calls for r in results),
        "tokens": {
            "input": sum(r.input_tokens for r in results),
            "output": sum(r.output_tokens for r in results),
            "total": sum(r.input_tokens + r.output_tokens for r in results),
        },
        "errors": sum(r.error is not None for r in results),
    }


@dataclass
class EvalReport:
    router: str  # "fallback" or "<model> @ <base url> (<mode>)"
    summary: dict[str, Any]
    cases: list[CaseResult] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"router": self.router, "summary": self.summary, "cases": [asdict(c) for c in self.cases]}


Decide = Callable[[EvalCase], Awaitable[RoutingDecision]]


async def run_eval(cases: Iterable[EvalCase], decide: Decide, *, router: str, concurrency: int = 1) -> EvalReport:
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(case: EvalCase) -> CaseResult:
        async with gate:
            started = time.monotonic()
            decision = await decide(case)
            return score(case, decision, (time.monotonic() - started) * 1000)

    results = await asyncio.gather(*(one(c) for c in cases))
    return EvalReport(router=router, summary=summarize(results), cases=list(results))


def _pct(ratio: dict[str, Any]) -> str:
    if ratio["accuracy"] is None:
        return "-"
    return f"{ratio['accuracy'] * 100:5.1f}%  ({ratio['correct']}/{ratio['total']})"


def render_text(report: EvalReport, *, show_misses: bool = True) -> str:
    s = report.summary
    lines = [
        f"router: {report.router}",
        f"cases: {s['cases']}   errors: {s['errors']}",
        f"tool accuracy          {_pct(s['toolAccuracy'])}",
        f"exact (tool+all args)  {_pct(s['exactAccuracy'])}",
        f"date-bound accuracy    {_pct(s['dateBoundAccuracy'])}",
        "argument accuracy per field:",
        *(f"  {name:<15} {_pct(ratio)}" for name, ratio in s["fieldAccuracy"].items()),
        "tool accuracy per tag:",
        *(f"  {tag:<15} {_pct(ratio)}" for tag, ratio in s["toolAccuracyByTag"].items()),
        "latency ms: " + ", ".join(f"{k} {v}" for k, v in s["latencyMs"].items()),
        f"LLM calls: {s['llmCalls']}   tokens: in {s['tokens']['input']}, out {s['tokens']['output']}, "
        f"total {s['tokens']['total']}",
    ]
    if show_misses:
        misses = [c for c in report.cases if not (c.tool_ok and all(c.fields.values()))]
        if misses:
            lines.append("misses:")
        for c in misses:
            wrong = [k for k, ok in c.fields.items() if not ok]
            detail = f"tool {c.actual_tool} (expected {c.expected_tool})" if not c.tool_ok else f"fields {wrong}"
            lines.append(f"  {c.id}: {detail}" + (f" [{c.error}]" if c.error else ""))
    return "\n".join(lines)
