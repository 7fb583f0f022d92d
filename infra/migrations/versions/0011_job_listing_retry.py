"""Job listing, retries and bulk retry runs (issue 27 part A).

- Listing (`GET /v1/jobs`, MCP `tasks/list`): keyset pages newest first per key on
  `(api_key_id, created_at DESC, id DESC) INCLUDE (question_search)` (replaces `jobs_key_created`,
  which lacked the id tie-break), the same order over every key for an admin (`jobs_created`), and `question_search`:
  the question's words (`simple` configuration: no stemming, so a word of any language matches as
  written) with its GIN index for `q`.
- Retries: `retry_of` (the original) and `retries` (the original's retry ids, oldest first), both
  written by the statement that creates a retry. `retry_forced` marks a retry made with `force`;
  `jobs_one_retry` allows one unforced retry per original, which makes `POST .../retry` idempotent
  even under concurrent requests.
- `job_retry_runs`: admin bulk retries by list filters, tracked with progress like re-embed runs.
- `jobs_finished_at`: retention (workers/tasks/maintenance.py) finds finished jobs past the cutoff
  in small batches.

Revision ID: 0011
Revises: 0009
"""

from alembic import op

revision = "0011"
down_revision = "0010"

UPGRADE = [
    "ALTER TABLE jobs ADD COLUMN question_search tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, left(question, 100000))) STORED",
    # The words ride along (INCLUDE): a `q` page of one key walks this index in order and matches
    # the words without visiting the table (an index-only scan), which the GIN index cannot do
    # for a word that is neither rare nor common (bench/job_list_bench.py: 1-in-1,000 word at a
    # random depth of 1M jobs: 27 ms p95 through GIN, 18 ms here; one such page: 22 ms → 8 ms).
    "CREATE INDEX IF NOT EXISTS jobs_key_created_id ON jobs (api_key_id, created_at DESC, id DESC) "
    "INCLUDE (question_search)",
    "DROP INDEX IF EXISTS jobs_key_created",
    "CREATE INDEX IF NOT EXISTS jobs_created ON jobs (created_at DESC, id DESC)",
    # The words alone: a (key, words) GIN index (btree_gin) was measured slower, since intersecting
    # reads the whole posting list of a key with 1M jobs (14 ms against 0.4 ms for a rare word).
    "CREATE INDEX IF NOT EXISTS jobs_question_search ON jobs USING gin (question_search)",
    "ALTER TABLE jobs ADD COLUMN retry_of text REFERENCES jobs(id) ON DELETE SET NULL",
    "ALTER TABLE jobs ADD COLUMN retries text[] NOT NULL DEFAULT '{}'",
    "ALTER TABLE jobs ADD COLUMN retry_forced boolean NOT NULL DEFAULT false",
    "CREATE UNIQUE INDEX IF NOT EXISTS jobs_one_retry ON jobs (retry_of) WHERE retry_of IS NOT NULL AND NOT retry_forced",
    "CREATE INDEX IF NOT EXISTS jobs_finished_at ON jobs (finished_at) "
    "WHERE status IN ('succeeded', 'failed', 'cancelled')",
    """
    CREATE TABLE job_retry_runs (
        id          text PRIMARY KEY,
        api_key_id  text REFERENCES api_keys(id),   -- the admin who started it
        status      text NOT NULL DEFAULT 'queued'
                    CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        filters     jsonb NOT NULL DEFAULT '{}'::jsonb,
        force       boolean NOT NULL DEFAULT false,
        total       integer NOT NULL DEFAULT 0,   -- jobs matching the filters when the run started
        done        integer NOT NULL DEFAULT 0,   -- retried (a new job, or the existing unforced retry)
        skipped     integer NOT NULL DEFAULT 0,   -- not final yet: nothing to retry
        cursor_at   timestamptz,                  -- keyset position: the last job handled
        cursor_id   text,
        error       text,
        created_at  timestamptz NOT NULL DEFAULT now(),
        started_at  timestamptz,
        updated_at  timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz
    )
    """,
]

DOWNGRADE = [
    "DROP TABLE IF EXISTS job_retry_runs",
    "DROP INDEX IF EXISTS jobs_finished_at",
    "DROP INDEX IF EXISTS jobs_one_retry",
    "ALTER TABLE jobs DROP COLUMN IF EXISTS retry_forced",
    "ALTER TABLE jobs DROP COLUMN IF EXISTS retries",
    "ALTER TABLE jobs DROP COLUMN IF EXISTS retry_of",
    "DROP INDEX IF EXISTS jobs_question_search",
    "ALTER TABLE jobs DROP COLUMN IF EXISTS question_search",
    "DROP INDEX IF EXISTS jobs_created",
    "CREATE INDEX IF NOT EXISTS jobs_key_created ON jobs (api_key_id, created_at DESC)",
    "DROP INDEX IF EXISTS jobs_key_created_id",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
