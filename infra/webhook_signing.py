"""Webhook signatures: HMAC-SHA256 over `<timestamp>.<body>` with the API key's webhook secret.

Headers sent with every delivery:
    Turnout-Timestamp: 1735689600            (unix seconds when this attempt was signed)
    Turnout-Signature: v1=<hex hmac-sha256>  (several `v1=` values may appear, comma-separated,
                                              when a secret is being rotated)
A receiver recomputes the HMAC over the raw body bytes, compares in constant time and rejects
timestamps outside its tolerance (replay protection). `verify` is that check, for receivers
written in Python; docs/api.md shows it standalone.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping

TIMESTAMP_HEADER = "Turnout-Timestamp"
SIGNATURE_HEADER = "Turnout-Signature"
SCHEME = "v1"
DEFAULT_TOLERANCE_S = 300


class SignatureError(ValueError):
    """The delivery is not authentic (bad or missing signature, stale timestamp)."""


def signature(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return mac.hexdigest()


def sign_headers(secret: str, body: bytes, *, now: float | None = None) -> dict[str, str]:
    timestamp = int(now if now is not None else time.time())
    return {TIMESTAMP_HEADER: str(timestamp), SIGNATURE_HEADER: f"{SCHEME}={signature(secret, timestamp, body)}"}


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    tolerance_s: int = DEFAULT_TOLERANCE_S,
    now: float | None = None,
) -> int:
    """Check a delivery; returns its timestamp or raises SignatureError. Header names are
    matched case-insensitively."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ts = lowered.get(TIMESTAMP_HEADER.lower())
    raw_sig = lowered.get(SIGNATURE_HEADER.lower())
    if not raw_ts or not raw_sig:
        raise SignatureError(f"missing {TIMESTAMP_HEADER} or {SIGNATURE_HEADER} header")
    try:
        timestamp = int(raw_ts)
    except ValueError as exc:
        raise SignatureError(f"{TIMESTAMP_HEADER} is not an integer") from exc
    current = now if now is not None else time.time()
    if abs(current - timestamp) > tolerance_s:
        raise SignatureError(f"timestamp {timestamp} is outside the {tolerance_s}s tolerance")
    expected = signature(secret, timestamp, body)
    candidates = [part.strip()[len(SCHEME) + 1:] for part in raw_sig.split(",") if part.strip().startswith(f"{SCHEME}=")]
    if not any(hmac.compare_digest(expected, c) for c in candidates):
        raise SignatureError("signature does not match")
    return timestamp
