"""The request gate's third signal: what kind of message this is, judged by the labelled messages
nearest to it in meaning (k nearest neighbours over USE multilingual embeddings).

The gate's rules read a message's structure (a write verb and a collection object, a call of an
unknown identifier, a task word) and its two measured signals read the collection (its words, its
passages). All three were written or set on the phrasings the team saw, and on phrasings written
outside the project they erred both ways: real questions dressed as tasks or small talk were
refused, off-topic tasks the word lists did not know were routed. Labelled messages carry what
the rules could not list: a new off-topic task lies near other off-topic tasks in meaning, in any of
the three languages, and a real question in a chatty frame near other real questions.

So the gate asks the ``NEIGHBOURS`` nearest labelled messages (weighted by cosine to the
``WEIGHT_POWER``, so a close neighbour outweighs a far one) and acts only on a clear vote: a
message the rules route is refused when the no-tool share is at least ``REFUSE_AT``; a message
the rules refuse only for its topic or as small talk is routed when that share is at most
``ROUTE_AT``. Writes, unknown tools and injections stay the rules' (those rules are exact; a
rescue there refused fewer of them on every held-out writer). The numbers were chosen by
leave-one-writer-out runs over the tuned cases (each writer's cases voted on by the others'
only), where they lie on a plateau (docs/router.md, "Round 10").

The bank (``data/request_examples.jsonl``) is the eval set's tuned cases: the dev half and the test
cases earlier rounds moved to tuning; never a held-out case (a test checks). Its vectors ship
beside it (``data/request_examples.npy``, float16) so no process embeds a thousand messages at
start-up; ``python -m router.request_examples`` rebuilds both. A message identical to a bank entry
does not vote for itself, so the dev half measures the signal as a new message would meet it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np

from retrieval.embeddings import LocalEmbedder, normalize_rows

log = logging.getLogger("turnout.router")

BANK_FILE = Path(__file__).parent / "data" / "request_examples.jsonl"
VECTORS_FILE = Path(__file__).parent / "data" / "request_examples.npy"

NEIGHBOURS = 10
WEIGHT_POWER = 4
REFUSE_AT = 0.7
ROUTE_AT = 0.2
# A message's embedding must not hold up routing: past this the gate decides without the vote.
EMBED_TIMEOUT_S = 5.0

ExampleKind = Literal["request", "write", "unknown_tool", "injection", "off_topic", "small_talk"]
# The eval tags that name a no-tool class, in the order that decides a case carrying several.
_KIND_BY_TAG: tuple[tuple[str, ExampleKind], ...] = (
    ("gate-write", "write"), ("gate-unknown-tool", "unknown_tool"), ("injection", "injection"),
    ("meta", "small_talk"), ("off-topic", "off_topic"),
)


@dataclass(frozen=True)
class RequestVote:
    """The nearest labelled messages' vote: the weighted share that were no request, and the
    heaviest no-request kind among them (what a refusal on this vote is called)."""

    not_a_request: float
    kind: ExampleKind
    nearest: float  # the closest example's cosine (how near the bank came at all)


def _normalized(text: str) -> str:
    return " ".join(text.casefold().split())


class RequestExamples:
    """The labelled bank and its vectors, loaded once; ``vote(message)`` embeds the message."""

    def __init__(self, texts: list[str], kinds: list[ExampleKind], vectors: np.ndarray,
                 embedder: LocalEmbedder | None = None) -> None:
        if len(texts) != len(kinds) or vectors.shape[0] != len(texts):
            raise ValueError(f"the request bank has {len(texts)} texts, {len(kinds)} kinds and {vectors.shape[0]} "
                             "vectors; rebuild it with `python -m router.request_examples`")
        self.texts = texts
        self.kinds = kinds
        self._index = {_normalized(t): i for i, t in enumerate(texts)}
        self._vectors = normalize_rows(vectors)  # shipped as float16
        self._not_request = np.array([k != "request" for k in kinds])
        self.embedder = embedder or LocalEmbedder()

    @classmethod
    def shipped(cls) -> RequestExamples:
        """The shipped bank, read once per process (it never changes while the process runs)."""
        return _shipped()

    def warm_up(self) -> None:
        """Load the embedding model now (~3 s), not inside a router worker's first question."""
        self.vote_for("", self.embedder.embed_sync(["warm-up"])[0])

    def vote_for(self, message: str, vector: np.ndarray) -> RequestVote:
        """The vote of the bank's nearest entries for an embedded message (L2-normalized)."""
        similarity = self._vectors @ np.asarray(vector, dtype=np.float32)
        own = self._index.get(_normalized(message))
        if own is not None:
            similarity[own] = -1.0  # a bank entry does not vote for itself
        nearest = np.argsort(-similarity)[:NEIGHBOURS]
        weights = np.maximum(similarity[nearest], 0.0) ** WEIGHT_POWER
        total = float(weights.sum()) or 1.0
        by_kind: dict[ExampleKind, float] = defaultdict(float)
        for i, w in zip(nearest, weights, strict=True):
            if self._not_request[i]:
                by_kind[self.kinds[i]] += float(w)
        kind: ExampleKind = max(by_kind, key=lambda k: by_kind[k]) if by_kind else "request"
        return RequestVote(round(sum(by_kind.values()) / total, 4), kind, round(float(similarity[nearest[0]]), 4))

    async def vote(self, message: str) -> RequestVote | None:
        """None when the message could not be embedded in time (the gate then decides without it)."""
        try:
            embedded = await asyncio.wait_for(self.embedder.embed([message]), EMBED_TIMEOUT_S)
        except (TimeoutError, RuntimeError, OSError) as exc:
            log.warning("the request gate could not embed a message for its examples' vote (%s)", exc)
            return None
        return self.vote_for(message, embedded[0])


@lru_cache(maxsize=1)
def _shipped() -> RequestExamples:
    texts, kinds = read_bank(BANK_FILE)
    return RequestExamples(texts, kinds, np.load(VECTORS_FILE))


def read_bank(path: Path) -> tuple[list[str], list[ExampleKind]]:
    texts: list[str] = []
    kinds: list[ExampleKind] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            texts.append(row["text"])
            kinds.append(row["kind"])
    return texts, kinds


def kind_of(tool: str | None, tags: tuple[str, ...], question: str) -> ExampleKind:
    """A labelled case's kind: a request when it expects a tool, else its no-tool class by tag (a
    case tagged with none: a greeting or thanks when it is three words or fewer, else off-topic)."""
    if tool is not None:
        return "request"
    for tag, kind in _KIND_BY_TAG:
        if tag in tags:
            return kind
    return "small_talk" if len(question.split()) <= 3 else "off_topic"


def build() -> int:
    """Write the bank from the eval set's tuned cases and embed it (a minute on two cores)."""
    from router.eval import TUNED_PREFIX, load_split  # the eval harness is only needed here

    cases = [*load_split("dev"), *(c for c in load_split("test") if c.id.startswith(TUNED_PREFIX))]
    seen: set[str] = set()
    rows = []
    for case in cases:
        key = _normalized(case.question)
        if key not in seen:
            seen.add(key)
            rows.append({"text": case.question, "kind": kind_of(case.expected_tool, case.tags, case.question),
                         "case": case.id})
    BANK_FILE.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    vectors = LocalEmbedder().embed_sync([r["text"] for r in rows])
    np.save(VECTORS_FILE, vectors.astype(np.float16))
    print(f"{len(rows)} examples -> {BANK_FILE.name}, {VECTORS_FILE.name}")
    return 0


if __name__ == "__main__":
    sys.exit(build())
