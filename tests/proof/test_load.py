"""Load, correctness only (timings go to bench/load_bench.py): concurrent clients submit and
poll for a bounded time against the real API and worker processes; every accepted job ends
final exactly once and nothing is lost."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from bench.load_bench import lost_jobs, plant_articles, run_load, script_search
from infra.settings import Settings
from tests.api.support import issue_key, query
from tests.support.stack import Stack, open_stack

CLIENTS = 8
SECONDS = 12.0


@pytest.fixture(scope="module")
def load_stack(test_environment: None, settings: Settings) -> Iterator[Stack]:
    with open_stack(settings, "load", vector=False) as stack:
        plant_articles(stack.settings)
        yield stack


def test_concurrent_clients_lose_nothing(load_stack: Stack) -> None:
    script_search(load_stack.llm)
    token = issue_key(load_stack.settings, "load").token
    report = run_load(load_stack.api.base_url, [token], clients=CLIENTS, seconds=SECONDS)
    print(json.dumps(report.summary()))  # shown with -s; the numbers are bench/load_bench.py's business

    assert report.refused == [] and report.unfinished == []
    assert len(report.accepted) >= CLIENTS  # every client got at least one job through
    assert len(set(report.accepted)) == len(report.accepted) == len(report.final)
    assert report.failed == 0, {s for s in report.final.values()}
    assert lost_jobs(load_stack.settings, report) == []
    # No job the clients did not submit, and each ran its one routing round and one search.
    [counts] = query(load_stack.settings,
                     "SELECT count(*) AS jobs, "
                     "(SELECT count(*) FROM audit_events WHERE kind = 'llm_round') AS rounds, "
                     "(SELECT count(*) FROM audit_events WHERE kind = 'tool_execution') AS executions FROM jobs")
    assert counts == {"jobs": len(report.accepted), "rounds": len(report.accepted),
                      "executions": len(report.accepted)}
    results = query(load_stack.settings, "SELECT DISTINCT result->'search'->>'text' AS text, "
                                         "jsonb_array_length(result->'articles'->'items') > 0 AS found FROM jobs")
    assert results == [{"text": "docker", "found": True}]
