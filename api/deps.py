"""FastAPI dependencies, as `Annotated` aliases: `def route(pool: Pool, key: CurrentKey)`.

All `async def`, even those that do not await: FastAPI runs a plain `def` dependency in its
thread pool, a thread hop per dependency per request."""

from __future__ import annotations

from typing import Annotated

import asyncpg
import redis.asyncio as aioredis
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.errors import ApiError
from api.state import AppState
from infra.db import jobs as jobs_db
from infra.db.api_keys import ApiKey
from infra.db.job_listener import JobEventListener
from infra.settings import Settings
from workers.dispatch import Producer


async def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.turnout
    return state


async def get_settings_dep(state: Annotated[AppState, Depends(get_state)]) -> Settings:
    return state.settings


async def get_pool(state: Annotated[AppState, Depends(get_state)]) -> asyncpg.Pool:
    return state.pool


async def get_redis(state: Annotated[AppState, Depends(get_state)]) -> aioredis.Redis:
    return state.redis


async def get_job_events(state: Annotated[AppState, Depends(get_state)]) -> JobEventListener:
    return state.job_events


_bearer = HTTPBearer(auto_error=False, description="An API key from `turnout keys create`")


async def current_key(
    state: Annotated[AppState, Depends(get_state)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> ApiKey:
    if credentials is None:
        raise ApiError(401, "unauthorized", "missing API key: send 'Authorization: Bearer <key>'",
                       headers={"WWW-Authenticate": "Bearer"})
    key = await state.api_keys.verify(state.pool, credentials.credentials)
    if key is None:
        raise ApiError(401, "unauthorized", "unknown or revoked API key", headers={"WWW-Authenticate": "Bearer"})
    return key


async def admin_key(key: Annotated[ApiKey, Depends(current_key)]) -> ApiKey:
    if not key.is_admin:
        raise ApiError(403, "forbidden", "this route needs an admin key (`turnout keys create --admin`)")
    return key


async def own_job(pool: asyncpg.Pool, key: ApiKey, job_id: str) -> jobs_db.JobRow:
    """The job, if `key` owns it; a 404 otherwise."""
    async with pool.acquire() as conn:
        job = await jobs_db.get_job(conn, job_id, api_key_id=key.id)
    if job is None:  # another key's job is indistinguishable from no job
        raise ApiError(404, "not_found", f"no job {job_id} for this key")
    return job


def get_producer(request: Request) -> Producer:
    """The app's message producer (built in the lifespan, from this API's settings: api/state.py)."""
    producer: Producer = request.app.state.turnout.producer
    return producer


State = Annotated[AppState, Depends(get_state)]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
Pool = Annotated[asyncpg.Pool, Depends(get_pool)]
Redis = Annotated[aioredis.Redis, Depends(get_redis)]
JobEvents = Annotated[JobEventListener, Depends(get_job_events)]
CurrentKey = Annotated[ApiKey, Depends(current_key)]
AdminKey = Annotated[ApiKey, Depends(admin_key)]
