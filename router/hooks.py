"""What a caller of `route_question` may hook into the routing (the job runner does; tests and
the eval harness mostly do not). The router defines the port; the worker side implements it
(`workers.journal.Journal` is a `Narrator`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from infra.db.audit import AuditEvent

EventSink = Callable[[str, dict[str, Any]], Awaitable[None]]
Gate = Callable[[], Awaitable[None]]


class Narrator(Protocol):
    """Writes a job's audit rows and cache writes in the background, in order; the caller waits
    for them before the job's final state."""

    def audit(self, event: AuditEvent) -> None:
        """Queue an audit row."""

    def alongside(self, work: Awaitable[object], *, label: str) -> None:
        """Run `work` (a cache write) concurrently; awaited with the rows."""

    def hold(self) -> None:
        """Start no more writes: the result is ready, the last rows go with the job's final state."""


@dataclass(frozen=True)
class RunHooks:
    """`on_event`: progress events (kind, JSON-safe data). `narrator`: audit rows and cache writes
    go through it instead of being awaited one by one. `before_tool`: awaited before any tool runs
    (the job runner's claim: it may raise to stop the routing)."""

    on_event: EventSink | None = None
    narrator: Narrator | None = None
    before_tool: Gate | None = None
