"""The routing-decision cache: the same normalized question on the same day reuses the
model's decision (tool + arguments) without an LLM call.

Only decisions the LLM made are cached (a fallback decision must not outlive an outage).
The cached decision is validated again and executed normally, so a hit costs no LLM call
but never skips the gateway. The day is part of the key because relative dates ("last
month") resolve differently tomorrow.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from typing import Any

import redis.asyncio as aioredis

from infra.redis import key
from infra.settings import Settings

TTL_S = 26 * 3600  # a day plus slack for time zones; the date in the key does the real expiry
_SPACE = re.compile(r"\s+")
_EDGE_PUNCTUATION = " \t\n.!?¿¡…,;:\"'«»“”„"


def normalize_question(question: str) -> str:
    """Case, width, spacing and trailing punctuation do not make a different question."""
    text = unicodedata.normalize("NFKC", question).casefold()
    return _SPACE.sub(" ", text).strip(_EDGE_PUNCTUATION)


@dataclass(frozen=True)
class CachedDecision:
    tool: str | None  # None: the model decided no tool applies (a refusal)
    arguments: dict[str, Any]
    reason: str | None = None


class DecisionCache:
    def __init__(self, redis: aioredis.Redis, settings: Settings) -> None:
        self.redis = redis
        self.settings = settings

    def key_for(self, question: str, today: date) -> str:
        digest = hashlib.sha256(normalize_question(question).encode()).hexdigest()
        return key(self.settings, "route-decision", today.isoformat(), digest)

    async def get(self, question: str, today: date) -> CachedDecision | None:
        raw = await self.redis.get(self.key_for(question, today))
        if raw is None:
            return None
        data = json.loads(raw)
        return CachedDecision(tool=data.get("tool"), arguments=data.get("arguments") or {}, reason=data.get("reason"))

    async def put(self, question: str, today: date, decision: CachedDecision) -> None:
        payload = json.dumps({"tool": decision.tool, "arguments": decision.arguments, "reason": decision.reason})
        await self.redis.set(self.key_for(question, today), payload, ex=TTL_S)
