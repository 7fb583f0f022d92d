"""`turnout eval-rag`: how well does RAG retrieval find the articles that answer a question?

The labelled sets (retrieval/data/rag_eval_{dev,test}.jsonl) were written for this project over
the shared ru/en/de corpus: a case is a question, optional language filter and scope
(localization ids, as SearchAndAskArticles passes them), and the localization ids that answer
it. Tune on ``dev`` only; ``test`` is for the reported numbers.

Every case runs in every mode (vector, lexical, hybrid, and hybrid+rerank when a reranker is
configured) through the same ``retrieve`` answering uses, modes interleaved per case so a load
spike on a shared machine hits all modes alike. Per mode: hit@1, hit@5, MRR (over the top 10),
and retrieval latency p50/p95 (embedding the question + both queries + fusion), overall, per
question language and per tag.
"""

from __future__ import annotations

import json
import math
import platform
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import asyncpg

from infra.db import rag_chunks as chunks_db
from infra.db.collections import CollectionVersion
from infra.results import LANGUAGES
from infra.settings import RetrievalMode, Settings
from infra.vectors import VectorStore
from retrieval.embeddings import EmbedderRegistry
from retrieval.hybrid import PeriodOf, RetrievalConfig, RetrievalText, retrieve_preferring_period
from retrieval.rerank import Reranker

DATA = Path(__file__).parent / "data"
# users: 90 questions phrased as users type them (descriptive, not the articles' words), tuned on with
# dev (docs/rag.md, round 13); the held-out test half is not.
SETS = {name: DATA / f"rag_eval_{name}.jsonl" for name in ("dev", "test", "users")}
RANK_DEPTH = 10  # MRR counts a hit up to this rank


class RagEvalFileError(ValueError):
    """A labelled set that cannot be used, naming the line at fault."""


@dataclass(frozen=True)
class RagEvalCase:
    id: str
    question: str
    question_language: str
    language: str | None
    scope: tuple[str, ...] | None
    expected: frozenset[str]
    tags: tuple[str, ...]


def load_rag_cases(path: Path) -> list[RagEvalCase]:
    cases: list[RagEvalCase] = []
    seen: set[str] = set()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RagEvalFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            case = RagEvalCase(
                id=str(raw["id"]), question=str(raw["question"]), question_language=str(raw["questionLanguage"]),
                language=raw.get("language"),
                scope=tuple(raw["scope"]) if raw.get("scope") is not None else None,
                expected=frozenset(raw["expected"]), tags=tuple(raw.get("tags", ())),
            )
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise RagEvalFileError(f"{path}:{no}: not a case ({type(exc).__name__}: {exc})") from exc
        if not case.question.strip() or not case.expected:
            raise RagEvalFileError(f"{path}:{no}: a case needs a question and at least one expected id")
        if case.question_language not in LANGUAGES or (case.language is not None and case.language not in LANGUAGES):
            raise RagEvalFileError(f"{path}:{no}: languages are ru, en or de")
        if case.scope is not None and not case.expected <= set(case.scope):
            raise RagEvalFileError(f"{path}:{no}: an expected id is outside the case's scope")
        if case.id in seen:
            raise RagEvalFileError(f"{path}:{no}: duplicate id {case.id}")
        seen.add(case.id)
        cases.append(case)
    if not cases:
        raise RagEvalFileError(f"{path}: no cases")
    return cases


@dataclass
class Score:
    n: int = 0
    hit1: float = 0.0
    hit5: float = 0.0
    mrr: float = 0.0

    def add(self, rank: int | None) -> None:
        self.n += 1
        if rank is not None:
            self.hit1 += rank == 1
            self.hit5 += rank <= 5
            self.mrr += 1.0 / rank

    def rounded(self) -> dict[str, float | int]:
        n = max(self.n, 1)
        return {"n": self.n, "hit1": round(self.hit1 / n, 3), "hit5": round(self.hit5 / n, 3),
                "mrr": round(self.mrr / n, 3)}


@dataclass
class ModeResult:
    mode: str
    overall: Score = field(default_factory=Score)
    by_language: dict[str, Score] = field(default_factory=dict)
    by_tag: dict[str, Score] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    ranks: dict[str, int | None] = field(default_factory=dict)

    def record(self, case: RagEvalCase, rank: int | None, latency_ms: float) -> None:
        self.overall.add(rank)
        self.by_language.setdefault(case.question_language, Score()).add(rank)
        for tag in case.tags:
            self.by_tag.setdefault(tag, Score()).add(rank)
        self.latencies_ms.append(latency_ms)
        self.ranks[case.id] = rank

    def document(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            **self.overall.rounded(),
            "p50Ms": round(percentile(self.latencies_ms, 50), 1),
            "p95Ms": round(percentile(self.latencies_ms, 95), 1),
            "byLanguage": {k: v.rounded() for k, v in sorted(self.by_language.items())},
            "byTag": {k: v.rounded() for k, v in sorted(self.by_tag.items())},
            "ranks": self.ranks,
        }


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (no interpolation: the p95 of 72 latencies is one of them)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def first_rank(hit_ids: Sequence[str], expected: frozenset[str]) -> int | None:
    for rank, localization_id in enumerate(hit_ids[:RANK_DEPTH], start=1):
        if localization_id in expected:
            return rank
    return None


@dataclass(frozen=True)
class EvalMode:
    label: str
    config: RetrievalConfig
    reranker: Reranker | None = None


def default_modes(settings: Settings, reranker: Reranker | None = None) -> list[EvalMode]:
    """vector, lexical, hybrid; and hybrid+rerank when a reranker is configured."""
    modes = [
        EvalMode(mode.value, _deep(RetrievalConfig.from_settings(settings, mode=mode, rerank=False)))
        for mode in (RetrievalMode.VECTOR, RetrievalMode.LEXICAL, RetrievalMode.HYBRID)
    ]
    if reranker is not None:
        config = _deep(RetrievalConfig.from_settings(settings, mode=RetrievalMode.HYBRID, rerank=True))
        modes.append(EvalMode("hybrid+rerank", config, reranker))
    return modes


def _deep(config: RetrievalConfig) -> RetrievalConfig:
    # Rank up to RANK_DEPTH so MRR sees ranks past the answering top-K.
    return RetrievalConfig(**{**asdict(config), "top_k": max(config.top_k, RANK_DEPTH),
                              "candidates": max(config.candidates, RANK_DEPTH)})


async def run_rag_eval(
    pool: asyncpg.Pool,
    store: VectorStore,
    embedders: EmbedderRegistry,
    version: CollectionVersion,
    cases: Sequence[RagEvalCase],
    modes: Sequence[EvalMode],
    retrieval_text: RetrievalText | None = None,
    period_of: PeriodOf | None = None,
    today: date | None = None,
) -> dict[str, Any]:
    """Run every case in every mode; returns the report document (``render_markdown`` prints it). A case
    with no scope prefers the articles of the period its question names (``period_of``, read on
    ``today``, by default the run's day), as the production ask does."""
    indexed = set(await chunks_db.indexed_localizations(
        pool, version.name, sorted({i for c in cases for i in c.expected})
    ))
    unanswerable = [c.id for c in cases if not c.expected & indexed]
    if len(unanswerable) == len(cases):
        raise RagEvalFileError(
            f"none of the expected articles is indexed in {version.name}: load the shared corpus "
            "(`turnout import`) and index it (`turnout reembed`) first"
        )
    await embedders.get(version.model).embed(["warm-up"])  # model load is not a question's latency
    results = {m.label: ModeResult(m.label) for m in modes}
    for case in cases:
        for mode in modes:
            started = time.monotonic()
            query = (retrieval_text(case.question) if retrieval_text else None) or case.question
            retrieved = await retrieve_preferring_period(
                pool, store, embedders, version, query, language=case.language,
                period=period_of(case.question, today or date.today()) if period_of else None,
                scope=list(case.scope) if case.scope is not None else None, config=mode.config,
                reranker=mode.reranker,
            )
            latency = (time.monotonic() - started) * 1000
            ids = list(dict.fromkeys(h.chunk.localization_id for h in retrieved.hits))
            results[mode.label].record(case, first_rank(ids, case.expected), latency)
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "collection": version.name,
        "model": version.model,
        "chunking": version.chunking,
        "cases": len(cases),
        "unindexedCases": unanswerable,  # their answer is not in the index: they count as misses
        "modes": [results[m.label].document() for m in modes],
    }


def machine() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}"


def render_markdown(report: dict[str, Any], *, title: str = "RAG retrieval") -> str:
    modes = report["modes"]
    lines = [
        f"### {title}: {report['cases']} cases, {report['date']}",
        "",
        f"Machine: {report['machine']}. Version `{report['collection']}` ({report['model']}, "
        f"chunking `{report['chunking']}`).",
        "",
        "| mode | hit@1 | hit@5 | MRR | p50 ms | p95 ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for m in modes:
        lines.append(f"| {m['mode']} | {m['hit1']:.3f} | {m['hit5']:.3f} | {m['mrr']:.3f} | "
                     f"{m['p50Ms']:.0f} | {m['p95Ms']:.0f} |")
    for key, name in (("byLanguage", "question language"), ("byTag", "tag")):
        groups = sorted({g for m in modes for g in m[key]})
        lines += ["", f"hit@5 / MRR by {name}:", "",
                  "| " + name + " | n | " + " | ".join(m["mode"] for m in modes) + " |",
                  "| --- | ---: | " + " | ".join("---:" for _ in modes) + " |"]
        for g in groups:
            n = next(m[key][g]["n"] for m in modes if g in m[key])
            cells = [f"{m[key][g]['hit5']:.2f} / {m[key][g]['mrr']:.2f}" if g in m[key] else "–" for m in modes]
            lines.append(f"| {g} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def resolve_set(name_or_path: str) -> Path:
    return SETS.get(name_or_path) or Path(name_or_path)


async def eval_installation(
    settings: Settings, cases: Sequence[RagEvalCase], retrieval_text: RetrievalText | None = None,
    period_of: PeriodOf | None = None,
) -> dict[str, Any]:
    """Evaluate against the configured database and vector store, on the version serving reads.
    Qdrant Edge may be opened by one process only: stop the vector worker first, or use a server."""
    from infra.db.pool import create_pool
    from infra.vectors import open_vector_store
    from retrieval.rag import RagContext, resolve_read_version

    pool = await create_pool(settings.database_url, min_size=1, max_size=4)
    store = open_vector_store(settings)
    reranker = Reranker.from_settings(settings)
    try:
        ctx = RagContext(settings=settings, pool=pool, store=store, embedders=EmbedderRegistry(settings), llm=None,
                         reranker=reranker)
        version = await resolve_read_version(ctx)
        if version is None:
            raise RagEvalFileError("no collection version serves reads: run `turnout reembed` first")
        return await run_rag_eval(pool, store, ctx.embedders, version, cases, default_modes(settings, ctx.reranker),
                                  retrieval_text, period_of)
    finally:
        if reranker is not None:
            await reranker.close()
        store.close()
        await pool.close()
