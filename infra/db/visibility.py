"""Which article ids may be shown right now (SPEC §4: published and not hidden, always).

Anything served from a store that outlives a visibility change (the page cache, a job's stored
result) is checked against this before it is served: one primary-key lookup per answer.
"""

from __future__ import annotations

from collections.abc import Iterable

from infra.db.search import PoolOrConnection


async def visible_ids(conn: PoolOrConnection, ids: Iterable[str]) -> set[str]:
    """The subset of `ids` (localization ids) that is published and not hidden now."""
    wanted = sorted(set(ids))
    if not wanted:
        return set()
    rows = await conn.fetch(
        "SELECT id FROM localizations WHERE id = ANY($1::text[]) AND published AND NOT hidden", wanted
    )
    return {row["id"] for row in rows}
