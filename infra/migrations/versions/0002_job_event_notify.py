"""Job events announce themselves: NOTIFY `turnout_job_events` with "<job id>:<kind>" per row.

The API's event streams and `GET /v1/jobs/{id}?waitS=` wake on the notification instead of
polling the table. Every state change writes a `job_events` row in its own transaction, so a
notification is delivered exactly when the change is visible (at commit).

Revision ID: 0002
Revises: 0001
"""

from alembic import op

revision = "0002"
down_revision = "0001"

UPGRADE = [
    """
    CREATE FUNCTION job_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('turnout_job_events', NEW.job_id || ':' || NEW.kind);
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER job_events_notify AFTER INSERT ON job_events
    FOR EACH ROW EXECUTE FUNCTION job_events_notify()
    """,
]

DOWNGRADE = [
    "DROP TRIGGER IF EXISTS job_events_notify ON job_events",
    "DROP FUNCTION IF EXISTS job_events_notify()",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
