"""Cancelling a running job (issue 27).

`jobs.cancel_requested_at`: when a client asked to cancel the job while it was running. The job
row is the request: its runner sees it at its next safe point (infra/db/jobs.py, workers/cancel.py)
and ends the job `cancelled`; a RAG answer stops streaming at its next chunk (the delta insert is
conditional on it, infra/db/job_events.py).

Revision ID: 0012
Revises: 0009
"""

from alembic import op

revision = "0012"
down_revision = "0011"

UPGRADE = [
    "ALTER TABLE jobs ADD COLUMN cancel_requested_at timestamptz",
]

DOWNGRADE = [
    "ALTER TABLE jobs DROP COLUMN IF EXISTS cancel_requested_at",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
