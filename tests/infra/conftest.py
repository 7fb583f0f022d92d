from collections.abc import Iterator

import pytest

from tests.api.support import throwaway_database


@pytest.fixture
def fresh_dsn() -> Iterator[str]:
    """A migrated database of this test's own, dropped afterwards."""
    with throwaway_database("infra") as dsn:
        yield dsn
