"""Which turn a follow-up continues (issue 28): `previousJobId` or `conversationId` on a
question (`POST /v1/questions`, the MCP `AskTurnout` tool), resolved for the asking key."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from api.errors import ApiError
from infra.conversation import PreviousTurn
from infra.db import conversations as conversations_db
from infra.db import jobs as jobs_db


@dataclass(frozen=True)
class Continuation:
    """The job a follow-up continues, its conversation, and its turn for the router."""

    previous_job_id: str
    conversation_id: str
    turn: PreviousTurn


async def continuation(
    pool: asyncpg.Pool, key_id: str, *, previous_job_id: str | None, conversation_id: str | None
) -> Continuation | None:
    """None: a question asked alone. 404 for a job or conversation this key does not have (another
    key's is the same as none); 409 while the previous job is still running."""
    if previous_job_id is None and conversation_id is None:
        return None
    async with pool.acquire() as conn:
        if previous_job_id is not None:
            previous = await jobs_db.get_job(conn, previous_job_id, api_key_id=key_id)
            if previous is None:
                raise ApiError(404, "not_found", f"previousJobId: no job {previous_job_id} for this key",
                               {"field": "previousJobId"})
        else:
            assert conversation_id is not None
            previous = await conversations_db.last_job(conn, conversation_id, api_key_id=key_id)
            if previous is None:
                raise ApiError(404, "not_found", f"conversationId: no conversation {conversation_id} for this key",
                               {"field": "conversationId"})
    chain = previous.conversation_id or previous.id
    if conversation_id is not None and chain != conversation_id:
        raise ApiError(422, "invalid_request",
                       f"previousJobId {previous.id} belongs to conversation {chain}, not {conversation_id}",
                       {"field": "conversationId", "conversationId": chain})
    if not previous.status.is_final:
        raise ApiError(409, "previous_job_running",
                       f"the previous job {previous.id} is still {previous.status.value}; ask the follow-up once it ends",
                       {"jobId": previous.id})
    return Continuation(previous.id, chain, PreviousTurn.from_job(previous))
