"""The evaluation harness: how well does a router (a model behind an endpoint, or the
deterministic fallback) route a labelled question set?

A case: `{"id", "question", "today", "answerLanguage"?, "language"?, "split"?, "tags"?,
"expected": {"tool", "arguments"}}` (`tool` null = the router should refuse: greetings,
off-topic, pure injection attempts; `language` = the client's default articles' language;
`split` dev|test). The shipped set is two files: the *dev* half rules may be tuned on and the
*test* half they never are (docs/router.md).
Each case is decided exactly as in production (same prompt, same gateway validation and
ERROR-correction rounds) but nothing is executed. Scoring, per case:
- tool: the decided tool equals the expected one (null for a refusal);
- fields: every argument of the expected tool, on the normalized arguments. Free text
  (`text`, `question`) matches when each expected key term starts a word of the value
  (case-insensitive: "Zertifikat" matches "Zertifikate"); other fields match exactly
  (omitted = the default); a label may list acceptable alternatives; a `language` label of
  two or more sorted codes joined by "+" ("de+ru") matches a list of exactly those languages
  in any order;
- date bounds: both dateFrom and dateTo right, over the cases whose label has a date (a label
  with a dateFrom and no dateTo, an open end, or with a dateTo after the case's today ("this year"
  to December 31) also accepts the case's today: the search clamps every later dateTo to today, so
  both select the same articles);
- language: the `language` field (the articles' language) right, over the cases with a tool;
- refusals: refused when a refusal was expected, and refused when a tool was expected.
A field or date counts as wrong when the tool was wrong. Everything is also broken down per
question language (the case's ru/en/de tag) and per tag.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import statistics
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from infra.results import LANGUAGES, as_language
from router.request import RouteRequest
from router.service import RoutingDecision
from router.tools import ASK, SEARCH, SEARCH_AND_ASK

SHIPPED_SET = Path(__file__).parent / "data" / "eval_questions.jsonl"  # the dev half
SHIPPED_TEST_SET = Path(__file__).parent / "data" / "eval_questions_test.jsonl"
SHIPPED_SPLITS: dict[str, tuple[Path, ...]] = {
    "dev": (SHIPPED_SET,), "test": (SHIPPED_TEST_SET,), "all": (SHIPPED_SET, SHIPPED_TEST_SET),
}
# Test-half cases that earlier rounds read and tuned on (docs/router.md, "Round 9"): tuning data now,
# like the dev half (the request gate's examples are drawn from both).
TUNED_PREFIX = ("r10-", "r11-", "r12-", "r13-")
FIELDS: dict[str, tuple[str, ...]] = {
    SEARCH: ("text", "language", "dateFrom", "dateTo", "sort"),
    ASK: ("question", "language", "answerLanguage"),
    SEARCH_AND_ASK: ("text", "language", "dateFrom", "dateTo", "sort", "question", "answerLanguage"),
}
FREE_TEXT = frozenset({"text", "question"})
# Scored only where a label sets it: "the 5 newest posts" → pageSize 5 (round 22's convention; earlier
# writers were given none, and a list's size is no failure where nobody asked for one).
OPTIONAL_FIELDS: dict[str, tuple[str, ...]] = {SEARCH: ("pageSize",)}
DEFAULTS: dict[str, Any] = {"sort": "newest"}
# Hyphens split ("DNS-Challenge" has the term "dns"); a minus that opens a word is web search's exclusion
# ("Ruby -Rails"), kept: an excluded term matches only an excluded word, a required one only a required word.
_WORD = re.compile(r"(?:(?<![\w.+#])-)?[\w.+#]+", re.U)


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
    language: str | None = None  # the client's default articles' language
    split: str | None = None

    @property
    def question_language(self) -> str:
        return next((t for t in self.tags if t in LANGUAGES), "other")

    def request(self) -> RouteRequest:
        """The request a client would send for this case (its day, its client-passed languages)."""
        return RouteRequest(
            question=self.question, answer_language=as_language(self.answer_language, name="answerLanguage"),
            today=self.today, client_language=as_language(self.language),
        )


def load_split(split: str) -> list[EvalCase]:
    """The shipped cases of ``split`` (dev, test or all)."""
    cases: list[EvalCase] = []
    for path in SHIPPED_SPLITS[split]:
        cases.extend(load_cases(path))
    return cases


def load_cases(path: Path, *, split: str | None = None) -> list[EvalCase]:
    """The cases of one JSONL file; with ``split``, only the rows of that split."""
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
            unknown = set(arguments) - set(FIELDS.get(tool, ())) - set(OPTIONAL_FIELDS.get(tool, ()))
            if unknown:
                raise ValueError(f"arguments {sorted(unknown)} are not fields of {tool}")
            _check_language_label(arguments.get("language"))
            case = EvalCase(
                id=str(data["id"]), question=str(data["question"]), today=date.fromisoformat(data["today"]),
                expected_tool=tool, expected_arguments=arguments, answer_language=data.get("answerLanguage"),
                tags=tuple(data.get("tags", ())), language=data.get("language"), split=data.get("split"),
            )
            if case.language is not None and case.language not in LANGUAGES:
                raise ValueError(f"language {case.language!r} is not one of ru, en, de")
        except (KeyError, TypeError, ValueError) as exc:
            raise EvalFileError(f"{path}:{number}: {type(exc).__name__}: {exc}") from None
        if case.id in seen:
            raise EvalFileError(f"{path}:{number}: duplicate id {case.id!r}")
        seen.add(case.id)
        if split in (None, "all") or case.split == split:
            cases.append(case)
    if not cases:
        raise EvalFileError(f"{path}: no cases")
    return cases


def _check_language_label(label: Any) -> None:
    """A `language` label is a code, None, or sorted codes joined by "+" ("de+ru"); or a list of those."""
    for option in label if isinstance(label, list) else [label]:
        if option is None:
            continue
        codes = str(option).split("+")
        if not set(codes) <= set(LANGUAGES) or codes != sorted(set(codes)):
            raise ValueError(f"language label {option!r} is not a code or sorted codes joined by '+' (\"de+ru\")")


def _language_set(value: Any) -> frozenset[str] | None:
    """A language value as a set of codes: "de+ru" and ["ru", "de"] are the same two languages."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return frozenset(str(v) for v in value)
    return frozenset(str(value).split("+"))


def _words(value: Any) -> list[str]:
    return [w.casefold() for w in _WORD.findall(str(value))] if value is not None else []


def field_matches(name: str, expected: Any, actual: Any) -> bool:
    if isinstance(expected, list):
        return any(field_matches(name, option, actual) for option in expected)
    if name in FREE_TEXT:
        if expected is None:
            return actual is None
        words = _words(actual)
        return all(any(w.startswith(term) and (w[0] == "-") == (term[0] == "-") for w in words)
                   for term in _words(expected))
    if name == "language":
        return _language_set(expected) == _language_set(actual)
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
    question_language: str = "other"
    rounds: int = 0
    refused: bool = False  # no tool decided (a refusal, or a failure without a tool)
    routed_by: str = "llm"  # "fallback": the deterministic rules decided (no usable call, or code read no request)
    gate: str | None = None  # the request gate's refusal class (None: it passed the message on)
    coverage: float | None = None  # the gate's relevance signal, when it was measured
    similarity: float | None = None  # the gate's meaning signal, when it was measured


def score(case: EvalCase, decision: RoutingDecision, latency_ms: float) -> CaseResult:
    tool_ok = decision.tool == case.expected_tool
    fields: dict[str, bool] = {}
    optional = [n for n in OPTIONAL_FIELDS.get(case.expected_tool or "", ()) if n in case.expected_arguments]
    for name in (*FIELDS.get(case.expected_tool or "", ()), *optional):
        expected = case.expected_arguments.get(name)
        if name == "dateTo" and expected is None and case.expected_arguments.get("dateFrom") is not None:
            expected = [None, case.today.isoformat()]  # an open end: no article is dated after today
        elif name == "dateTo" and _after(expected, case.today):
            expected = [expected, case.today.isoformat()]  # "this year" to Dec 31: the search clamps it to today
        fields[name] = tool_ok and field_matches(name, expected, decision.arguments.get(name))
    has_dates = any(case.expected_arguments.get(k) is not None for k in ("dateFrom", "dateTo"))
    dates_ok = (fields.get("dateFrom", False) and fields.get("dateTo", False)) if has_dates else None
    return CaseResult(
        id=case.id, question=case.question, expected_tool=case.expected_tool, actual_tool=decision.tool,
        tool_ok=tool_ok, fields=fields, dates_ok=dates_ok, latency_ms=latency_ms,
        llm_calls=decision.usage.llm_calls, input_tokens=decision.usage.input_tokens,
        output_tokens=decision.usage.output_tokens, arguments=decision.arguments,
        error=f"{decision.error}: {decision.message}" if decision.error else None, tags=case.tags,
        question_language=case.question_language, rounds=decision.rounds, refused=decision.tool is None,
        routed_by=decision.routed_by, gate=decision.gate.refused if decision.gate else None,
        coverage=decision.gate.coverage.together if decision.gate and decision.gate.coverage else None,
        similarity=decision.gate.coverage.similarity if decision.gate and decision.gate.coverage else None,
    )


def _after(label: Any, today: date) -> bool:
    """A dateTo label (one date, or alternatives) that lies after the case's today."""
    options = label if isinstance(label, list) else [label]
    return bool(options) and all(isinstance(o, str) and o > today.isoformat() for o in options)


def _ratio(correct: int, total: int) -> dict[str, Any]:
    return {"correct": correct, "total": total, "accuracy": round(correct / total, 4) if total else None}


def _percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..1) of already sorted values."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q * len(sorted_values)))
    return round(sorted_values[rank - 1], 1)


def _per_question(total: int, n: int) -> float | None:
    return round(total / n, 2) if n else None


def _core(results: Sequence[CaseResult]) -> dict[str, Any]:
    """The accuracies one group of cases is judged by (the whole run, a language, a tag)."""
    dated = [r.dates_ok for r in results if r.dates_ok is not None]
    languages = [r.fields["language"] for r in results if "language" in r.fields]
    expected_refusal = [r for r in results if r.expected_tool is None]
    expected_tool = [r for r in results if r.expected_tool is not None]
    return {
        "cases": len(results),
        "toolAccuracy": _ratio(sum(r.tool_ok for r in results), len(results)),
        "exactAccuracy": _ratio(sum(r.tool_ok and all(r.fields.values()) for r in results), len(results)),
        "dateBoundAccuracy": _ratio(sum(bool(d) for d in dated), len(dated)),
        "languageAccuracy": _ratio(sum(languages), len(languages)),
        "refusals": {
            "correct": _ratio(sum(r.refused for r in expected_refusal), len(expected_refusal)),
            "wrong": sum(r.refused for r in expected_tool),  # refused (or failed) where a tool was due
            # the same as a share of the questions that expected a tool (the bar: at most 1 %)
            "falseRefusals": _ratio(sum(r.refused for r in expected_tool), len(expected_tool)),
            "byGate": {kind: sum(r.gate == kind for r in results) for kind in sorted({r.gate for r in results if r.gate})},
        },
    }


def summarize(results: Sequence[CaseResult]) -> dict[str, Any]:
    per_field: dict[str, list[bool]] = {}
    for r in results:
        for name, ok in r.fields.items():
            per_field.setdefault(name, []).append(ok)
    latencies = sorted(r.latency_ms for r in results)
    by_tag: dict[str, list[CaseResult]] = {}
    by_language: dict[str, list[CaseResult]] = {}
    for r in results:
        by_language.setdefault(r.question_language, []).append(r)
        for tag in r.tags:
            by_tag.setdefault(tag, []).append(r)
    n = len(results)
    input_tokens = sum(r.input_tokens for r in results)
    output_tokens = sum(r.output_tokens for r in results)
    return {
        **_core(results),
        "fieldAccuracy": {name: _ratio(sum(oks), len(oks)) for name, oks in sorted(per_field.items())},
        "toolAccuracyByTag": {tag: _ratio(sum(r.tool_ok for r in rs), len(rs)) for tag, rs in sorted(by_tag.items())},
        "byLanguage": {lang: _core(rs) for lang, rs in sorted(by_language.items())},
        "byTag": {tag: _core(rs) for tag, rs in sorted(by_tag.items())},
        "latencyMs": {
            "mean": round(statistics.fmean(latencies), 1) if latencies else None,
            "p50": _percentile(latencies, 0.5),
            "p95": _percentile(latencies, 0.95),
            "max": round(latencies[-1], 1) if latencies else None,
        },
        "llmCalls": sum(r.llm_calls for r in results),
        "routedBy": {by: sum(r.routed_by == by for r in results) for by in sorted({r.routed_by for r in results})},
        "perQuestion": {
            "rounds": _per_question(sum(r.rounds for r in results), n),
            "llmCalls": _per_question(sum(r.llm_calls for r in results), n),
            "promptTokens": _per_question(input_tokens, n),
            "outputTokens": _per_question(output_tokens, n),
        },
        "tokens": {"input": input_tokens, "output": output_tokens, "total": input_tokens + output_tokens},
        "errors": sum(r.error is not None for r in results),
    }


@dataclass
class EvalReport:
    router: str  # "fallback" or "<model> @ <base url> (<mode>)"
    summary: dict[str, Any]
    cases: list[CaseResult] = field(default_factory=list)
    model: str = "fallback"
    mode: str = "deterministic"
    split: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "router": self.router, "model": self.model, "mode": self.mode, "split": self.split,
            "summary": self.summary, "cases": [asdict(c) for c in self.cases],
        }


Decide = Callable[[EvalCase], Awaitable[RoutingDecision]]


async def run_eval(
    cases: Iterable[EvalCase], decide: Decide, *, router: str, concurrency: int = 1,
    model: str = "fallback", mode: str = "deterministic", split: str | None = None,
) -> EvalReport:
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(case: EvalCase) -> CaseResult:
        async with gate:
            started = time.monotonic()
            decision = await decide(case)
            return score(case, decision, (time.monotonic() - started) * 1000)

    results = await asyncio.gather(*(one(c) for c in cases))
    return EvalReport(
        router=router, summary=summarize(results), cases=list(results), model=model, mode=mode, split=split
    )


def _pct(ratio: dict[str, Any]) -> str:
    if ratio["accuracy"] is None:
        return "-"
    return f"{ratio['accuracy'] * 100:5.1f}%  ({ratio['correct']}/{ratio['total']})"


# The classes the question reader is judged by (issue 22), each with its subtags in the set.
_ROLE_SUBTAGS = frozenset({"answer-vs-articles", "two-languages", "all-languages", "retell", "client-language"})
CLASSES: dict[str, Callable[[str], bool]] = {
    "period": lambda tag: tag.startswith("p-"),
    "order": lambda tag: False,
    "language-role": lambda tag: tag in _ROLE_SUBTAGS,
}


def class_rows(summary: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, group) per class present in the run, each followed by its subtags (indented)."""
    by_tag = summary["byTag"]
    rows: list[tuple[str, dict[str, Any]]] = []
    for name, is_subtag in CLASSES.items():
        if name in by_tag:
            rows.append((name, by_tag[name]))
            rows.extend((f"  {tag}", group) for tag, group in by_tag.items() if is_subtag(tag))
    return rows


def _class_lines(summary: dict[str, Any]) -> list[str]:
    rows = class_rows(summary)
    if not rows:
        return []
    return ["per class (tool | all args | dates | language):", *(
        f"  {name:<24} {_pct(g['toolAccuracy'])} | {_pct(g['exactAccuracy'])} | {_pct(g['dateBoundAccuracy'])} | "
        f"{_pct(g['languageAccuracy'])}" for name, g in rows)]


def render_text(report: EvalReport, *, show_misses: bool = True) -> str:
    s = report.summary
    lines = [
        f"router: {report.router}",
        f"cases: {s['cases']}   errors: {s['errors']}",
        f"tool accuracy          {_pct(s['toolAccuracy'])}",
        f"exact (tool+all args)  {_pct(s['exactAccuracy'])}",
        f"date-bound accuracy    {_pct(s['dateBoundAccuracy'])}",
        f"language accuracy      {_pct(s['languageAccuracy'])}",
        f"refusals (no-tool)     {_pct(s['refusals']['correct'])}",
        f"false refusals         {_pct(s['refusals']['falseRefusals'])} of the questions that expected a tool",
        "refused by the gate: " + (", ".join(f"{k} {v}" for k, v in s["refusals"]["byGate"].items()) or "none"),
        "argument accuracy per field:",
        *(f"  {name:<15} {_pct(ratio)}" for name, ratio in s["fieldAccuracy"].items()),
        "tool accuracy per tag:",
        *(f"  {tag:<15} {_pct(ratio)}" for tag, ratio in s["toolAccuracyByTag"].items()),
        *_class_lines(s),
        "latency ms: " + ", ".join(f"{k} {v}" for k, v in s["latencyMs"].items()),
        f"LLM calls: {s['llmCalls']}   tokens: in {s['tokens']['input']}, out {s['tokens']['output']}, "
        f"total {s['tokens']['total']}",
        "per question: " + ", ".join(f"{k} {v}" for k, v in s["perQuestion"].items()),
        "decided by: " + ", ".join(f"{k} {v}" for k, v in s["routedBy"].items()),
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


def _cell(ratio: dict[str, Any]) -> str:
    return "-" if ratio["accuracy"] is None else f"{ratio['accuracy'] * 100:.1f}% ({ratio['correct']}/{ratio['total']})"


def render_markdown(reports: Sequence[EvalReport]) -> str:
    """One row per report (model x mode x split), then one row per question language of each."""
    head = (
        "| model | mode | split | group | cases | tool | all args | dates | language | refusals | false refusals | "
        "p50 ms | p95 ms | rounds/q | prompt tok/q | output tok/q | decided by the rules |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for report in reports:
        s = report.summary
        groups: list[tuple[str, dict[str, Any]]] = [("all", s), *s["byLanguage"].items()]
        for name, g in groups:
            per_q = s["perQuestion"] if name == "all" else None
            lat = s["latencyMs"] if name == "all" else None
            lines.append(
                f"| {report.model} | {report.mode} | {report.split or '-'} | {name} | {g['cases']} | "
                f"{_cell(g['toolAccuracy'])} | {_cell(g['exactAccuracy'])} | {_cell(g['dateBoundAccuracy'])} | "
                f"{_cell(g['languageAccuracy'])} | {_cell(g['refusals']['correct'])} | "
                f"{_cell(g['refusals']['falseRefusals'])} | "
                f"{lat['p50'] if lat else ''} | {lat['p95'] if lat else ''} | "
                f"{per_q['rounds'] if per_q else ''} | {per_q['promptTokens'] if per_q else ''} | "
                f"{per_q['outputTokens'] if per_q else ''} | "
                f"{s['routedBy'].get('fallback', 0) if name == 'all' else ''} |"
            )
    return "\n".join(lines)


def render_tag_markdown(report: EvalReport) -> str:
    """Per class (period, order, language role, with their subtags), then per tag: tool,
    all-argument, date and language accuracy, refusals."""
    lines = ["| tag | cases | tool | all args | dates | language | refused (no-tool) | false refusals |",
             "|---|---|---|---|---|---|---|---|"]
    classes = [(f"**{name}**" if not name.startswith(" ") else f"↳ {name.strip()}", g)
               for name, g in class_rows(report.summary)]
    for tag, g in [*classes, *report.summary["byTag"].items()]:
        lines.append(
            f"| {tag} | {g['cases']} | {_cell(g['toolAccuracy'])} | {_cell(g['exactAccuracy'])} | "
            f"{_cell(g['dateBoundAccuracy'])} | {_cell(g['languageAccuracy'])} | "
            f"{_cell(g['refusals']['correct'])} | {_cell(g['refusals']['falseRefusals'])} |"
        )
    return "\n".join(lines)
