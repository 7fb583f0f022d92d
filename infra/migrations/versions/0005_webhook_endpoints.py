"""Webhook endpoints (health per API key and origin), delivery rounds, secret rotation, recovery audit.

- `webhook_endpoints`: one row per (API key, origin = scheme://host[:port] as written, lower-cased).
  A BEFORE INSERT trigger on `webhook_deliveries` files each new delivery under its endpoint and,
  when that endpoint is disabled, records the delivery as `disabled` (no attempt is queued):
  the final-transition statement in infra/db/jobs.py needs no change.
- `webhook_deliveries.round_attempts`: attempts since the delivery was (re)queued, the index into
  the retry schedule; a redelivery starts a new round. New status `disabled`.
- `api_keys.webhook_secret_previous(_until)`: the secret a rotation replaced, still signing until then.
- `webhook_actions`: who redelivered, recovered or enabled what (the audit of recovery).

Revision ID: 0005
Revises: 0004
"""

from alembic import op

revision = "0005"
down_revision = "0004"

UPGRADE = [
    """
    CREATE TABLE webhook_endpoints (
        id                   bigserial PRIMARY KEY,
        api_key_id           text NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
        origin               text NOT NULL,
        consecutive_failures integer NOT NULL DEFAULT 0,
        failing_since        timestamptz,
        last_failure_at      timestamptz,
        last_success_at      timestamptz,
        disabled_at          timestamptz,
        disabled_reason      text,
        created_at           timestamptz NOT NULL DEFAULT now(),
        UNIQUE (api_key_id, origin)
    )
    """,
    "CREATE INDEX webhook_endpoints_disabled ON webhook_endpoints (disabled_at) WHERE disabled_at IS NOT NULL",
    """
    CREATE FUNCTION webhook_origin(url text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
        SELECT lower(regexp_replace(substring(url FROM '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*'), '//[^@/]*@', '//'))
    $$
    """,
    "ALTER TABLE webhook_deliveries ADD COLUMN endpoint_id bigint REFERENCES webhook_endpoints(id) ON DELETE SET NULL",
    "ALTER TABLE webhook_deliveries ADD COLUMN round_attempts integer NOT NULL DEFAULT 0",
    "ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_status_check",
    """
    ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check
        CHECK (status IN ('pending', 'delivered', 'dead', 'disabled'))
    """,
    "CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, status)",
    """
    CREATE FUNCTION webhook_delivery_endpoint() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        key_id text;
        endpoint record;
    BEGIN
        SELECT api_key_id INTO key_id FROM jobs WHERE id = NEW.job_id;
        IF key_id IS NULL THEN
            RETURN NEW;
        END IF;
        -- Read first: the endpoint usually exists, and a read takes no row lock on it.
        SELECT id, disabled_at INTO endpoint FROM webhook_endpoints
        WHERE api_key_id = key_id AND origin = webhook_origin(NEW.url);
        IF NOT FOUND THEN
            INSERT INTO webhook_endpoints (api_key_id, origin) VALUES (key_id, webhook_origin(NEW.url))
            ON CONFLICT (api_key_id, origin) DO UPDATE SET origin = EXCLUDED.origin  -- a racing insert won
            RETURNING id, disabled_at INTO endpoint;
        END IF;
        NEW.endpoint_id := endpoint.id;
        IF endpoint.disabled_at IS NOT NULL AND NEW.status = 'pending' THEN
            NEW.status := 'disabled';
            NEW.last_error := 'endpoint disabled: not sent (enable it, then recover)';
        END IF;
        RETURN NEW;
    END
    $$
    """,
    """
    CREATE TRIGGER webhook_delivery_endpoint BEFORE INSERT ON webhook_deliveries
    FOR EACH ROW EXECUTE FUNCTION webhook_delivery_endpoint()
    """,
    "ALTER TABLE api_keys ADD COLUMN webhook_secret_previous text",
    "ALTER TABLE api_keys ADD COLUMN webhook_secret_previous_until timestamptz",
    """
    CREATE TABLE webhook_actions (
        id          bigserial PRIMARY KEY,
        api_key_id  text NOT NULL,
        action      text NOT NULL CHECK (action IN ('redeliver', 'recover', 'enable', 'rotate_secret')),
        target      jsonb NOT NULL DEFAULT '{}'::jsonb,
        affected    integer NOT NULL DEFAULT 0,
        created_at  timestamptz NOT NULL DEFAULT now()
    )
    """,
]

DOWNGRADE = [
    "DROP TABLE IF EXISTS webhook_actions",
    "ALTER TABLE api_keys DROP COLUMN IF EXISTS webhook_secret_previous_until",
    "ALTER TABLE api_keys DROP COLUMN IF EXISTS webhook_secret_previous",
    "DROP TRIGGER IF EXISTS webhook_delivery_endpoint ON webhook_deliveries",
    "DROP FUNCTION IF EXISTS webhook_delivery_endpoint()",
    "UPDATE webhook_deliveries SET status = 'dead' WHERE status = 'disabled'",
    "ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_status_check",
    """
    ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check
        CHECK (status IN ('pending', 'delivered', 'dead'))
    """,
    "DROP INDEX IF EXISTS webhook_deliveries_endpoint",
    "ALTER TABLE webhook_deliveries DROP COLUMN IF EXISTS round_attempts",
    "ALTER TABLE webhook_deliveries DROP COLUMN IF EXISTS endpoint_id",
    "DROP FUNCTION IF EXISTS webhook_origin(text)",
    "DROP TABLE IF EXISTS webhook_endpoints",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
