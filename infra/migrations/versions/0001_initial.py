"""Initial schema: articles and localizations, jobs, audit, webhooks, re-embedding, API keys.

Revision ID: 0001
Revises:
"""

from alembic import op

revision = "0001"
down_revision = None

# Pre-release baseline: each area keeps its tables in its own block below.
UPGRADE = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    # --- articles (a story) and localizations (one per language version; what readers see) ---
    """
    CREATE TABLE articles (
        id          text PRIMARY KEY,              -- the story key (translation_key)
        source      text,
        kind        text,
        tags        text[] NOT NULL DEFAULT '{}',
        created_at  timestamptz NOT NULL DEFAULT now()
    )
    """,
    """
    CREATE TABLE localizations (
        id           text PRIMARY KEY,             -- record id: the article id clients see
        article_id   text NOT NULL REFERENCES articles(id) ON DELETE CASCADE,
        language     text NOT NULL CHECK (language IN ('ru', 'en', 'de')),
        title        text NOT NULL,
        summary      text NOT NULL DEFAULT '',
        body         text NOT NULL DEFAULT '',     -- as imported (HTML or Markdown)
        body_format  text NOT NULL DEFAULT 'html',
        body_text    text NOT NULL DEFAULT '',     -- markup stripped: what is indexed and embedded
        url          text,
        slug         text,
        author       text,
        published    boolean NOT NULL DEFAULT true,
        hidden       boolean NOT NULL DEFAULT false,
        created_at   timestamptz NOT NULL,
        updated_at   timestamptz,
        content_hash text NOT NULL,
        imported_at  timestamptz NOT NULL DEFAULT now(),
        -- Full-text search (retrieval/search.py): each row stemmed with its own language's
        -- configuration; weights title A > summary B > body C. The body is capped so an
        -- oversized article can never fail its import on tsvector's 1 MB limit.
        search_vector tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector(CASE language WHEN 'ru' THEN 'russian'::regconfig
                WHEN 'de' THEN 'german'::regconfig ELSE 'english'::regconfig END, title), 'A')
            || setweight(to_tsvector(CASE language WHEN 'ru' THEN 'russian'::regconfig
                WHEN 'de' THEN 'german'::regconfig ELSE 'english'::regconfig END, summary), 'B')
            || setweight(to_tsvector(CASE language WHEN 'ru' THEN 'russian'::regconfig
                WHEN 'de' THEN 'german'::regconfig ELSE 'english'::regconfig END, left(body_text, 250000)), 'C')
        ) STORED
    )
    """,
    "CREATE INDEX localizations_article ON localizations (article_id)",
    "CREATE INDEX localizations_visible_date ON localizations (language, created_at DESC, id DESC) "
    "WHERE published AND NOT hidden",
    # Search (retrieval/search.py): keep the vector in the row when it fits (the body text goes to
    # TOAST first), so matching it does not cost a TOAST lookup per row.
    "ALTER TABLE localizations ALTER COLUMN search_vector SET STORAGE MAIN",
    # Date order over all languages, full-text GIN, and the trigram GIN for the fallback's ILIKE
    # (its expression must equal infra/db/search.py's TRIGRAM_TEXT).
    "CREATE INDEX localizations_visible_all_date ON localizations (created_at DESC, id DESC) "
    "WHERE published AND NOT hidden",
    "CREATE INDEX localizations_search_vector ON localizations USING gin (search_vector) "
    "WHERE published AND NOT hidden",
    "CREATE INDEX localizations_search_trgm ON localizations "
    "USING gin ((title || ' ' || summary) gin_trgm_ops) WHERE published AND NOT hidden",
    # Exact search counts (SPEC §4 totalItems): the visible rows' search keys, narrow. A count in
    # `localizations` visits one ~2 KB heap row per match (PostgreSQL 15 fetches the heap even for
    # an exact bitmap); here rows are ~100 bytes with the vector in TOAST (read only through the
    # GIN index), so a count is a BitmapAnd of the date and GIN indexes over a table that stays in
    # memory. Kept in step by the trigger below, in the writing transaction.
    """
    CREATE TABLE localization_search (
        id            text PRIMARY KEY REFERENCES localizations(id) ON DELETE CASCADE ON UPDATE CASCADE,
        language      text NOT NULL,
        created_at    timestamptz NOT NULL,
        search_vector tsvector NOT NULL
    ) WITH (toast_tuple_target = 128)
    """,
    "ALTER TABLE localization_search ALTER COLUMN search_vector SET STORAGE EXTERNAL",
    "CREATE INDEX localization_search_date ON localization_search (language, created_at)",
    "CREATE INDEX localization_search_vector ON localization_search USING gin (search_vector)",
    """
    CREATE FUNCTION localization_search_sync() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.published AND NOT NEW.hidden THEN
            INSERT INTO localization_search (id, language, created_at, search_vector)
            VALUES (NEW.id, NEW.language, NEW.created_at, NEW.search_vector)
            ON CONFLICT (id) DO UPDATE SET language = EXCLUDED.language, created_at = EXCLUDED.created_at,
                                           search_vector = EXCLUDED.search_vector;
        ELSE
            DELETE FROM localization_search WHERE id = NEW.id;
        END IF;
        RETURN NULL;
    END
    $$
    """,
    "CREATE TRIGGER localization_search_insert AFTER INSERT ON localizations "
    "FOR EACH ROW EXECUTE FUNCTION localization_search_sync()",
    "CREATE TRIGGER localization_search_update AFTER UPDATE ON localizations FOR EACH ROW "
    "WHEN ((OLD.published, OLD.hidden, OLD.language, OLD.created_at, OLD.search_vector) "
    "IS DISTINCT FROM (NEW.published, NEW.hidden, NEW.language, NEW.created_at, NEW.search_vector)) "
    "EXECUTE FUNCTION localization_search_sync()",
    # --- API keys ---
    """
    CREATE TABLE api_keys (
        id             text PRIMARY KEY,           -- public key id (the part before the dot)
        name           text NOT NULL,
        key_hash       text NOT NULL UNIQUE,       -- sha256 of the secret part; the key itself is never stored
        webhook_secret text NOT NULL,              -- signs this key's webhooks (HMAC-SHA256)
        is_admin       boolean NOT NULL DEFAULT false,
        created_at     timestamptz NOT NULL DEFAULT now(),
        revoked_at     timestamptz
    )
    """,
    # --- jobs: the source of truth for job state ---
    """
    CREATE TABLE jobs (
        id               text PRIMARY KEY,         -- unguessable
        api_key_id       text REFERENCES api_keys(id),
        status           text NOT NULL DEFAULT 'queued'
                         CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        question         text NOT NULL,
        answer_language  text,
        page_size        integer,
        webhook_url      text,
        idempotency_key  text,
        request_hash     text,
        result           jsonb,
        error            jsonb,
        usage            jsonb NOT NULL DEFAULT '{}'::jsonb,
        attempts         integer NOT NULL DEFAULT 0,
        lease_expires_at timestamptz,
        created_at       timestamptz NOT NULL DEFAULT now(),
        updated_at       timestamptz NOT NULL DEFAULT now(),
        started_at       timestamptz,
        finished_at      timestamptz,
        UNIQUE (api_key_id, idempotency_key)
    )
    """,
    "CREATE INDEX jobs_status_lease ON jobs (status, lease_expires_at)",
    "CREATE INDEX jobs_key_created ON jobs (api_key_id, created_at DESC)",
    """
    CREATE TABLE job_events (
        id         bigserial PRIMARY KEY,
        job_id     text NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        kind       text NOT NULL,
        data       jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX job_events_job ON job_events (job_id, id)",
    # --- audit trail: one row per LLM round / tool execution / limit / fallback ---
    """
    CREATE TABLE audit_events (
        id                   bigserial PRIMARY KEY,
        job_id               text REFERENCES jobs(id) ON DELETE CASCADE,
        round                integer,
        kind                 text NOT NULL,
        loop_mode            text,
        model                text,
        tool                 text,
        arguments            jsonb,
        normalized_arguments jsonb,
        outcome              text,
        error                text,
        finish_reason        text,
        input_tokens         integer NOT NULL DEFAULT 0,
        output_tokens        integer NOT NULL DEFAULT 0,
        latency_ms           double precision,
        created_at           timestamptz NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX audit_events_job ON audit_events (job_id, id)",
    # --- webhooks ---
    """
    CREATE TABLE webhook_deliveries (
        id               bigserial PRIMARY KEY,
        job_id           text NOT NULL UNIQUE REFERENCES jobs(id) ON DELETE CASCADE,
        url              text NOT NULL,
        status           text NOT NULL DEFAULT 'pending'
                         CHECK (status IN ('pending', 'delivered', 'dead')),
        attempts         integer NOT NULL DEFAULT 0,
        next_attempt_at  timestamptz NOT NULL DEFAULT now(),
        last_status_code integer,
        last_error       text,
        created_at       timestamptz NOT NULL DEFAULT now(),
        delivered_at     timestamptz
    )
    """,
    """
    CREATE TABLE webhook_attempts (
        id          bigserial PRIMARY KEY,
        delivery_id bigint NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
        attempt     integer NOT NULL,
        status_code integer,
        error       text,
        latency_ms  double precision,
        created_at  timestamptz NOT NULL DEFAULT now()
    )
    """,
    # --- vector collections and bulk re-embedding ---
    """
    CREATE TABLE collection_versions (
        name       text PRIMARY KEY,
        model      text NOT NULL,
        dimension  integer NOT NULL,
        active     boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        chunking     text,                         -- chunker version the chunks were cut with
        activated_at timestamptz                   -- last time it started serving reads
    )
    """,
    "CREATE UNIQUE INDEX collection_versions_one_active ON collection_versions (active) WHERE active",
    """
    CREATE TABLE reembed_runs (
        id          text PRIMARY KEY,
        status      text NOT NULL DEFAULT 'queued'
                    CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        scope       jsonb NOT NULL DEFAULT '{}'::jsonb,
        model       text NOT NULL,
        collection  text NOT NULL,
        total       integer NOT NULL DEFAULT 0,
        done        integer NOT NULL DEFAULT 0,
        skipped     integer NOT NULL DEFAULT 0,
        failed      integer NOT NULL DEFAULT 0,
        error       text,
        created_at  timestamptz NOT NULL DEFAULT now(),
        started_at  timestamptz,
        updated_at  timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz,
        dimension         integer,                 -- of `model`, = the new collection's size
        source_collection text,                    -- the active version vectors are copied from
        embedded          integer NOT NULL DEFAULT 0  -- chunks embedded (`skipped`: chunks copied)
    )
    """,
    # One run at a time: two runs finishing in either order must not switch reads backwards.
    "CREATE UNIQUE INDEX reembed_runs_one_open ON reembed_runs ((true)) WHERE status IN ('queued', 'running')",
    """
    CREATE TABLE reembed_batches (
        run_id           text NOT NULL REFERENCES reembed_runs(id) ON DELETE CASCADE,
        batch_no         integer NOT NULL,
        localization_ids text[] NOT NULL,
        status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed')),
        chunks_written   integer NOT NULL DEFAULT 0,
        chunks_skipped   integer NOT NULL DEFAULT 0,
        finished_at      timestamptz,
        mode             text NOT NULL DEFAULT 'embed' CHECK (mode IN ('embed', 'copy')),
        error            text,
        PRIMARY KEY (run_id, batch_no)
    )
    """,
]

DOWNGRADE = [
    "DROP TABLE IF EXISTS reembed_batches, reembed_runs, collection_versions, webhook_attempts, "
    "webhook_deliveries, audit_events, job_events, jobs, api_keys, localization_search, localizations, articles "
    "CASCADE",
    "DROP FUNCTION IF EXISTS localization_search_sync()",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
