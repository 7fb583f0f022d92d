"""Webhook signatures: Standard Webhooks v1, signed and verified with the `standardwebhooks` package.

Headers sent with every attempt:
    webhook-id: 17                        (the delivery id: the same on every attempt and redelivery)
    webhook-timestamp: 1735689600         (unix seconds when this attempt was signed)
    webhook-signature: v1,<base64>        (HMAC-SHA256 over `<id>.<timestamp>.<body>`; during a
                                           secret rotation two space-separated `v1,` values)
A secret is `whsec_` + base64 of 32 random bytes; the HMAC key is the decoded bytes, so any
Standard Webhooks verifier (standardwebhooks, svix, ...) accepts a delivery.

Keys issued before Standard Webhooks have a `whsec_…` secret that is not base64: until such a key
rotates its secret, it signs with the secret's bytes as the HMAC key (what it always was); a
receiver verifies with `Webhook(secret.encode())`. A rotation gives a Standard Webhooks secret.
"""

from __future__ import annotations

import base64
import re
import secrets
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
_STANDARD_SECRET = re.compile(rf"{SECRET_PREFIX}[A-Za-z0-9+/]{{43}}=")  # base64 of exactly 32 bytes

__all__ = ["SignatureError", "new_secret", "sign_headers", "verify"]


class SignatureError(ValueError):
    """The delivery is not authentic (bad or missing signature, stale timestamp)."""


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def is_standard(secret: str) -> bool:
    return _STANDARD_SECRET.fullmatch(secret) is not None


def _webhook(secret: str) -> Webhook:
    # A pre-Standard-Webhooks secret is not base64: its bytes are the key (see the module docstring).
    return Webhook(secret if is_standard(secret) else secret.encode())


def sign_headers(
    secrets_: str | Sequence[str], message_id: str, body: bytes, *, now: float | None = None
) -> dict[str, str]:
    """The three headers for one attempt; one signature per secret (the current one first)."""
    keys = [secrets_] if isinstance(secrets_, str) else list(secrets_)
    timestamp = datetime.fromtimestamp(int(now if now is not None else time.time()), UTC)
    text = body.decode()
    signatures = " ".join(_webhook(k).sign(message_id, timestamp, text) for k in keys)
    return {ID_HEADER: message_id, TIMESTAMP_HEADER: str(int(timestamp.timestamp())), SIGNATURE_HEADER: signatures}


def verify(secret: str, headers: Mapping[str, str], body: bytes) -> str:
    """Check a delivery as a receiver would (5-minute tolerance); returns its webhook-id or raises
    SignatureError."""
    try:
        _webhook(secret).verify(body, dict(headers), json_parse=False)
    except (WebhookVerificationError, ValueError) as exc:
        raise SignatureError(str(exc)) from exc
    return {k.lower(): v for k, v in headers.items()}[ID_HEADER]
