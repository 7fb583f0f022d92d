"""alembic environment: online migrations over SQLAlchemy's asyncpg dialect."""

import asyncio

from alembic import context
from sqlalchemy.ext.asyncio import create_async_engine

config = context.config


def _run(connection) -> None:
    context.configure(connection=connection, target_metadata=None, transactional_ddl=True)
    with context.begin_transaction():
        context.run_migrations()


async def _online() -> None:
    engine = create_async_engine(config.get_main_option("sqlalchemy.url") or "")
    async with engine.connect() as conn:
        await conn.run_sync(_run)
        await conn.commit()
    await engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run `turnout migrate`")
asyncio.run(_online())
