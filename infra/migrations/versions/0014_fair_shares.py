"""Fair shares per key and priorities (issue 27).

- `jobs.priority`: `interactive` (the default) or `batch`; batch work yields to interactive work,
  on the broker (a lower Redis priority step) and among a key's parked jobs.
- A *parked* job: queued, `dispatched_at IS NULL` (no `run_job` message sent yet, no lease). A job
  is parked at submission when its key already has TURNOUT_JOBS_PER_KEY_IN_FLIGHT jobs in flight
  (queued with a message, or running); the end of one of them dispatches the key's next one
  (infra/db/fair_shares.py).
- `jobs_in_flight(key)`: a key's jobs in flight, counted under the key's transaction-scoped
  advisory lock. VOLATILE, so its count takes a fresh snapshot after the lock is granted (READ
  COMMITTED): two submissions or promotions of one key, each one statement, are serialized and the
  second sees the first's row; the cap holds without a transaction of several round trips.

Revision ID: 0014
Revises: 0013
"""

from alembic import op

revision = "0014"
down_revision = "0013"

UPGRADE = [
    "ALTER TABLE jobs ADD COLUMN priority text NOT NULL DEFAULT 'interactive' "
    "CONSTRAINT jobs_priority_known CHECK (priority IN ('interactive', 'batch'))",
    "CREATE INDEX jobs_key_in_flight ON jobs (api_key_id) "
    "WHERE status IN ('queued', 'running') AND dispatched_at IS NOT NULL",
    # A key's next parked job: interactive before batch, then oldest first.
    "CREATE INDEX jobs_key_parked ON jobs (api_key_id, (priority = 'batch'), created_at, id) "
    "WHERE status = 'queued' AND dispatched_at IS NULL",
    """
    CREATE FUNCTION jobs_in_flight(key_id text) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended('turnout.jobs_in_flight:' || key_id, 0));
        RETURN (SELECT count(*) FROM jobs WHERE api_key_id = key_id AND status IN ('queued', 'running')
                                              AND dispatched_at IS NOT NULL);
    END
    $$
    """,
]

DOWNGRADE = [
    "DROP FUNCTION IF EXISTS jobs_in_flight(text)",
    "DROP INDEX IF EXISTS jobs_key_parked",
    "DROP INDEX IF EXISTS jobs_key_in_flight",
    "ALTER TABLE jobs DROP COLUMN IF EXISTS priority",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
