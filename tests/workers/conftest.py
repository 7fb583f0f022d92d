"""Fixtures shared with tests/infra (a migrated database of the test's own, a small pool on it)."""

from tests.infra.conftest import fresh_dsn, pool  # noqa: F401 (fixtures)
