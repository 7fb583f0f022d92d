"""Qdrant Edge backend: the engine in-process, one shard directory per collection version.

A shard may be opened by one process only (its WAL is locked), and only once within it,
so a process keeps one ``EdgeVectorStore`` (see ``infra.vectors.process_vector_store``)
whose shards are shared by all threads. Edge has no aliases: which version serves reads
is the ``collection_versions.active`` row in Postgres, re-read on every question.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import qdrant_edge as qe

from infra.results import language_codes
from infra.vectors.base import (
    PAYLOAD_INDEXES,
    ChunkPoint,
    Hit,
    StoredChunk,
    VectorStoreError,
    check_collection_name,
)

_SCROLL_PAGE = 1_000


class EdgeVectorStore:
    backend = "edge"
    supports_aliases = False

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._shards: dict[str, qe.EdgeShard] = {}
        self._lock = threading.RLock()
        self.query_count = 0

    # ---- shards ----
    def _path(self, name: str) -> Path:
        return self.root / check_collection_name(name)

    def _shard(self, name: str) -> qe.EdgeShard:
        with self._lock:
            shard = self._shards.get(name)
            if shard is None:
                path = self._path(name)
                if not path.is_dir():
                    raise VectorStoreError(f"collection {name!r} does not exist under {self.root}")
                try:
                    shard = qe.EdgeShard.load(str(path))
                except Exception as exc:  # the engine reports lock/IO problems as plain Exception
                    raise VectorStoreError(
                        f"cannot open Qdrant Edge shard {path}: {exc}. Only one process may open it: "
                        "is another vector worker running on the same TURNOUT_DATA_DIR?"
                    ) from exc
                self._shards[name] = shard
            return shard

    def ensure_collection(self, name: str, dimension: int) -> None:
        with self._lock:
            path = self._path(name)
            if path.is_dir():
                existing = self.dimension(name)
                if existing != dimension:
                    raise VectorStoreError(f"collection {name!r} has dimension {existing}, not {dimension}")
                return
            # float16 storage halves the memory a query streams: scoped top-10 over 5k chunks
            # of a 100k collection ~2x faster (bench/rag_bench.py), at no measurable recall cost.
            config = qe.EdgeConfig(
                vectors=qe.EdgeVectorParams(
                    size=dimension, distance=qe.Distance.Cosine, datatype=qe.VectorStorageDatatype.Float16
                )
            )
            shard = qe.EdgeShard.create(str(path), config)
            for field in PAYLOAD_INDEXES:  # before any point is written
                shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Keyword))
            shard.flush()
            self._shards[name] = shard

    def collection_exists(self, name: str) -> bool:
        return self._path(name).is_dir()

    def list_collections(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir() if p.is_dir())

    def drop_collection(self, name: str) -> None:
        with self._lock:
            shard = self._shards.pop(name, None)
            if shard is not None:
                shard.close()
            shutil.rmtree(self._path(name), ignore_errors=True)

    def dimension(self, name: str) -> int:
        path = self._path(name) / "edge_config.json"  # written by EdgeShard.create
        try:
            vectors = json.loads(path.read_text())["vectors"]
            return int(vectors[""]["size"])
        except (OSError, KeyError, ValueError, TypeError) as exc:
            raise VectorStoreError(f"cannot read the vector size of collection {name!r} ({path}): {exc}") from exc

    def payload_indexes(self, name: str) -> set[str]:
        return set(self._shard(name).info().payload_schema)

    # ---- points ----
    def upsert(self, name: str, points: Sequence[ChunkPoint]) -> None:
        if not points:
            return
        shard = self._shard(name)
        shard.update(
            qe.UpdateOperation.upsert_points(
                [qe.Point(p.id, [float(x) for x in p.vector], p.payload()) for p in points]
            )
        )  # durable through the shard's write-ahead log; no flush per write

    def delete_localizations(self, name: str, localization_ids: Sequence[str], *, keep: Sequence[str] = ()) -> None:
        if not localization_ids:
            return
        flt = _localizations_filter(localization_ids)
        if keep:
            flt = qe.Filter(must=flt.must, must_not=[qe.HasIdCondition(set(keep))])
        self._shard(name).update(qe.UpdateOperation.delete_points_by_filter(flt))

    def chunks_of(
        self, name: str, localization_ids: Sequence[str], *, with_vectors: bool = False
    ) -> list[StoredChunk]:
        if not localization_ids:
            return []
        return list(self._scroll(name, _localizations_filter(localization_ids), with_vectors))

    def _scroll(self, name: str, flt: qe.Filter | None, with_vectors: bool) -> Iterator[StoredChunk]:
        shard = self._shard(name)
        offset: qe.PointId | None = None
        while True:
            records, offset = shard.scroll(
                qe.ScrollRequest(offset=offset, limit=_SCROLL_PAGE, filter=flt, with_payload=True,
                                 with_vector=with_vectors)
            )
            for r in records:
                yield StoredChunk.from_payload(r.id, r.payload, r.vector if with_vectors else None)
            if offset is None:
                return

    def count(self, name: str, *, localization_ids: Sequence[str] | None = None) -> int:
        if localization_ids is not None and not localization_ids:
            return 0
        flt = _localizations_filter(localization_ids) if localization_ids is not None else None
        return int(self._shard(name).count(qe.CountRequest(exact=True, filter=flt)))

    def search(
        self,
        name: str,
        vector: Sequence[float],
        *,
        limit: int,
        language: str | Sequence[str] | None = None,
        scope: Sequence[str] | None = None,
        exclude: Sequence[str] = (),
    ) -> list[Hit]:
        if scope is not None and not scope:
            return []  # an empty scope never searches the whole collection
        must: list[qe.ConditionType] = []
        languages = language_codes(language)
        if languages is not None:
            must.append(qe.FieldCondition("language", match=qe.MatchAny(languages)))
        if scope is not None:
            must.append(qe.FieldCondition("localization_id", match=qe.MatchAny(list(scope))))
        must_not: list[qe.ConditionType] = []
        if exclude:
            must_not.append(qe.FieldCondition("localization_id", match=qe.MatchAny(list(exclude))))
        shard = self._shard(name)
        self.query_count += 1
        points = shard.query(
            qe.QueryRequest(
                limit=limit,
                query=qe.Query.Nearest([float(x) for x in vector]),
                filter=qe.Filter(must=must, must_not=must_not) if must or must_not else None,  # pre-filter
                with_payload=True,
            )
        )
        return [Hit(float(p.score), StoredChunk.from_payload(p.id, p.payload)) for p in points]

    def optimize(self, name: str) -> None:
        shard = self._shard(name)
        shard.flush()  # persist the segments before they start serving reads
        shard.optimize()

    # ---- aliases: not an Edge feature; reads follow collection_versions.active ----
    def set_alias(self, alias: str, name: str) -> None:
        raise VectorStoreError("Qdrant Edge has no aliases; the active version is kept in Postgres")

    def resolve_alias(self, alias: str) -> str | None:
        return None

    def close(self) -> None:
        with self._lock:
            for shard in self._shards.values():
                shard.close()
            self._shards.clear()


def _localizations_filter(ids: Sequence[str]) -> qe.Filter:
    return qe.Filter(must=[qe.FieldCondition("localization_id", match=qe.MatchAny(list(ids)))])

