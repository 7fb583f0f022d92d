"""The rate-limit permits of one routing job's LLM calls (`router.ratelimit`): the first call's
permit asked for while the decision cache is read, every later one just before its call, and
what a call did not use of its reservation given back to the shared limit."""

from __future__ import annotations

import asyncio

from infra.counters import RATE_LIMIT, bump
from router.audit import AuditTrail
from router.hooks import EventSink
from router.limits import JobBudget
from router.ratelimit import LLMRateLimiter, RateLimitDeadline


class CallPermits:
    """One job's permits; without a limiter every call goes at once."""

    def __init__(self, limiter: LLMRateLimiter | None, budget: JobBudget, audit: AuditTrail,
                 emit: EventSink) -> None:
        self.limiter = limiter
        self.budget = budget
        self.audit = audit
        self.emit = emit
        self._first: asyncio.Task[None] | None = None

    def ask_ahead(self, tokens: int) -> None:
        """Ask for the first call's permit in the background. Most questions miss the decision
        cache; on a hit the permit stays spent, which errs on the safe side (fewer calls than the
        limit, never more)."""
        if self.limiter is not None:
            self._first = asyncio.ensure_future(self.wait(tokens))

    async def before_call(self, tokens: int) -> None:
        """`EngineRequest.before_attempt`: the permit asked for ahead, else one for `tokens` now."""
        permit, self._first = self._first, None
        if permit is not None:
            await permit  # asked for the same tokens while the cache was read
        else:
            await self.wait(tokens)

    async def wait(self, tokens: int) -> None:
        """Wait for room for `tokens` within the job's deadline; a wait is announced and audited."""
        if self.limiter is None:
            return
        announced = False

        async def announce(wait_s: float) -> None:
            nonlocal announced
            announced = True
            await self.emit("rate_limited", {"waitS": round(wait_s, 3)})

        try:
            waited = await self.limiter.acquire(tokens, deadline=self.budget.deadline, on_wait=announce)
        except RateLimitDeadline:
            bump(RATE_LIMIT, outcome="gave_up")
            raise
        if announced:
            bump(RATE_LIMIT, outcome="waited")
            await self.audit.record("rate_limit_wait", round=self.budget.rounds, latency_ms=waited * 1000)

    async def refund(self, reserved: int, used: int) -> None:
        """The reservation was an upper bound; what the call did not use goes back to the shared limit."""
        if self.limiter is not None and used > 0:
            await self.limiter.refund(reserved, used)

    def release(self) -> None:
        """At the run's end: a permit asked for ahead and never used (a cache hit, a failure) is
        dropped; if it was already taken it stays spent."""
        permit, self._first = self._first, None
        if permit is not None:
            permit.cancel()
            permit.add_done_callback(_ignore_outcome)


def _ignore_outcome(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: a refusal for a call that was never made is no error
