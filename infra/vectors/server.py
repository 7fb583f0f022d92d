"""Qdrant server backend (``qdrant-client``): production, many workers, real aliases.

Reads follow the alias ``settings.qdrant_collection``; a re-embedding run switches it to
the new version in one alias request (Qdrant applies the delete + create atomically).
Every call retries transport errors, 429 and 5xx with jittered back-off (tenacity);
never a 4xx. ``QdrantClient(path=...)`` / ``(":memory:")`` (local mode) runs the same code
in tests.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TypeVar

import httpx
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from infra.results import language_codes
from infra.transient import retryable_status
from infra.vectors.base import (
    PAYLOAD_INDEXES,
    ChunkPoint,
    Hit,
    StoredChunk,
    VectorStoreError,
    check_collection_name,
)

T = TypeVar("T")
_SCROLL_PAGE = 1_000
_UPSERT_BATCH = 256


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, ResponseHandlingException | httpx.TransportError):
        return True
    if isinstance(exc, UnexpectedResponse):
        return exc.status_code is not None and retryable_status(exc.status_code)
    return False


class ServerVectorStore:
    backend = "server"
    supports_aliases = True

    def __init__(self, client: QdrantClient, *, max_attempts: int = 4) -> None:
        self.client = client
        self.query_count = 0
        self._retrying = Retrying(
            retry=retry_if_exception(is_retryable),
            wait=wait_random_exponential(multiplier=0.3, max=10),
            stop=stop_after_attempt(max_attempts),
            reraise=True,
        )

    @classmethod
    def connect(cls, url: str, api_key: str | None = None, *, timeout_s: int = 10) -> ServerVectorStore:
        return cls(QdrantClient(url=url, api_key=api_key, timeout=timeout_s, check_compatibility=False))

    def _call(self, fn: Callable[[], T]) -> T:
        try:
            return self._retrying(fn)
        except UnexpectedResponse as exc:
            raise VectorStoreError(f"Qdrant server refused the request: {exc}") from exc
        except (ResponseHandlingException, httpx.TransportError) as exc:
            raise VectorStoreError(f"Qdrant server unreachable (after retries): {exc}") from exc

    # ---- collections ----
    def ensure_collection(self, name: str, dimension: int) -> None:
        check_collection_name(name)
        if self._call(lambda: self.client.collection_exists(name)):
            existing = self.dimension(name)
            if existing != dimension:
                raise VectorStoreError(f"collection {name!r} has dimension {existing}, not {dimension}")
            return
        try:
            self._call(
                lambda: self.client.create_collection(
                    name,
                    vectors_config=models.VectorParams(
                        size=dimension, distance=models.Distance.COSINE, datatype=models.Datatype.FLOAT16
                    ),
                )
            )
        except VectorStoreError:
            # Another worker may have created it between our check and create.
            if not self._call(lambda: self.client.collection_exists(name)):
                raise
        with warnings.catch_warnings():
            # Local mode (tests) warns that payload indexes are no-ops there; the server uses them.
            warnings.filterwarnings("ignore", message="Payload indexes have no effect")
            for field in PAYLOAD_INDEXES:  # before any point is written
                self._call(
                    lambda field=field: self.client.create_payload_index(  # type: ignore[misc]
                        name, field, models.PayloadSchemaType.KEYWORD, wait=True
                    )
                )

    def collection_exists(self, name: str) -> bool:
        return bool(self._call(lambda: self.client.collection_exists(check_collection_name(name))))

    def list_collections(self) -> list[str]:
        return sorted(c.name for c in self._call(self.client.get_collections).collections)

    def drop_collection(self, name: str) -> None:
        self._call(lambda: self.client.delete_collection(check_collection_name(name)))

    def dimension(self, name: str) -> int:
        info = self._call(lambda: self.client.get_collection(name))
        vectors = info.config.params.vectors
        if isinstance(vectors, models.VectorParams):
            return int(vectors.size)
        raise VectorStoreError(f"collection {name!r} does not have a single unnamed dense vector")

    def payload_indexes(self, name: str) -> set[str]:
        """The server's payload schema (local mode keeps none: it reports an empty set)."""
        return set(self._call(lambda: self.client.get_collection(name)).payload_schema or {})

    # ---- points ----
    def upsert(self, name: str, points: Sequence[ChunkPoint]) -> None:
        for start in range(0, len(points), _UPSERT_BATCH):
            batch = [
                models.PointStruct(id=p.id, vector=[float(x) for x in p.vector], payload=p.payload())
                for p in points[start:start + _UPSERT_BATCH]
            ]
            self._call(lambda batch=batch: self.client.upsert(name, batch, wait=True))  # type: ignore[misc]

    def delete_localizations(self, name: str, localization_ids: Sequence[str], *, keep: Sequence[str] = ()) -> None:
        if not localization_ids:
            return
        flt = _localizations_filter(localization_ids)
        if keep:
            flt.must_not = [models.HasIdCondition(has_id=list(keep))]
        selector = models.FilterSelector(filter=flt)
        self._call(lambda: self.client.delete(name, points_selector=selector, wait=True))

    def chunks_of(
        self, name: str, localization_ids: Sequence[str], *, with_vectors: bool = False
    ) -> list[StoredChunk]:
        if not localization_ids:
            return []
        flt = _localizations_filter(localization_ids)
        out: list[StoredChunk] = []
        offset: models.ExtendedPointId | None = None
        while True:
            records, offset = self._call(
                lambda offset=offset: self.client.scroll(  # type: ignore[misc]
                    name, scroll_filter=flt, limit=_SCROLL_PAGE, offset=offset, with_payload=True,
                    with_vectors=with_vectors,
                )
            )
            for r in records:
                vector = r.vector if with_vectors and isinstance(r.vector, list) else None
                out.append(StoredChunk.from_payload(r.id, r.payload, vector))
            if offset is None:
                return out

    def count(self, name: str, *, localization_ids: Sequence[str] | None = None) -> int:
        if localization_ids is not None and not localization_ids:
            return 0
        flt = _localizations_filter(localization_ids) if localization_ids is not None else None
        return int(self._call(lambda: self.client.count(name, count_filter=flt, exact=True)).count)

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
        must: list[models.Condition] = []
        languages = language_codes(language)
        if languages is not None:
            must.append(models.FieldCondition(key="language", match=models.MatchAny(any=languages)))
        if scope is not None:
            must.append(models.FieldCondition(key="localization_id", match=models.MatchAny(any=list(scope))))
        must_not: list[models.Condition] = []
        if exclude:
            must_not.append(models.FieldCondition(key="localization_id", match=models.MatchAny(any=list(exclude))))
        self.query_count += 1
        response = self._call(
            lambda: self.client.query_points(
                name,
                query=[float(x) for x in vector],
                query_filter=models.Filter(must=must, must_not=must_not) if must or must_not else None,  # pre-filter
                limit=limit,
                with_payload=True,
            )
        )
        return [Hit(float(p.score), StoredChunk.from_payload(p.id, p.payload)) for p in response.points]

    def optimize(self, name: str) -> None:
        """The server indexes in the background by itself; nothing to do."""

    # ---- aliases ----
    def set_alias(self, alias: str, name: str) -> None:
        check_collection_name(alias)
        ops: list[models.DeleteAliasOperation | models.CreateAliasOperation] = []
        if self.resolve_alias(alias) is not None:
            ops.append(models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)))
        ops.append(
            models.CreateAliasOperation(create_alias=models.CreateAlias(collection_name=name, alias_name=alias))
        )
        self._call(lambda: self.client.update_collection_aliases(ops))  # one request: atomic switch

    def resolve_alias(self, alias: str) -> str | None:
        for a in self._call(self.client.get_aliases).aliases:
            if a.alias_name == alias:
                return str(a.collection_name)
        return None

    def close(self) -> None:
        self.client.close()


def _localizations_filter(ids: Sequence[str]) -> models.Filter:
    return models.Filter(must=[models.FieldCondition(key="localization_id", match=models.MatchAny(any=list(ids)))])
