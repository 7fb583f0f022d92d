"""`turnout eval` reports the reader's classes (period, order, language role) with their
subtags, in the text and the Markdown output (issue 22)."""

from __future__ import annotations

from datetime import date
from typing import Any

from infra.results import Usage
from router.eval import (
    EvalCase,
    EvalReport,
    RoutingDecision,
    render_tag_markdown,
    render_text,
    score,
    summarize,
)

TODAY = date(2026, 11, 29)


def _case(id: str, tags: tuple[str, ...], arguments: dict[str, Any]) -> EvalCase:
    return EvalCase(id=id, question=id, today=TODAY, expected_tool="SearchArticles", expected_arguments=arguments,
                    tags=tags)


def _decided(arguments: dict[str, Any]) -> RoutingDecision:
    return RoutingDecision("SearchArticles", arguments, "fallback", Usage(), 0)


def test_classes_and_subtags_are_reported() -> None:
    right = {"text": "Ruby", "language": "en", "dateFrom": "2025-01-01", "dateTo": "2025-03-31"}
    wrong = {**right, "dateTo": "2025-12-31"}
    results = [
        score(_case("a", ("en", "search", "period", "p-quarter"), right), _decided(right), 1.0),
        score(_case("b", ("en", "search", "period", "p-quarter"), right), _decided(wrong), 1.0),
        score(_case("c", ("en", "search", "order"), {"text": "Ruby", "language": "en", "sort": "oldest"}),
              _decided({"text": "Ruby", "language": "en", "sort": "oldest"}), 1.0),
        score(_case("d", ("en", "search", "language-role", "two-languages"), {"text": "Ruby", "language": ["de", "ru"]}),
              _decided({"text": "Ruby", "language": "en"}), 1.0),
    ]
    report = EvalReport(router="fallback", summary=summarize(results), cases=results)
    text = render_text(report)
    assert "per class (tool | all args | dates | language):" in text
    lines = {line.split()[0]: line for line in text.splitlines()[text.splitlines().index(
        "per class (tool | all args | dates | language):") + 1:] if line.startswith("  ")}
    assert "50.0%  (1/2)" in lines["period"] and "p-quarter" in lines  # the subtag under its class
    assert lines["order"].count("100.0%  (1/1)") >= 2
    assert "0.0%  (0/1)" in lines["language-role"] and "two-languages" in lines
    markdown = render_tag_markdown(report)
    assert "| **period** | 2 | 100.0% (2/2) | 50.0% (1/2) | 50.0% (1/2) |" in markdown
    assert "| ↳ p-quarter | 2 |" in markdown and "| **language-role** | 1 |" in markdown
