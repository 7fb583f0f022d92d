"""The one way to reach an OpenAI-compatible endpoint: the `openai` client + a tenacity policy.

Retries only what can succeed on a second try (429, 5xx, timeouts, connection errors), with
jittered exponential back-off that honours `Retry-After`; never a 400-class error. The
client's own retries are off so the policy here is the only one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

import openai
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, stop_before_delay
from tenacity.stop import stop_base
from tenacity.wait import wait_base, wait_random_exponential

from infra.counters import LLM_CALLS, LLM_RETRIES, bump
from infra.settings import Settings
from infra.transient import parse_retry_after, retryable_status

T = TypeVar("T")


def create_llm_client(settings: Settings, *, timeout_s: float | None = None) -> openai.AsyncOpenAI:
    if not settings.llm_base_url:
        raise RuntimeError("no LLM configured (TURNOUT_LLM_BASE_URL); callers must use the degraded path")
    return openai.AsyncOpenAI(
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key.get_secret_value(),
        timeout=timeout_s or settings.limits.llm_call_timeout_s,
        max_retries=0,
    )


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, openai.APITimeoutError | openai.APIConnectionError | openai.RateLimitError):
        return True
    if isinstance(exc, openai.APIStatusError):
        return retryable_status(exc.status_code)
    return False


def call_outcome(exc: BaseException | None) -> str:
    """One attempt's outcome for the metrics: ok | 429 | 5xx | timeout | unreachable | rejected."""
    if exc is None:
        return "ok"
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "unreachable"
    if isinstance(exc, openai.RateLimitError) or getattr(exc, "status_code", None) == 429:
        return "429"
    if isinstance(exc, openai.APIStatusError) and (exc.status_code >= 500 or exc.status_code == 408):
        return "5xx"
    return "rejected"


async def counted_call(kind: str, call: Awaitable[T]) -> T:
    """Await one HTTP attempt and count its outcome (`kind`: route | answer)."""
    try:
        result = await call
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        bump(LLM_CALLS, kind=kind, outcome=call_outcome(exc))
        raise
    bump(LLM_CALLS, kind=kind, outcome="ok")
    return result


def retry_after_s(exc: BaseException | None) -> float | None:
    """The server's `Retry-After` (seconds form), if it sent one."""
    if isinstance(exc, openai.APIStatusError):
        return parse_retry_after(exc.response.headers.get("retry-after"))
    return None


class wait_retry_after_or_jitter(wait_base):  # tenacity's naming style
    def __init__(self, multiplier: float = 0.5, max_s: float = 20.0) -> None:
        self.jitter = wait_random_exponential(multiplier=multiplier, max=max_s)
        self.max_s = max_s

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        hinted = retry_after_s(outcome.exception() if outcome is not None else None)
        if hinted is not None:
            return min(hinted, self.max_s)
        return float(self.jitter(retry_state))


def llm_retrying(
    settings: Settings, *, deadline: float | None = None, counted_as: str | None = None, **kwargs: Any
) -> AsyncRetrying:
    """`async for attempt in llm_retrying(s, deadline=t): with attempt: ...`

    ``deadline`` is a ``time.monotonic()`` instant no retry may start after. ``counted_as``
    (route | answer): every retry is counted for the metrics under that kind.
    """
    if counted_as is not None:
        kind = counted_as
        kwargs.setdefault("before_sleep", lambda state: bump(LLM_RETRIES, kind=kind))
    stop: stop_base = stop_after_attempt(settings.llm_max_retries + 1)
    if deadline is not None:
        stop = stop | stop_before_delay(max(0.0, deadline - time.monotonic()))
    return AsyncRetrying(
        retry=retry_if_exception(is_retryable),
        wait=wait_retry_after_or_jitter(),
        stop=stop,
        reraise=True,
        **kwargs,
    )
