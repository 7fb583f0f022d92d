"""`GET /v1/conversations/{id}`: a conversation's chain of jobs (issue 28)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from pydantic import Field

from api.deps import CurrentKey, Pool, Redis, SettingsDep
from api.errors import ApiError
from api.schemas import error_responses
from api.visibility import visible_job
from infra.db import conversations as conversations_db
from infra.job_document import JobDocument
from infra.results import WireModel

router = APIRouter(prefix="/v1/conversations", tags=["conversations"])

ConversationId = Annotated[
    str, Path(min_length=1, max_length=64, description="A job's `conversationId` (the first job's id)")
]


class ConversationDocument(WireModel):
    """A conversation: its first question and every follow-up, oldest first."""

    id: str
    jobs: list[JobDocument] = Field(description="The chain: each job's previousJobId is the one before it")


@router.get("/{conversation_id}", response_model=ConversationDocument, summary="Get a conversation",
            responses=error_responses(401, 404, 422))
async def get_conversation(
    conversation_id: ConversationId, key: CurrentKey, pool: Pool, redis: Redis, settings: SettingsDep
) -> ConversationDocument:
    """Every job of the conversation, as `GET /v1/jobs/{id}` shows it. Another key's conversation is a 404."""
    async with pool.acquire() as conn:
        chain = await conversations_db.conversation_jobs(conn, conversation_id, api_key_id=key.id)
    if not chain:
        raise ApiError(404, "not_found", f"no conversation {conversation_id} for this key")
    documents = [
        JobDocument.from_row(await visible_job(pool, redis, settings, job), base_url=settings.public_base_url)
        for job in chain
    ]
    return ConversationDocument(id=conversation_id, jobs=documents)
