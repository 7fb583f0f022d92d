"""The whole OpenAPI document fuzzed (schemathesis + hypothesis): every route — jobs, webhooks,
/v1/ops/*, /v1/admin/*, /metrics — with an admin key, answers no 500, only status codes the
document lists, bodies that match the documented schema, and errors in the one JSON shape.

The API runs on a database and Redis prefix of its own with no worker consuming them: fuzzed
submissions and re-embedding runs stay queued and never reach another test's stack.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from infra.settings import Settings
from tests.api.support import ApiServer, issue_key, shorten_prefer_wait, stack_settings, throwaway_database

EXAMPLES_PER_OPERATION = 12
# A stream that ends only when its job does; its queued job never ends here. Covered by the
# lifecycle tests (tests/api/test_lifecycle.py).
SKIPPED = {("GET", "/v1/jobs/{job_id}/events")}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def isolated_api(test_environment: None, settings: Settings) -> Iterator[ApiServer]:
    with throwaway_database("openapi_fuzz") as dsn:
        isolated = stack_settings(
            settings, database_url=dsn, redis_prefix=settings.redis_prefix + "openapi-fuzz:",
            job_lease_s=86_400.0, limits__submissions_per_minute=1_000_000,
        )
        server = ApiServer(isolated).start()
        try:
            yield server
        finally:
            server.stop()


def _operations(api: ApiServer) -> list[Any]:
    schema = schemathesis.openapi.from_url(f"{api.base_url}/openapi.json")
    return [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]


def _fuzz(api: ApiServer, operations: list[Any], headers: dict[str, str], examples: int,
          allowed: set[int] | None = None) -> list[str]:
    """Each operation's failures (documented contract, one error shape, `allowed` statuses)."""
    failures: list[str] = []
    for operation in operations:
        if (operation.method.upper(), operation.path) in SKIPPED:
            continue

        @given(case=operation.as_strategy())
        @hypothesis_settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck),
                             database=None)
        def check(case: schemathesis.Case) -> None:
            shorten_prefer_wait(case.headers)  # its submissions never run
            response = case.call(base_url=api.base_url, headers=headers, timeout=10)
            case.validate_response(response, checks=CHECKS)
            if response.status_code >= 400:
                body = response.json()
                assert set(body) == {"error"} and body["error"]["code"] and body["error"]["message"], body
            assert allowed is None or response.status_code in allowed, (response.status_code, response.text)

        try:
            check()
        except Exception as exc:  # every operation's failure, not only the first one's
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}"[:1200])
    return failures


def test_every_operation_keeps_its_documented_contract(isolated_api: ApiServer) -> None:
    admin = issue_key(isolated_api.settings, "fuzz-admin", admin=True)
    operations = _operations(isolated_api)
    seen = {(op.method.upper(), op.path) for op in operations}
    # The whole document, not a part of it: ops, metrics, jobs, webhooks and admin routes.
    assert {("GET", "/metrics"), ("GET", "/v1/ops/health"), ("GET", "/v1/ops/queues"), ("POST", "/v1/questions"),
            ("POST", "/v1/admin/reembed"), ("GET", "/v1/admin/reembed/{run_id}")} <= seen, seen
    failures = _fuzz(isolated_api, operations, {"Authorization": f"Bearer {admin.token}"}, EXAMPLES_PER_OPERATION)
    assert not failures, "\n\n".join(failures)


def test_admin_operations_refuse_other_keys_as_documented(isolated_api: ApiServer) -> None:
    plain = issue_key(isolated_api.settings, "fuzz-plain")
    admin_only = [op for op in _operations(isolated_api)
                  if op.path.startswith("/v1/admin/") or op.path in ("/metrics", "/v1/ops/queues")]
    failures = _fuzz(isolated_api, admin_only, {"Authorization": f"Bearer {plain.token}"}, 5, allowed={403, 422})
    failures += _fuzz(isolated_api, admin_only, {}, 3, allowed={401, 422})
    assert not failures, "\n\n".join(failures)
