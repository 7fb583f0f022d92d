"""The one transient-error policy for calls to the outside (LLM and embeddings endpoints, the
Qdrant server, webhook targets): which HTTP statuses may succeed on a second try, and the
server's `Retry-After` hint."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

# Besides every 5xx: timeout, too early, too many requests. Any other 4xx is the request's fault.
RETRYABLE_STATUS = frozenset({408, 425, 429})


def retryable_status(code: int) -> bool:
    return code >= 500 or code in RETRYABLE_STATUS


def parse_retry_after(value: str | None) -> float | None:
    """A `Retry-After` header's seconds: delta-seconds or an HTTP date; garbage is no hint."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None
