"""Optional reranking: a real HTTP rerank endpoint (a small server in this process speaking the
`/v1/rerank` shape; the relevance is the count of question words a document holds), after
fusion, never outside the scope, the fused order kept when the endpoint fails, off by default."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from infra.db.rag_sources import published_between
from infra.messages.ask import PublishedPeriod
from infra.settings import RetrievalMode, Settings
from infra.vectors import Hit, StoredChunk
from retrieval.hybrid import RetrievalConfig, retrieve, retrieve_preferring_period
from retrieval.rag import RagContext, resolve_read_version
from retrieval.rerank import Reranker
from tests.retrieval.rag_fixtures import rag_db, rag_settings, store
from tests.retrieval.test_hybrid import RECORDS, REXML_IDS, ZLIB_QUESTION, ctx

FIXTURES = (rag_db, rag_settings, store, ctx)


class _Endpoint:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_next = 0  # answer fail_status this many times first
        self.fail_status = 503
        self.extra_index = False  # also return an index that is not a candidate


@pytest.fixture
def endpoint() -> Iterator[tuple[str, _Endpoint]]:
    state = _Endpoint()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            if self.path != "/v1/rerank":
                self.send_error(404)
                return
            if state.fail_next:
                state.fail_next -= 1
                self.send_error(state.fail_status)
                return
            words = {w.lower().strip("?.,") for w in body["query"].split()}
            results = [{"index": i, "relevance_score": float(sum(w in doc.lower() for w in words))}
                       for i, doc in enumerate(body["documents"])]
            if state.extra_index:
                results.append({"index": len(body["documents"]) + 5, "relevance_score": 99.0})
            payload = json.dumps({"results": results}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _hit(point: str, text: str) -> Hit:
    return Hit(0.0, StoredChunk(id=point, localization_id=point, article_id=point, language="en", position=0,
                                text=text, content_hash=""))


HITS = [_hit("a", "nothing relevant"), _hit("b", "zlib overflow"), _hit("c", "zlib gzip overflow details")]


async def test_reranking_reorders_the_candidates_by_the_endpoint(endpoint: tuple[str, _Endpoint]) -> None:
    url, state = endpoint
    reranker = Reranker(url, "bge-reranker")
    try:
        ranked = await reranker.rerank("zlib gzip overflow?", HITS, limit=2)
        assert [h.chunk.id for h in ranked] == ["c", "b"] and ranked[0].score == 3.0
        assert state.requests[0]["model"] == "bge-reranker" and len(state.requests[0]["documents"]) == 3
        state.extra_index = True  # an index outside the candidates is never returned
        assert {h.chunk.id for h in await reranker.rerank("zlib", HITS, limit=5)} <= {"a", "b", "c"}
        state.fail_next = 2  # retryable errors are retried
        assert [h.chunk.id for h in await reranker.rerank("gzip", HITS, limit=1)] == ["c"]
        assert reranker.failures == 0
    finally:
        await reranker.close()


async def test_the_endpoint_is_retried_on_the_shared_transient_statuses_only(endpoint: tuple[str, _Endpoint]) -> None:
    url, state = endpoint
    reranker = Reranker(url, "bge-reranker", max_retries=1)
    try:
        state.fail_next, state.fail_status = 1, 425  # Too Early: transient by the one policy (infra/transient.py)
        assert [h.chunk.id for h in await reranker.rerank("gzip", HITS, limit=1)] == ["c"]
        assert reranker.failures == 0 and len(state.requests) == 2
        state.fail_next, state.fail_status = 1, 400  # the request's fault: not tried again
        assert [h.chunk.id for h in await reranker.rerank("gzip", HITS, limit=1)] == ["a"]
        assert reranker.failures == 1 and len(state.requests) == 3
    finally:
        await reranker.close()


async def test_a_failing_endpoint_keeps_the_fused_order() -> None:
    reranker = Reranker("http://127.0.0.1:9/v1", "x", max_retries=0)  # discard port: nothing listens
    try:
        assert [h.chunk.id for h in await reranker.rerank("zlib", HITS, limit=2)] == ["a", "b"]
        assert reranker.failures == 1
    finally:
        await reranker.close()


def test_reranking_is_off_by_default() -> None:
    settings = Settings()
    assert settings.rag_rerank_url is None and Reranker.from_settings(settings) is None
    assert RetrievalConfig.from_settings(settings).rerank is False
    assert RetrievalConfig.from_settings(settings.model_copy(update={"rag_rerank_url": "http://r/v1"})).rerank


async def test_reranking_runs_after_fusion_inside_the_scope(
    ctx: RagContext, endpoint: tuple[str, _Endpoint]
) -> None:
    url, state = endpoint
    reranker = Reranker(url, "x")
    version = await resolve_read_version(ctx)
    assert version is not None
    scope = REXML_IDS[:3]
    try:
        config = RetrievalConfig(mode=RetrievalMode.HYBRID, top_k=4, rerank=True, rerank_candidates=10)
        found = await retrieve(ctx.pool, ctx.store, ctx.embedders, version, ZLIB_QUESTION, language=None,
                               scope=scope, config=config, reranker=reranker)
    finally:
        await reranker.close()
    assert found.hits and {h.chunk.localization_id for h in found.hits} <= set(scope)
    sent = state.requests[-1]["documents"]
    candidates = {h.chunk.text for h in [*found.vector_hits, *found.lexical_hits]}
    assert set(sent) <= candidates and len(found.hits) <= 4  # only fused, scoped candidates were sent
    scores = [h.score for h in found.hits]
    assert scores == sorted(scores, reverse=True)


async def test_a_period_ask_is_reranked_once_after_its_two_lists_are_fused(
    ctx: RagContext, endpoint: tuple[str, _Endpoint]
) -> None:
    """The period's list and the whole collection's are fused first; the reranker then orders their
    union once. Reranking each list before fusion called it twice and let fusion reorder what it ranked."""
    url, state = endpoint
    reranker = Reranker(url, "x")
    version = await resolve_read_version(ctx)
    assert version is not None
    question = "What did the REXML denial of service of August 2024 affect?"
    august = PublishedPeriod(date_from=date(2024, 8, 1), date_to=date(2024, 8, 31))
    in_august = set(await published_between(ctx.pool, august.date_from, august.date_to, None))
    assert in_august and in_august < {r.id for r in RECORDS}
    try:
        config = RetrievalConfig(mode=RetrievalMode.HYBRID, top_k=4, rerank=True, rerank_candidates=12)
        found = await retrieve_preferring_period(
            ctx.pool, ctx.store, ctx.embedders, version, question, period=august, language=None, scope=None,
            config=config, reranker=reranker)
    finally:
        await reranker.close()
    assert len(state.requests) == 1  # one call, on the fused union
    sent = state.requests[0]["documents"]
    assert len(sent) == 12  # the candidates, not each list's top 4
    assert len(found.hits) == 4 and {h.chunk.text for h in found.hits} <= set(sent)
    assert any(h.chunk.localization_id in in_august for h in found.hits)
    scores = [h.score for h in found.hits]
    assert scores == sorted(scores, reverse=True) and scores[0] >= 1.0  # the reranker's order and scores
