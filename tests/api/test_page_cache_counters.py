"""Page-cache hits and misses are counted (issue 16, item 7) and shown by /v1/ops/queues and
/metrics: the real API, workers, Redis and Postgres, the scripted LLM for the one routing call."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from infra.settings import Settings
from tests.api.support import ApiServer, issue_key, wait_for_job
from tests.support.llm_server import ScriptedLLM, ToolCall

pytestmark = pytest.mark.usefixtures("celery_worker", "shared_corpus")


def _cache(admin: httpx.Client) -> tuple[dict[str, Any], dict[str, float]]:
    summary = admin.get("/v1/ops/queues").json()["reliability"]["pageCache"]
    metrics = {s.labels["outcome"]: s.value
               for family in text_string_to_metric_families(admin.get("/metrics").text)
               for s in family.samples if s.name == "turnout_page_cache_requests_total"}
    return summary, metrics


def test_page_reads_count_hits_and_misses(
    api: ApiServer, client: httpx.Client, llm: ScriptedLLM, settings: Settings
) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "ruby", "language": "en"}))
    submitted = client.post("/v1/questions", json={"question": "Ruby articles in English", "pageSize": 5})
    assert submitted.status_code == 202, submitted.text
    job_id = submitted.json()["id"]
    doc = wait_for_job(client, job_id)
    assert doc["status"] == "succeeded" and doc["result"]["articles"]["totalPages"] >= 2, doc

    with api.client(issue_key(settings, "ops", admin=True).token) as admin:
        before, before_metrics = _cache(admin)
        sources = [client.get(f"/v1/jobs/{job_id}/pages/{n}").json()["source"] for n in (1, 2, 2)]
        assert sources == ["cache", "search", "cache"]
        after, after_metrics = _cache(admin)
    assert after["hit"] - before["hit"] == 2 and after["miss"] - before["miss"] == 1, (before, after)
    assert after_metrics["hit"] - before_metrics.get("hit", 0) == 2
    assert after_metrics["miss"] - before_metrics.get("miss", 0) == 1
