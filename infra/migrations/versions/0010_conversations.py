"""Conversations and feedback (issue 28).

`jobs.previous_job_id`: the job a follow-up continues (same key; NULL for a first question);
`jobs.conversation_id`: the first job's id, shared by every job of the chain (NULL: a job asked
alone, which is the first of its own conversation when followed up).
`jobs.feedback_rating` / `feedback_comment` / `feedback_at`: the owner's rating of the job (up or
down), replaceable. A job is visible to its key only, so one rating per key and job is one per job.

Revision ID: 0010
Revises: 0009
"""

from alembic import op

revision = "0010"
down_revision = "0009"

UPGRADE = [
    "ALTER TABLE jobs ADD COLUMN previous_job_id text REFERENCES jobs(id) ON DELETE SET NULL",
    "ALTER TABLE jobs ADD COLUMN conversation_id text",
    "CREATE INDEX jobs_conversation ON jobs (conversation_id, created_at) WHERE conversation_id IS NOT NULL",
    "ALTER TABLE jobs ADD COLUMN feedback_rating text CHECK (feedback_rating IN ('up', 'down'))",
    "ALTER TABLE jobs ADD COLUMN feedback_comment text",
    "ALTER TABLE jobs ADD COLUMN feedback_at timestamptz",
    "CREATE INDEX jobs_rated ON jobs (feedback_at) WHERE feedback_rating IS NOT NULL",
]

DOWNGRADE = [
    "DROP INDEX IF EXISTS jobs_rated",
    "DROP INDEX IF EXISTS jobs_conversation",
    *(f"ALTER TABLE jobs DROP COLUMN IF EXISTS {c}" for c in (
        "feedback_at", "feedback_comment", "feedback_rating", "conversation_id", "previous_job_id")),
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
