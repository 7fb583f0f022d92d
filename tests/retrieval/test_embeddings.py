"""Embeddings: the local USE model (offline, in the wheel) and the OpenAI-compatible endpoint
(the scripted server's /v1/embeddings, through the real `openai` client)."""

from __future__ import annotations

import numpy as np
import pytest

from infra.settings import ConfigError, EmbeddingProvider, Settings
from retrieval.embeddings import (
    LOCAL_DIMENSION,
    LOCAL_MODEL,
    EmbedderRegistry,
    EmbeddingError,
    LocalEmbedder,
    OpenAIEmbedder,
    create_embedder,
)
from tests.support.llm_server import ScriptedLLM


async def test_local_model_is_multilingual_normalized_and_offline() -> None:
    embedder = LocalEmbedder()
    assert await embedder.dimension() == LOCAL_DIMENSION == 512
    texts = [
        "Wie erneuere ich ein TLS-Zertifikat automatisch?",  # de question
        "Как автоматически продлить сертификат TLS?",  # the same in ru
        "Renew the TLS certificate automatically with the ACME client.",  # en answer
        "Tomatoes need six hours of sun and water in the morning.",  # unrelated
    ]
    vectors = await embedder.embed(texts)
    assert vectors.shape == (4, 512) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > similarity[0, 3] + 0.2  # de ↔ ru same meaning beats unrelated
    assert similarity[1, 2] > similarity[1, 3] + 0.2  # ru question ↔ en answer
    assert embedder.texts_embedded == 4
    assert (await embedder.embed([])).shape == (0, 512)


def test_a_message_embedded_again_is_not_encoded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # The request gate embeds a message for its meaning signal and for the examples' vote.
    from retrieval import embeddings

    model, encoded = embeddings._use(), []

    class Counting:
        def encode(self, texts: list[str]) -> np.ndarray:
            encoded.append(list(texts))
            return model.encode(texts)

    monkeypatch.setattr(embeddings, "_use", Counting)
    embedder, other = LocalEmbedder(), LocalEmbedder()
    message = "Wann endet der OCSP-Dienst von Let's Encrypt? (a message no other test embeds)"
    first = embedder.embed_sync([message])
    again = other.embed_sync([message])
    assert encoded == [[message]] and np.array_equal(first, again) and first.shape == (1, LOCAL_DIMENSION)
    first[0, 0] = 9.0  # a caller's copy: the kept row is not changed through it
    assert other.embed_sync([message])[0, 0] != 9.0
    assert np.allclose(again, LocalEmbedder().embed_sync([message, "x"])[:1], atol=1e-6)  # as a batch embeds it
    assert embedder.texts_embedded == other.texts_embedded - 1 == 1


def _openai_settings(settings: Settings, llm: ScriptedLLM) -> Settings:
    return settings.model_copy(update={
        "embedding_provider": EmbeddingProvider.OPENAI, "embedding_base_url": llm.base_url,
        "embedding_model": "scripted-embedder",
    })


async def test_openai_compatible_endpoint_batches_and_normalizes(settings: Settings, llm: ScriptedLLM) -> None:
    embedder = create_embedder(_openai_settings(settings, llm))
    assert isinstance(embedder, OpenAIEmbedder) and embedder.model == "scripted-embedder"
    texts = [f"text number {i} about certificates" for i in range(70)]
    vectors = await embedder.embed(texts)
    assert vectors.shape == (70, llm.embedding_dim)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    requests = llm.embedding_requests
    assert [len(r["input"]) for r in requests] == [64, 6]  # batched
    assert {r["model"] for r in requests} == {"scripted-embedder"}
    assert await embedder.dimension() == llm.embedding_dim  # learned from the replies, no extra call
    assert len(llm.embedding_requests) == 2
    same = await embedder.embed([texts[0]])
    assert np.allclose(same[0], vectors[0], atol=1e-6)


async def test_openai_endpoint_failing_is_retried_then_a_clear_error(settings: Settings, llm: ScriptedLLM) -> None:
    s = _openai_settings(settings, llm)
    llm.fail_every_call("embeddings down")
    embedder = OpenAIEmbedder(s, "scripted-embedder")
    with pytest.raises(EmbeddingError, match="scripted-embedder"):
        await embedder.embed(["x"])
    assert len(llm.embedding_requests) == s.llm_max_retries + 1  # 5xx retried, then given up


def test_model_must_be_served_by_the_provider(settings: Settings) -> None:
    assert isinstance(create_embedder(settings), LocalEmbedder)
    with pytest.raises(ConfigError, match="TURNOUT_EMBEDDING_PROVIDER=openai"):
        create_embedder(settings, "text-embedding-3-small")
    registry = EmbedderRegistry(settings)
    assert registry.get(LOCAL_MODEL) is registry.get(LOCAL_MODEL)
