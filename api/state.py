"""Process-wide resources the API opens at start-up and closes at shutdown."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg
import redis.asyncio as aioredis

from infra.db.job_listener import JobEventListener
from infra.db.key_cache import ApiKeyCache
from infra.settings import Settings
from workers.dispatch import Producer


@dataclass
class AppState:
    settings: Settings
    pool: asyncpg.Pool
    redis: aioredis.Redis
    job_events: JobEventListener
    api_keys: ApiKeyCache
    producer: Producer  # sends the job and webhook messages
