"""Budgets in money and tokens per API key (issue 27).

- `api_keys.{daily,monthly}_budget_{usd,tokens}`: a key's own budgets; NULL follows the
  deployment's default (`TURNOUT_KEY_DAILY_BUDGET_USD`, ...; unset there too = unlimited).
- `key_budget_ledger`: one row per key and UTC month, with the month's and the current UTC day's
  settled spend and outstanding holds (money and tokens). A reservation is one conditional
  `UPDATE` of that one row (both periods are checked on the same row, so the check and the
  increment are atomic together; infra/db/budgets.py); a new day resets the day columns in the
  same statement.
- `budget_holds`: each outstanding reservation (what it holds, which day and month, until when):
  settling deletes it; the sweeper releases one whose call never settled (a dead worker).
- `key_spend`: settled LLM spend per key, UTC day and model (`GET /v1/usage`); not pruned with jobs.
- `audit_events.cost_usd`: an LLM call's cost by the price table.

Revision ID: 0013
Revises: 0012
"""

from alembic import op

revision = "0013"
down_revision = "0012"

UPGRADE = [
    """
    ALTER TABLE api_keys
        ADD COLUMN daily_budget_usd      numeric CHECK (daily_budget_usd >= 0),
        ADD COLUMN monthly_budget_usd    numeric CHECK (monthly_budget_usd >= 0),
        ADD COLUMN daily_budget_tokens   bigint CHECK (daily_budget_tokens >= 0),
        ADD COLUMN monthly_budget_tokens bigint CHECK (monthly_budget_tokens >= 0)
    """,
    """
    CREATE TABLE key_budget_ledger (
        api_key_id        text NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
        month             date NOT NULL,              -- the UTC month's first day
        day               date NOT NULL,              -- the UTC day the day_* columns count
        month_usd         numeric NOT NULL DEFAULT 0, -- settled
        month_tokens      bigint  NOT NULL DEFAULT 0,
        day_usd           numeric NOT NULL DEFAULT 0,
        day_tokens        bigint  NOT NULL DEFAULT 0,
        month_held_usd    numeric NOT NULL DEFAULT 0, -- reserved, not settled yet
        month_held_tokens bigint  NOT NULL DEFAULT 0,
        day_held_usd      numeric NOT NULL DEFAULT 0,
        day_held_tokens   bigint  NOT NULL DEFAULT 0,
        PRIMARY KEY (api_key_id, month)
    )
    """,
    """
    CREATE TABLE budget_holds (
        id          bigserial PRIMARY KEY,
        api_key_id  text NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
        job_id      text NOT NULL,
        month       date NOT NULL,
        day         date NOT NULL,
        usd         numeric NOT NULL,
        tokens      bigint NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now(),
        expires_at  timestamptz NOT NULL
    )
    """,
    "CREATE INDEX budget_holds_expires ON budget_holds (expires_at)",
    """
    CREATE TABLE key_spend (
        api_key_id    text NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
        day           date NOT NULL,
        model         text NOT NULL,
        calls         bigint NOT NULL DEFAULT 0,
        input_tokens  bigint NOT NULL DEFAULT 0,
        output_tokens bigint NOT NULL DEFAULT 0,
        cost_usd      numeric NOT NULL DEFAULT 0,
        PRIMARY KEY (api_key_id, day, model)
    )
    """,
    "CREATE INDEX key_spend_day ON key_spend (day)",
    "ALTER TABLE audit_events ADD COLUMN cost_usd double precision",
]

DOWNGRADE = [
    "ALTER TABLE audit_events DROP COLUMN IF EXISTS cost_usd",
    "DROP TABLE IF EXISTS key_spend",
    "DROP TABLE IF EXISTS budget_holds",
    "DROP TABLE IF EXISTS key_budget_ledger",
    """
    ALTER TABLE api_keys DROP COLUMN IF EXISTS daily_budget_usd, DROP COLUMN IF EXISTS monthly_budget_usd,
        DROP COLUMN IF EXISTS daily_budget_tokens, DROP COLUMN IF EXISTS monthly_budget_tokens
    """,
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
