"""Optional reranking of the fused RAG candidates by a cross-encoder endpoint.

Off unless ``TURNOUT_RAG_RERANK_URL`` is set. The endpoint speaks the ``POST {url}/rerank``
shape that OpenAI-compatible servers with a cross-encoder expose (vLLM, llama.cpp server,
Text Embeddings Inference, Infinity; Jina/Cohere style): ``{"model", "query", "documents",
"top_n"}`` → ``{"results": [{"index", "relevance_score"}]}``.

It only reorders what fusion returned (already restricted to the language, the scope and the
visible articles), so it can never widen the scope: an index it returns that is not one of the
candidates is ignored. If the endpoint fails through its retries, the fused order stands: a
reranker outage costs ranking quality, never the answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import httpx
from tenacity import (
    AsyncRetrying,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    wait_random_exponential,
)
from tenacity.stop import stop_base

from infra.settings import Settings
from infra.transient import retryable_status
from infra.vectors import Hit

log = logging.getLogger("turnout.rerank")

RERANK_TIMEOUT_S = 10.0


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, httpx.HTTPStatusError):
        return retryable_status(exc.response.status_code)
    return isinstance(exc, httpx.TransportError)


class Reranker:
    def __init__(self, url: str, model: str, api_key: str | None = None, *, max_retries: int = 2) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.url = url.rstrip("/") + "/rerank"
        self.model = model
        self.max_retries = max_retries
        self.client = httpx.AsyncClient(headers=headers, timeout=RERANK_TIMEOUT_S)
        self.calls = 0
        self.failures = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> Reranker | None:
        if not settings.rag_rerank_url:
            return None
        key = settings.rag_rerank_api_key.get_secret_value() if settings.rag_rerank_api_key else None
        return cls(settings.rag_rerank_url, settings.rag_rerank_model, key, max_retries=settings.llm_max_retries)

    async def rerank(self, question: str, hits: Sequence[Hit], *, limit: int, deadline: float | None = None) -> list[Hit]:
        """``hits`` reordered by the endpoint's relevance, at most ``limit``; on failure the
        first ``limit`` in their given order."""
        if len(hits) <= 1:
            return list(hits[:limit])
        try:
            scores = await self._scores(question, [h.chunk.text for h in hits], deadline)
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            self.failures += 1
            log.warning("reranking failed, keeping the fused order: %s", exc)
            return list(hits[:limit])
        ranked = sorted(scores.items(), key=lambda item: -item[1])
        return [Hit(score, hits[index].chunk) for index, score in ranked[:limit]]

    async def _scores(self, question: str, documents: list[str], deadline: float | None) -> dict[int, float]:
        stop: stop_base = stop_after_attempt(self.max_retries + 1)
        if deadline is not None:
            stop = stop | stop_before_delay(max(0.0, deadline - time.monotonic()))
        async for attempt in AsyncRetrying(
            retry=retry_if_exception(_retryable), stop=stop, wait=wait_random_exponential(0.2, 5), reraise=True
        ):
            with attempt:
                self.calls += 1
                response = await self.client.post(self.url, json={
                    "model": self.model, "query": question, "documents": documents, "top_n": len(documents),
                })
                response.raise_for_status()
                results = response.json()["results"]
        scores: dict[int, float] = {}
        for item in results:
            index = int(item["index"])
            if 0 <= index < len(documents):  # never anything but the candidates it was given
                scores[index] = float(item["relevance_score"])
        return scores

    async def close(self) -> None:
        await self.client.aclose()
