"""Each chunk's vector beside its text, for the request gate (issue 23).

`rag_chunks.embedding`: the chunk's vector as little-endian float32 bytes, written by the same
re-embedding batch as the vector store's point. The router reads a version's vectors into
memory to measure how close a message is to any passage of the collection: the vector store
cannot be asked from the router's process (Qdrant Edge opens a shard in one process only).
NULL for a version indexed before this migration (the gate then reads words only).

Revision ID: 0015
Revises: 0014
"""

from alembic import op

revision = "0015"
down_revision = "0014"


def upgrade() -> None:
    op.execute("ALTER TABLE rag_chunks ADD COLUMN embedding bytea")


def downgrade() -> None:
    op.execute("ALTER TABLE rag_chunks DROP COLUMN IF EXISTS embedding")
