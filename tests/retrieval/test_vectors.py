"""The vector-store interface: both backends (Qdrant Edge in-process, qdrant-client local mode)
pass the same tests on the real engine."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from infra.settings import Settings
from infra.vectors import PAYLOAD_INDEXES, ChunkPoint, VectorStore, VectorStoreError, open_vector_store
from infra.vectors.edge import EdgeVectorStore
from infra.vectors.server import ServerVectorStore
from retrieval.chunking import point_id
from tests.retrieval.rag_fixtures import store

# Shared fixtures (edge/server stores, the own database) used by the tests below.
FIXTURES = (store,)

DIM = 4


def unit(*xs: float) -> list[float]:
    norm = math.sqrt(sum(x * x for x in xs))
    return [x / norm for x in xs]


def point(loc: str, position: int, vector: list[float], language: str = "en") -> ChunkPoint:
    return ChunkPoint(
        id=point_id(loc, position), vector=vector, localization_id=loc, article_id=f"story-{loc}",
        language=language, position=position, text=f"{loc} chunk {position}", content_hash=f"h-{loc}-{position}",
    )


QUERY = unit(1, 0, 0, 0)


def seed(store: VectorStore) -> None:
    """Ten decoys almost equal to QUERY, out of any scope used below; two far-away in-scope points."""
    store.ensure_collection("c1", DIM)
    decoys = [point(f"decoy-{i}", 0, unit(1, 0.01 * (i + 1), 0, 0)) for i in range(10)]
    wanted = [point("in-a", 0, unit(0, 1, 0, 0.2), "de"), point("in-b", 0, unit(0.1, 0, 1, 0), "ru"),
              point("in-b", 1, unit(0, 0, 0, 1), "ru")]
    store.upsert("c1", decoys + wanted)


def test_payload_indexes_exist_before_any_point(store: VectorStore) -> None:
    requested: list[str] = []
    if isinstance(store, ServerVectorStore):
        # qdrant-client's local mode keeps no payload schema: check the requests it got instead.
        create_index = store.client.create_payload_index

        def spy(collection_name: str, field_name: str, *args: Any, **kwargs: Any) -> Any:
            assert store.count(collection_name) == 0  # before ingest
            requested.append(field_name)
            return create_index(collection_name, field_name, *args, **kwargs)

        store.client.create_payload_index = spy  # type: ignore[method-assign]
    store.ensure_collection("fresh", DIM)
    assert store.count("fresh") == 0
    assert {"localization_id", "article_id", "language"} <= set(PAYLOAD_INDEXES)
    if isinstance(store, ServerVectorStore):
        assert requested == list(PAYLOAD_INDEXES)
    else:
        assert store.payload_indexes("fresh") == set(PAYLOAD_INDEXES)
    assert store.dimension("fresh") == DIM
    store.ensure_collection("fresh", DIM)  # idempotent
    with pytest.raises(VectorStoreError, match="dimension"):
        store.ensure_collection("fresh", DIM + 1)


def test_scope_filters_inside_the_query_not_after_top_k(store: VectorStore) -> None:
    seed(store)
    global_top = store.search("c1", QUERY, limit=3)
    assert {h.chunk.localization_id for h in global_top} <= {f"decoy-{i}" for i in range(10)}
    # A post-filter over those 3 would return nothing; the pre-filter finds the in-scope points.
    scoped = store.search("c1", QUERY, limit=3, scope=["in-a", "in-b"])
    assert {h.chunk.localization_id for h in scoped} == {"in-a", "in-b"}
    assert len(scoped) == 3
    assert scoped[0].chunk.localization_id == "in-b" and scoped[0].chunk.position == 0  # the closest in scope
    assert scoped == sorted(scoped, key=lambda h: -h.score)
    hit = scoped[0].chunk
    assert (hit.article_id, hit.language, hit.text, hit.content_hash) == ("story-in-b", "ru", "in-b chunk 0", "h-in-b-0")


def test_language_filter_combines_with_scope(store: VectorStore) -> None:
    seed(store)
    assert {h.chunk.localization_id for h in store.search("c1", QUERY, limit=5, language="de")} == {"in-a"}
    assert store.search("c1", QUERY, limit=5, language="de", scope=["in-b"]) == []
    assert {h.chunk.language for h in store.search("c1", QUERY, limit=20, language="en")} == {"en"}


def test_a_list_of_languages_filters_inside_the_query(store: VectorStore) -> None:
    seed(store)
    # The ten English decoys are nearer than any de/ru point: a post-filter over a top-5 finds nothing.
    found = store.search("c1", QUERY, limit=5, language=["de", "ru"])
    assert {(h.chunk.localization_id, h.chunk.position) for h in found} == {("in-a", 0), ("in-b", 0), ("in-b", 1)}
    assert {h.chunk.localization_id for h in store.search("c1", QUERY, limit=5, language=["de"])} == {"in-a"}
    assert {h.chunk.language for h in store.search("c1", QUERY, limit=20, language=["en", "ru"])} == {"en", "ru"}
    assert store.search("c1", QUERY, limit=5, language=["de", "en"], scope=["in-b"]) == []


def test_empty_scope_runs_no_query(store: VectorStore) -> None:
    seed(store)
    before = store.query_count
    assert store.search("c1", QUERY, limit=5, scope=[]) == []
    assert store.query_count == before
    store.search("c1", QUERY, limit=5, scope=["in-a"])
    assert store.query_count == before + 1


def test_rewrites_replace_and_deletes_by_localization(store: VectorStore) -> None:
    seed(store)
    assert store.count("c1") == 13
    store.upsert("c1", [point("in-b", 0, unit(0, 0, 1, 0), "ru")])  # same id: replaced, not added
    assert store.count("c1") == 13
    assert store.count("c1", localization_ids=["in-b"]) == 2
    chunks = store.chunks_of("c1", ["in-b"], with_vectors=True)
    by_position = {c.position: c for c in chunks}
    assert set(by_position) == {0, 1}
    assert by_position[0].vector is not None
    assert by_position[0].vector == pytest.approx(unit(0, 0, 1, 0), abs=1e-3)  # float16 storage
    assert store.chunks_of("c1", ["in-b"])[0].vector is None
    store.delete_localizations("c1", ["in-b", "decoy-0"])
    assert store.count("c1") == 10
    assert store.count("c1", localization_ids=[]) == 0
    assert store.chunks_of("c1", []) == []


def test_deleting_by_localization_can_keep_given_points(store: VectorStore) -> None:
    seed(store)
    [kept] = [c.id for c in store.chunks_of("c1", ["in-b"]) if c.position == 0]
    store.delete_localizations("c1", ["in-b", "decoy-0"], keep=[kept])
    assert [(c.localization_id, c.position) for c in store.chunks_of("c1", ["in-b", "decoy-0"])] == [("in-b", 0)]
    assert store.count("c1") == 11


def test_collections_are_listed_and_dropped(store: VectorStore) -> None:
    store.ensure_collection("turnout_chunks_a", DIM)
    store.ensure_collection("turnout_chunks_b", DIM)
    assert {"turnout_chunks_a", "turnout_chunks_b"} <= set(store.list_collections())
    store.drop_collection("turnout_chunks_a")
    assert not store.collection_exists("turnout_chunks_a")
    assert store.collection_exists("turnout_chunks_b")
    with pytest.raises(ValueError, match="invalid collection name"):
        store.ensure_collection("../escape", DIM)


def test_chunks_of_pages_through_large_localizations(store: VectorStore) -> None:
    store.ensure_collection("big", DIM)
    store.upsert("big", [point("long", i, unit(1, i, 0, 1)) for i in range(1_203)])
    assert len(store.chunks_of("big", ["long"])) == 1_203
    store.optimize("big")
    assert store.count("big") == 1_203


def test_server_backend_switches_reads_with_a_real_alias(tmp_path: Path) -> None:
    from qdrant_client import QdrantClient

    store = ServerVectorStore(QdrantClient(path=str(tmp_path)))
    assert store.supports_aliases
    store.ensure_collection("v1", DIM)
    store.ensure_collection("v2", DIM)
    assert store.resolve_alias("turnout_chunks") is None
    store.set_alias("turnout_chunks", "v1")
    assert store.resolve_alias("turnout_chunks") == "v1"
    store.set_alias("turnout_chunks", "v2")  # delete + create in one request
    assert store.resolve_alias("turnout_chunks") == "v2"
    store.close()


def test_edge_backend_keeps_no_aliases_and_one_opener(tmp_path: Path) -> None:
    first = EdgeVectorStore(tmp_path)
    first.ensure_collection("v1", DIM)
    first.upsert("v1", [point("a", 0, QUERY)])
    assert not first.supports_aliases and first.resolve_alias("turnout_chunks") is None
    with pytest.raises(VectorStoreError, match="no aliases"):
        first.set_alias("turnout_chunks", "v1")
    second = EdgeVectorStore(tmp_path)  # as if a second process opened the same directory
    with pytest.raises(VectorStoreError, match="Only one process may open it"):
        second.count("v1")
    first.close()
    assert second.count("v1") == 1  # once released, it opens; the data survived
    second.close()


def test_factory_picks_the_backend_from_settings(settings: Settings, tmp_path: Path) -> None:
    edge = open_vector_store(settings, edge_path=tmp_path)
    assert isinstance(edge, EdgeVectorStore) and edge.root == tmp_path
    edge.close()
    server = open_vector_store(settings.model_copy(update={"qdrant_url": "http://127.0.0.1:1"}))
    assert isinstance(server, ServerVectorStore)
    with pytest.raises(VectorStoreError, match="unreachable"):
        server.ensure_collection("x", DIM)  # retried, then a clear error
    server.close()
