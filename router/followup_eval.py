"""The follow-up evaluation (issue 28): `router/data/followup_eval_{dev,test}.jsonl` scored.

Each pair is a previous turn (its question, tool and normalized arguments) and a follow-up.
The follow-up is decided as in production -- the filter-only reader first (no LLM), then the
router with the previous turn in its history (a model, or the fallback on the follow-up alone)
-- and nothing is executed. Scoring, per category (docs/router.md "Follow-up evaluation set"):
- filter-only: **exact** -- `routedBy: "followup"`, the previous tool and the full new
  arguments (the fields the label names; a rolling window may end or start a day apart);
- needs-model: the tool, the scope ("them" = the previous page) and the key terms of
  `question` (the routing eval's prefix rule) or `text`, and `answerLanguage`;
- not-a-request: no tool.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from infra.conversation import PreviousTurn
from infra.results import LANGUAGES, Usage
from infra.settings import Settings
from router.eval import field_matches
from router.followup import Followup
from router.gate import Relevance
from router.service import RouterDeps, RouteRequest, RoutingDecision, decide_fallback, decide_question
from router.tools import SEARCH_AND_ASK

DATA = Path(__file__).parent / "data"
SPLITS: dict[str, tuple[Path, ...]] = {
    "dev": (DATA / "followup_eval_dev.jsonl",), "test": (DATA / "followup_eval_test.jsonl",),
    "all": (DATA / "followup_eval_dev.jsonl", DATA / "followup_eval_test.jsonl"),
}
CATEGORIES = ("filter-only", "needs-model", "not-a-request")
_DATES = ("dateFrom", "dateTo")


@dataclass(frozen=True)
class FollowupCase:
    id: str
    today: date
    tags: tuple[str, ...]
    previous: dict[str, Any]
    followup: str
    expected: dict[str, Any]

    @property
    def category(self) -> str:
        return next(t for t in self.tags if t in CATEGORIES)

    @property
    def language(self) -> str:
        return next((t for t in self.tags if t in LANGUAGES), "?")

    def request(self) -> RouteRequest:
        previous = self.previous
        turn = PreviousTurn(job_id=f"eval-{self.id}", question=previous["question"], tool=previous["tool"],
                            arguments=previous["arguments"], page_ids=[f"{self.id}-a", f"{self.id}-b"], found=True)
        return RouteRequest(question=self.followup, today=self.today, previous=turn)


def load_followups(split: str) -> list[FollowupCase]:
    cases = []
    for path in SPLITS[split]:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                cases.append(FollowupCase(row["id"], date.fromisoformat(row["today"]), tuple(row["tags"]),
                                          row["previous"], row["followup"], row["expected"]))
    return cases


@dataclass
class FollowupResult:
    id: str
    category: str
    language: str
    followup: str
    correct: bool
    routed_by: str
    tool: str | None
    arguments: dict[str, Any]
    problems: list[str] = field(default_factory=list)
    latency_ms: float = 0.0


def _dates_match(case: FollowupCase, expected: Any, actual: Any) -> bool:
    if expected == actual:
        return True
    if "relative-date" not in case.tags or expected is None or actual is None:
        return False
    return abs(date.fromisoformat(str(actual)) - date.fromisoformat(str(expected))) <= timedelta(days=1)


def problems_of(case: FollowupCase, decision: RoutingDecision, scope: str | None) -> list[str]:
    """Why ``decision`` is not what ``case`` expects (empty: right)."""
    expected = case.expected
    if case.category == "not-a-request":
        return [] if decision.tool is None else [f"tool {decision.tool}, expected none"]
    problems = [] if decision.tool == expected["tool"] else [f"tool {decision.tool}, expected {expected['tool']}"]
    actual = decision.arguments
    if case.category == "filter-only":
        if decision.routed_by != "followup":
            problems.append(f"routedBy {decision.routed_by}, expected followup")
        for name, value in expected["arguments"].items():
            good = _dates_match(case, value, actual.get(name)) if name in _DATES else actual.get(name) == value
            if not good:
                problems.append(f"{name} {actual.get(name)!r}, expected {value!r}")
        return problems
    if expected.get("scope") is not None and scope != expected["scope"]:
        problems.append(f"scope {scope}, expected {expected['scope']}")
    for name, value in expected.get("arguments", {}).items():
        if name in ("text", "question", "answerLanguage", "language") and not field_matches(name, value,
                                                                                           actual.get(name)):
            problems.append(f"{name} {actual.get(name)!r}, expected {value!r}")
    return problems


Decide = Callable[[FollowupCase], Awaitable[tuple[RoutingDecision, str | None]]]


async def run_followup_eval(cases: Sequence[FollowupCase], decide: Decide) -> list[FollowupResult]:
    results = []
    for case in cases:
        started = time.perf_counter()
        decision, scope = await decide(case)
        latency = (time.perf_counter() - started) * 1000
        problems = problems_of(case, decision, scope)
        results.append(FollowupResult(case.id, case.category, case.language, case.followup, not problems,
                                      decision.routed_by, decision.tool, decision.arguments, problems, latency))
    return results


def _scoped(decision: RoutingDecision, followup: Followup) -> tuple[RoutingDecision, str | None]:
    """A decision as production runs it: a call naming the previous result is SearchAndAskArticles over it."""
    if followup.names_previous_result and decision.tool is not None and decision.routed_by != "followup":
        return RoutingDecision(SEARCH_AND_ASK, decision.arguments, decision.routed_by, decision.usage), "previous_page"
    return decision, None


def _followup(case: FollowupCase, settings: Settings) -> Followup:
    req = case.request()
    assert req.previous is not None
    return Followup(req.previous, " ".join(case.followup.split()), case.today, settings.limits)


def fallback_decider(settings: Settings, relevance: Relevance | None) -> Decide:
    """No LLM: the filter-only reader, else the deterministic router on the follow-up alone."""
    async def decide(case: FollowupCase) -> tuple[RoutingDecision, str | None]:
        followup = _followup(case, settings)
        call = followup.filter_call()
        if call is not None:
            return RoutingDecision(call.tool, call.normalized_arguments(), "followup", Usage()), None
        req = case.request()
        alone = RouteRequest(question=req.question, today=req.today)
        return _scoped(await decide_fallback(settings, alone, relevance=relevance, follows_up=True), followup)

    return decide


def llm_decider(deps: RouterDeps) -> Decide:
    """The production router with the previous turn (a model decides what code does not)."""
    async def decide(case: FollowupCase) -> tuple[RoutingDecision, str | None]:
        return _scoped(await decide_question(deps, case.request()), _followup(case, deps.settings))

    return decide


def summary(results: Sequence[FollowupResult]) -> dict[str, Any]:
    def ratio(rows: Sequence[FollowupResult]) -> dict[str, Any]:
        right = sum(r.correct for r in rows)
        return {"correct": right, "total": len(rows), "ratio": right / len(rows) if rows else None}

    out: dict[str, Any] = {"all": ratio(results)}
    for category in CATEGORIES:
        rows = [r for r in results if r.category == category]
        out[category] = ratio(rows)
        out[category]["perLanguage"] = {lang: ratio([r for r in rows if r.language == lang]) for lang in LANGUAGES}
    code = [r for r in results if r.category == "filter-only"]
    out["codeDecidedLlmFree"] = ratio([r for r in code if r.routed_by == "followup"])
    return out


def _pct(ratio: dict[str, Any]) -> str:
    value = ratio["ratio"]
    return "–" if value is None else f"{100 * value:.1f}% ({ratio['correct']}/{ratio['total']})"


def render_followup_text(router: str, split: str, results: Sequence[FollowupResult]) -> str:
    s = summary(results)
    lines = [f"follow-up eval: {router}, split {split}, {len(results)} pairs",
             f"  all: {_pct(s['all'])}"]
    for category in CATEGORIES:
        per = ", ".join(f"{lang} {_pct(s[category]['perLanguage'][lang])}" for lang in LANGUAGES)
        lines.append(f"  {category}: {_pct(s[category])}  [{per}]")
    lines.append(f"  filter-only decided in code with no LLM call: {_pct(s['codeDecidedLlmFree'])}")
    misses = [r for r in results if not r.correct]
    if misses:
        lines.append("  misses:")
        lines += [f"    {r.id} [{r.category}] {r.followup!r}: {'; '.join(r.problems)}" for r in misses]
    return "\n".join(lines)


def followup_json(router: str, split: str, results: Sequence[FollowupResult]) -> dict[str, Any]:
    return {"router": router, "split": split, "summary": summary(results), "cases": [asdict(r) for r in results]}
