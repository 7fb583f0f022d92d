"""Process-wide resources the API opens at start-up and closes at shutdown."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg
import redis.asyncio as aioredis

from infra.settings import Settings


@dataclass
class AppState:
    settings: Settings
    pool: asyncpg.Pool
    redis: aioredis.Redis
