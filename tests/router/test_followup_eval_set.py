"""The follow-up evaluation set of issue 28 (`router/data/followup_eval_{dev,test}.jsonl`): its shape.

Written before conversations exist, so nothing scores it yet; these checks keep the labels
consistent with the format in docs/router.md ("Follow-up evaluation set"): a filter-only pair's
expected arguments are the previous ones with exactly the change its kind names, dates are ISO
and ordered, the halves are balanced by language and cover every kind.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from router.tools import ASK, SEARCH, SEARCH_AND_ASK

DATA = Path(__file__).resolve().parents[2] / "router" / "data"
FILES = {"dev": DATA / "followup_eval_dev.jsonl", "test": DATA / "followup_eval_test.jsonl"}
LANGUAGES = ("ru", "en", "de")
# The full (normalized) arguments a previous turn and a filter-only expectation carry, per tool.
TOOL_FIELDS: dict[str, frozenset[str]] = {
    SEARCH: frozenset({"text", "language", "dateFrom", "dateTo", "sort", "page", "pageSize"}),
    SEARCH_AND_ASK: frozenset({"text", "language", "dateFrom", "dateTo", "sort", "question", "answerLanguage"}),
    ASK: frozenset({"question", "language", "answerLanguage"}),
}
KIND_FIELDS: dict[str, frozenset[str]] = {
    "language": frozenset({"language"}),
    "period": frozenset({"dateFrom", "dateTo"}),
    "order": frozenset({"sort"}),
    "page": frozenset({"page"}),
    "page-size": frozenset({"pageSize"}),
}
MODEL_KINDS = ("summarize-them", "which-of-them", "why", "new-topic")
CATEGORIES = ("filter-only", "needs-model", "not-a-request")
ROW_KEYS = {"id", "split", "today", "tags", "previous", "followup", "expected"}
MAX_PAGE_SIZE = 50


def load(split: str) -> list[dict[str, Any]]:
    lines = FILES[split].read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def question_language(row: dict[str, Any]) -> str | None:
    found = [t for t in row["tags"] if t in LANGUAGES]
    return found[0] if len(found) == 1 else None


def _iso(value: Any) -> date | None:
    try:
        return date.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def argument_problems(tool: str, arguments: dict[str, Any], today: date) -> list[str]:
    """What is wrong with one full argument set of ``tool`` (the normalized form: every field present)."""
    problems = []
    if set(arguments) != TOOL_FIELDS[tool]:
        problems.append(f"{tool} arguments {sorted(arguments)} are not {sorted(TOOL_FIELDS[tool])}")
    bounds: dict[str, date | None] = {}
    for name in ("dateFrom", "dateTo"):
        value = arguments.get(name)
        bound = bounds[name] = _iso(value)
        if value is not None and (bound is None or len(value) != 10):
            problems.append(f"{name} {value!r} is not an ISO date")
        elif bound is not None and bound > today:
            problems.append(f"{name} {value} is after today {today} (the search clamps it)")
    if bounds["dateFrom"] and bounds["dateTo"] and bounds["dateFrom"] > bounds["dateTo"]:
        problems.append(f"dateFrom {arguments['dateFrom']} is after dateTo {arguments['dateTo']}")
    if arguments.get("language") not in (*LANGUAGES, None):  # None: every language
        problems.append(f"language {arguments['language']!r} is not one of {LANGUAGES}")
    if "answerLanguage" in arguments and arguments["answerLanguage"] not in LANGUAGES:
        problems.append(f"answerLanguage {arguments['answerLanguage']!r} is not one of {LANGUAGES}")
    if "sort" in arguments and arguments["sort"] not in ("newest", "oldest"):
        problems.append(f"sort {arguments['sort']!r}")
    if "page" in arguments and not (isinstance(arguments["page"], int) and arguments["page"] >= 1):
        problems.append(f"page {arguments['page']!r}")
    size = arguments.get("pageSize", 1)
    if not (isinstance(size, int) and 1 <= size <= MAX_PAGE_SIZE):
        problems.append(f"pageSize {size!r} is outside 1..{MAX_PAGE_SIZE}")
    for name in ("text", "question"):
        if name in arguments and not (isinstance(arguments[name], str) and arguments[name].strip()):
            problems.append(f"{name} {arguments[name]!r} is empty")
    return problems


def filter_only_problems(row: dict[str, Any], today: date) -> list[str]:
    previous, expected = row["previous"], row["expected"]
    kinds = [t for t in row["tags"] if t in KIND_FIELDS]
    problems = []
    if expected.get("routedBy") != "followup" or expected.get("tool") != previous["tool"]:
        problems.append("a filter-only pair is routed by 'followup' to the previous tool")
    if not kinds or (len(kinds) > 1) != ("combo" in row["tags"]):
        problems.append(f"kinds {kinds}: one kind, or 'combo' with two or more")
    arguments = expected.get("arguments", {})
    problems += [f"expected: {p}" for p in argument_problems(previous["tool"], arguments, today)]
    allowed = frozenset().union(*(KIND_FIELDS[k] for k in kinds)) if kinds else frozenset()
    changed = {k for k in TOOL_FIELDS[previous["tool"]] if previous["arguments"].get(k) != arguments.get(k)}
    if not changed <= allowed:
        problems.append(f"changed {sorted(changed)}, but the kinds {kinds} name only {sorted(allowed)}")
    for kind in kinds:
        if not changed & KIND_FIELDS[kind]:
            problems.append(f"kind {kind!r} changes none of {sorted(KIND_FIELDS[kind])}")
    return problems


def needs_model_problems(row: dict[str, Any], today: date) -> list[str]:
    previous, expected, language = row["previous"], row["expected"], question_language(row)
    kinds = [t for t in row["tags"] if t in MODEL_KINDS]
    if len(kinds) != 1:
        return [f"needs-model pair with kinds {kinds}"]
    kind, arguments = kinds[0], expected.get("arguments", {})
    if kind in ("summarize-them", "which-of-them"):
        problems = [] if previous["tool"] == SEARCH else ["'them' needs a previous search page"]
        if (expected.get("routedBy"), expected.get("tool"), expected.get("scope")) != (
            "llm", SEARCH_AND_ASK, "previous_page"
        ):
            problems.append("'them' is SearchAndAskArticles by the model, scoped to the previous page")
        if set(arguments) != {"question", "answerLanguage"}:
            problems.append(f"scoped arguments {sorted(arguments)}: only question and answerLanguage are scored")
        terms = arguments.get("question")
        if not (isinstance(terms, str) and terms) and not (isinstance(terms, list) and terms and all(terms)):
            problems.append(f"question key terms {terms!r}")
    elif kind == "why":
        problems = [] if previous["tool"] == ASK == expected.get("tool") else ["'why' follows and is AskArticles"]
        if expected.get("routedBy") != "llm":
            problems.append("'why' is routed by the model")
        problems += [f"expected: {p}" for p in argument_problems(ASK, arguments, today)]
    else:
        problems = new_topic_problems(row, today)
    if arguments.get("answerLanguage", language) != language:
        problems.append(f"answerLanguage {arguments.get('answerLanguage')} is not the follow-up's {language}")
    return problems


def new_topic_problems(row: dict[str, Any], today: date) -> list[str]:
    previous, expected = row["previous"], row["expected"]
    arguments = expected.get("arguments", {})
    problems = [f"expected: {p}" for p in argument_problems(SEARCH, arguments, today)]
    if (expected.get("routedBy"), expected.get("tool")) != ("any", SEARCH):
        problems.append("a new topic is a SearchArticles, routed by either the code or the model")
    if arguments.get("text") == previous["arguments"].get("text"):
        problems.append("a new topic has a new text")
    if "carried" in row["tags"]:  # the follow-up says so ("the same for …"): every filter but the text kept
        kept = {k: v for k, v in previous["arguments"].items() if k != "text"}
        if previous["tool"] != SEARCH or any(arguments.get(k) != v for k, v in kept.items()):
            problems.append("'carried': the previous search's filters are kept")
    elif (arguments.get("language"), arguments.get("dateFrom"), arguments.get("dateTo"), arguments.get("sort")) != (
        question_language(row), None, None, "newest"
    ):
        problems.append("a new topic carries no previous filter: the follow-up's language, no dates, newest")
    return problems


def row_problems(row: dict[str, Any], split: str) -> list[str]:
    """Every way ``row`` breaks the format (empty: a usable pair)."""
    if set(row) != ROW_KEYS:
        return [f"keys {sorted(row)} are not {sorted(ROW_KEYS)}"]
    today = _iso(row["today"])
    previous, expected = row["previous"], row["expected"]
    categories = [t for t in row["tags"] if t in CATEGORIES]
    problems = [] if row["split"] == split else [f"split {row['split']!r} in the {split} file"]
    if today is None or question_language(row) is None or len(categories) != 1:
        return [*problems, f"today {row['today']!r}, language tag, one of {CATEGORIES}: {row['tags']}"]
    if previous.get("tool") not in TOOL_FIELDS or not str(previous.get("question", "")).strip():
        return [*problems, f"previous turn {previous!r}"]
    problems += [f"previous: {p}" for p in argument_problems(previous["tool"], previous["arguments"], today)]
    if not str(row["followup"]).strip():
        problems.append("empty follow-up")
    if categories[0] == "filter-only":
        problems += filter_only_problems(row, today)
    elif categories[0] == "needs-model":
        problems += needs_model_problems(row, today)
    elif expected != {"routedBy": "any", "tool": None}:
        problems.append(f"not a request: expected {{'routedBy': 'any', 'tool': None}}, got {expected}")
    return problems


@pytest.fixture(scope="module")
def halves() -> dict[str, list[dict[str, Any]]]:
    return {split: load(split) for split in FILES}


def test_every_pair_is_well_formed(halves: dict[str, list[dict[str, Any]]]) -> None:
    problems = {row["id"]: p for split, rows in halves.items() for row in rows if (p := row_problems(row, split))}
    assert problems == {}


def test_halves_are_distinct_balanced_and_large(halves: dict[str, list[dict[str, Any]]]) -> None:
    dev, test = halves["dev"], halves["test"]
    ids = [row["id"] for row in dev + test]
    assert len(ids) == len(set(ids)) and len(ids) >= 70
    # the held-out half may be larger: the f3-* pairs were written for it alone
    assert len(dev) - len(test) <= 2
    assert not {r["followup"].casefold() for r in dev} & {r["followup"].casefold() for r in test}
    assert not {r["previous"]["question"] for r in dev} & {r["previous"]["question"] for r in test}
    for rows in (dev, test):
        per_language = Counter(question_language(row) for row in rows)
        assert set(per_language) == set(LANGUAGES)
        assert max(per_language.values()) - min(per_language.values()) <= 3, per_language


def test_every_kind_is_covered_in_each_half(halves: dict[str, list[dict[str, Any]]]) -> None:
    everything = halves["dev"] + halves["test"]
    assert sum("filter-only" in r["tags"] for r in everything) >= 45
    assert sum("needs-model" in r["tags"] for r in everything) >= 20
    for rows in halves.values():
        assert 3 <= sum("not-a-request" in r["tags"] for r in rows) <= 4
        filter_only = [r for r in rows if "filter-only" in r["tags"]]
        for kind in (*KIND_FIELDS, "combo"):
            with_kind = {question_language(r) for r in filter_only if kind in r["tags"]}
            assert with_kind == set(LANGUAGES), (kind, with_kind)
        assert any(r["previous"]["tool"] == SEARCH_AND_ASK for r in filter_only)
        assert len({r["today"] for r in rows}) >= 4
        for kind in MODEL_KINDS:
            assert {question_language(r) for r in rows if kind in r["tags"]} == set(LANGUAGES), kind


def _first_filter_only(halves: dict[str, list[dict[str, Any]]], kind: str) -> dict[str, Any]:
    row = next(r for r in halves["dev"] if "filter-only" in r["tags"] and r["tags"][2] == kind)
    return copy.deepcopy(row)


def test_the_checks_catch_wrong_labels(halves: dict[str, list[dict[str, Any]]]) -> None:
    """Each check can fail: a label broken in one way is reported (the loop above proves the set passes)."""
    language = _first_filter_only(halves, "language")
    language["expected"]["arguments"]["sort"] = "oldest"  # a change the kind does not name
    period = _first_filter_only(halves, "period")
    period["expected"]["arguments"]["dateFrom"] = "2099-01-01"  # after dateTo and after today
    unchanged = _first_filter_only(halves, "page")
    unchanged["expected"]["arguments"] = dict(unchanged["previous"]["arguments"])
    them = copy.deepcopy(next(r for r in halves["dev"] if "summarize-them" in r["tags"]))
    del them["expected"]["scope"]
    bad_date = _first_filter_only(halves, "order")
    bad_date["previous"]["arguments"]["dateTo"] = "2025-02-30"
    for broken, phrase in [
        (language, "'sort'], but the kinds"), (period, "is after dateTo"), (unchanged, "changes none of"),
        (them, "scoped to the previous page"), (bad_date, "is not an ISO date"),
    ]:
        found = row_problems(broken, "dev")
        assert any(phrase in p for p in found), (broken["id"], found)
    assert row_problems(language, "test")[0].startswith("split 'dev'")
