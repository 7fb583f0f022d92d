"""Indexes for the operations figures: LLM calls and tokens per kind and minute, webhook
attempts per minute (infra/db/ops.py). Without them each figure scans the whole table.

Revision ID: 0003
Revises: 0002
"""

from alembic import op

revision = "0003"
down_revision = "0002"

UPGRADE = [
    "CREATE INDEX IF NOT EXISTS audit_events_kind_created ON audit_events (kind, created_at)",
    "CREATE INDEX IF NOT EXISTS webhook_attempts_created ON webhook_attempts (created_at)",
]

DOWNGRADE = [
    "DROP INDEX IF EXISTS webhook_attempts_created",
    "DROP INDEX IF EXISTS audit_events_kind_created",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
