"""Leave-one-writer-out runs of the request gate's examples' vote (router/request_examples.py).

Each writer's tuned cases (the team's, r3, r4, r6, r7, r8, r10, r11) are voted on by the other
writers' cases only, and the vote is combined with the rules' own decisions on them (the
deterministic route with the collection's two signals and no vote, as `turnout eval --fallback`
decides). Prints, per combination, the no-tool cases refused and the false refusals, in all and per
writer: the table in docs/router.md ("The examples' vote").

    TURNOUT_DATABASE_URL=<a database with the corpus imported and re-embedded> \
        .venv/bin/python -m bench.request_vote_cv          # ~1 min on 2 cores

The tuned cases are the dev half and the test cases in `router.eval.TUNED_PREFIX`; no held-out case
is read.
"""

from __future__ import annotations

import asyncio
import re
import sys

import numpy as np

from infra.db.pool import create_pool
from infra.settings import Settings
from retrieval.embeddings import EmbedderRegistry, LocalEmbedder
from router.deterministic import decide_fallback
from router.eval import TUNED_PREFIX, EvalCase, load_split
from router.relevance import CollectionRelevance
from router.request_examples import NEIGHBOURS, REFUSE_AT, ROUTE_AT, WEIGHT_POWER
from router.similarity import CollectionSimilarity

_WRITER = re.compile(r"^(r\d+)-")
_MAY_ROUTE = ("off_topic", "small_talk")


def _writer(case_id: str) -> str:
    found = _WRITER.match(case_id)
    return found.group(1) if found else "team"


def _votes(vectors: np.ndarray, not_request: np.ndarray, writers: np.ndarray, k: int, power: int) -> np.ndarray:
    """Each case's no-request share among its k nearest cases by other writers."""
    share = np.zeros(len(vectors))
    for writer in sorted(set(writers)):
        own, others = writers == writer, writers != writer
        similarity = vectors[own] @ vectors[others].T
        nearest = np.argsort(-similarity, axis=1)[:, :k]
        weights = np.maximum(np.take_along_axis(similarity, nearest, 1), 0) ** power
        share[own] = (weights * not_request[others][nearest]).sum(1) / weights.sum(1)
    return share


def _line(label: str, refused: np.ndarray, not_request: np.ndarray, writers: np.ndarray) -> str:
    cells = []
    for writer in sorted(set(writers)):
        mine = writers == writer
        cells.append(f"{writer} {int((refused & not_request & mine).sum())}/{int((not_request & mine).sum())}"
                     f",{int((refused & ~not_request & mine).sum())}")
    return (f"{label:54s} refused {int((refused & not_request).sum())}/{int(not_request.sum())}"
            f"  false {int((refused & ~not_request).sum())}/{int((~not_request).sum())}  | " + "  ".join(cells))


async def _rules(cases: list[EvalCase], settings: Settings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per case: refused by the rules and signals, and refused as `off_topic`/`small_talk`, or by structure."""
    pool = await create_pool(settings.database_url, min_size=1, max_size=2)
    relevance = CollectionRelevance(pool, CollectionSimilarity(pool, EmbedderRegistry(settings)))  # no vote
    refused, softly, structural = [], [], []
    try:
        for case in cases:
            decision = await decide_fallback(settings, case.request(), relevance=relevance)
            kind = decision.gate.refused if decision.gate is not None else None
            refused.append(decision.tool is None)
            softly.append(kind in _MAY_ROUTE)
            structural.append(kind in ("write", "injection"))
    finally:
        await pool.close()
    return np.array(refused), np.array(softly), np.array(structural)


def main() -> int:
    settings = Settings()
    if not settings.database_url:
        print("set TURNOUT_DATABASE_URL to a database with the corpus imported and re-embedded", file=sys.stderr)
        return 2
    cases = [*load_split("dev"), *(c for c in load_split("test") if c.id.startswith(TUNED_PREFIX))]
    rules, softly, structural = asyncio.run(_rules(cases, settings))
    vectors = LocalEmbedder().embed_sync([c.question for c in cases])
    writers = np.array([_writer(c.id) for c in cases])
    not_request = np.array([c.expected_tool is None for c in cases])
    print(_line("rules and the two signals alone", rules, not_request, writers))
    for k in (NEIGHBOURS, 15):
        share = _votes(vectors, not_request, writers, k, WEIGHT_POWER)
        for refuse_at in (0.6, REFUSE_AT):
            for route_at in (0.15, ROUTE_AT, 0.3):
                added = rules | (share >= refuse_at)
                print(_line(f"k={k} refuse>={refuse_at} route<={route_at}", added & ~(rules & softly & (share <= route_at)),
                            not_request, writers))
                print(_line(f"k={k} refuse>={refuse_at} route<={route_at} (writes too)",
                            added & ~(rules & (softly | structural) & (share <= route_at)), not_request, writers))
        print(_line(f"k={k} the vote alone, refuse>=0.6", share >= 0.6, not_request, writers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
