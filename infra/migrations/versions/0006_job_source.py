"""Where a job came from: `source` (`http` for POST /v1/questions, `mcp` for an MCP tool call),
the MCP client (`name/version`) and, for a tool the MCP host's model chose, the fixed call
(`tool_call` = {tool, arguments}) the runner hands to the gateway instead of asking the LLM. The
call is kept as JSON *text*: jsonb cannot hold a NUL (nor NaN), which a model may send, and the
gateway must judge exactly what was sent.

Audit rows carry the job's source and client too: a BEFORE INSERT trigger copies them from the
job, so every writer of audit rows (router, RAG, journal) stays as it is.

Revision ID: 0006
Revises: 0005
"""

from alembic import op

revision = "0006"
down_revision = "0005"

UPGRADE = [
    "ALTER TABLE jobs ADD COLUMN source text NOT NULL DEFAULT 'http' CHECK (source IN ('http', 'mcp'))",
    "ALTER TABLE jobs ADD COLUMN client text",
    "ALTER TABLE jobs ADD COLUMN tool_call text",
    "ALTER TABLE audit_events ADD COLUMN source text",
    "ALTER TABLE audit_events ADD COLUMN client text",
    """
    CREATE FUNCTION audit_events_source() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.job_id IS NOT NULL AND NEW.source IS NULL THEN
            SELECT source, client INTO NEW.source, NEW.client FROM jobs WHERE id = NEW.job_id;
        END IF;
        RETURN NEW;
    END
    $$
    """,
    """
    CREATE TRIGGER audit_events_source BEFORE INSERT ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_source()
    """,
]

DOWNGRADE = [
    "DROP TRIGGER IF EXISTS audit_events_source ON audit_events",
    "DROP FUNCTION IF EXISTS audit_events_source()",
    "ALTER TABLE audit_events DROP COLUMN IF EXISTS client",
    "ALTER TABLE audit_events DROP COLUMN IF EXISTS source",
    "ALTER TABLE jobs DROP COLUMN IF EXISTS tool_call",
    "ALTER TABLE jobs DROP COLUMN IF EXISTS client",
    "ALTER TABLE jobs DROP COLUMN IF EXISTS source",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
