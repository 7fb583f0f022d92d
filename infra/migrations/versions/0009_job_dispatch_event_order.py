"""A queued job's dispatch time, and a job's event ids in commit order.

`jobs.dispatched_at`: when the job's `run_job` message was (last) due on the router queue: its
creation, a re-send by the sweeper, or the end of a retry's pause. A job still queued two sweep
intervals after it lost its message (the broker dropped it, a failure before the claim) and the
sweeper sends it again (`infra/db/job_sweeps.py` `sweep_undispatched`), instead of waiting out its lease.

`job_events` ids per job in the order the rows commit: an event's id is taken after a per-job
transaction-scoped advisory lock, held until the writer commits, so two writers of one job (the
router's journal and the RAG worker's `answer_delta` rows) cannot commit out of id order. A
client resuming with `Last-Event-ID` (every id above it) therefore never skips a row that
committed after a higher one. The ids still come from the one sequence.

Revision ID: 0009
Revises: 0008
"""

from alembic import op

revision = "0009"
down_revision = "0008"

UPGRADE = [
    "ALTER TABLE jobs ADD COLUMN dispatched_at timestamptz DEFAULT now()",
    "CREATE INDEX jobs_queued_dispatch ON jobs (dispatched_at) WHERE status = 'queued'",
    # The id is taken in the trigger, after the lock, not by the column default before it.
    "ALTER TABLE job_events ALTER COLUMN id DROP DEFAULT",
    """
    CREATE FUNCTION job_events_in_commit_order() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended('job_events:' || NEW.job_id, 0));
        NEW.id := nextval('job_events_id_seq');
        RETURN NEW;
    END
    $$
    """,
    """
    CREATE TRIGGER job_events_in_commit_order BEFORE INSERT ON job_events
    FOR EACH ROW EXECUTE FUNCTION job_events_in_commit_order()
    """,
]

DOWNGRADE = [
    "DROP TRIGGER IF EXISTS job_events_in_commit_order ON job_events",
    "DROP FUNCTION IF EXISTS job_events_in_commit_order()",
    "ALTER TABLE job_events ALTER COLUMN id SET DEFAULT nextval('job_events_id_seq')",
    "DROP INDEX IF EXISTS jobs_queued_dispatch",
    "ALTER TABLE jobs DROP COLUMN IF EXISTS dispatched_at",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
