"""Versioned schema migrations (alembic), applied by one command: `turnout migrate`."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.exc import DBAPIError

from infra.db.pool import redact
from infra.settings import ConfigError

_MIGRATIONS = Path(__file__).parent / "migrations"


def sqlalchemy_url(dsn: str) -> str:
    """alembic runs through SQLAlchemy on the same asyncpg driver the app uses."""
    for prefix in ("postgresql://", "postgres://"):
        if dsn.startswith(prefix):
            return "postgresql+asyncpg://" + dsn[len(prefix) :]
    return dsn


def alembic_config(dsn: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    # ConfigParser interpolation would choke on '%' in URL-encoded DSNs.
    cfg.set_main_option("sqlalchemy.url", sqlalchemy_url(dsn).replace("%", "%%"))
    return cfg


def upgrade(dsn: str, revision: str = "head") -> None:
    try:
        command.upgrade(alembic_config(dsn), revision)
    except (OSError, DBAPIError) as exc:
        reason = getattr(exc, "orig", None) or exc
        raise ConfigError(f"cannot migrate the database at {redact(dsn)}: {reason}") from exc

