"""API key changes announce themselves: NOTIFY `turnout_api_keys` with the key id.

Each API process keeps the keys it has verified (infra/db/key_cache.py) and forgets one when it
is revoked, changed or deleted, so a revocation applies to the next request. The notification is
delivered when the change commits.

Revision ID: 0004
Revises: 0003
"""

from alembic import op

revision = "0004"
down_revision = "0003"

UPGRADE = [
    """
    CREATE FUNCTION api_keys_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('turnout_api_keys', OLD.id);
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER api_keys_notify AFTER UPDATE OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION api_keys_notify()
    """,
]

DOWNGRADE = [
    "DROP TRIGGER IF EXISTS api_keys_notify ON api_keys",
    "DROP FUNCTION IF EXISTS api_keys_notify()",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
