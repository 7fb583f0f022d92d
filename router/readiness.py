"""Is the LLM serving yet? A cached probe of a readiness URL (llama-server's /health).

Only the local profile sets one: while the server is built or loads its weights the stack runs
in degraded mode, and the router must not spend a job's retries finding that out. The answer
is cached briefly so a burst of questions costs one probe.
"""

from __future__ import annotations

import asyncio
import time

import httpx

_TTL_S = 2.0
_TIMEOUT_S = 1.0


class ReadinessProbe:
    def __init__(self, url: str, *, ttl_s: float = _TTL_S) -> None:
        self.url = url
        self.ttl_s = ttl_s
        self._checked_at = float("-inf")
        self._ready = False
        self.last_failure = ""  # why the last probe said "not ready" (for the fallback's reason)
        self._lock = asyncio.Lock()

    async def __call__(self) -> bool:
        async with self._lock:
            if time.monotonic() - self._checked_at >= self.ttl_s:
                self._ready = await self._probe()
                self._checked_at = time.monotonic()
            return self._ready

    async def _probe(self) -> bool:
        try:
            async with httpx.AsyncClient(timeout=_TIMEOUT_S) as client:
                status = (await client.get(self.url)).status_code
        except httpx.HTTPError as exc:
            self.last_failure = f"{self.url}: {type(exc).__name__}"
            return False
        self.last_failure = f"{self.url} answered HTTP {status}"
        return status == 200
