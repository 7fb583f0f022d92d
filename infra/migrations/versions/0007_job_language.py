"""A job keeps the client's material language (`language` at submission, a UI locale).

The seed's language rule (issue 15): the articles' language defaults to the language the
question is written in; a client may pass its own default, which a language named in the
question still overrides. NULL: the client passed none.

Revision ID: 0007
Revises: 0006
"""

from alembic import op

revision = "0007"
down_revision = "0006"


def upgrade() -> None:
    op.execute("ALTER TABLE jobs ADD COLUMN language text CHECK (language IN ('ru', 'en', 'de'))")


def downgrade() -> None:
    op.execute("ALTER TABLE jobs DROP COLUMN IF EXISTS language")
