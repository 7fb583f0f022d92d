"""Schema-driven fuzzing of the job API (schemathesis + hypothesis): whatever a client sends,
the answer is never a 500, and every error has the one JSON shape. Jobs go to the idle API
(they are never run)."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings

from infra.settings import Settings
from tests.api.support import ApiServer, issue_key, shorten_prefer_wait

JOB_API = r"^/v1/(questions|jobs|webhooks|usage)"
EXAMPLES_PER_OPERATION = 25


def test_never_a_server_error(idle_api: ApiServer, settings: Settings) -> None:
    headers = {"Authorization": f"Bearer {issue_key(settings, 'fuzz').token}"}
    schema = schemathesis.openapi.from_url(f"{idle_api.base_url}/openapi.json")
    operations = [result.ok() for result in schema.include(path_regex=JOB_API).get_all_operations()]  # type: ignore[union-attr]
    # submit, list, retry, get, cancel, events, pages, feedback; webhooks: deliveries, dead letters, delivery,
    # redeliver, recover, endpoints, enable, secret rotation; the usage report
    assert len(operations) == 17

    for operation in operations:
        if operation.path.endswith("/events"):
            continue  # a stream that ends only with its job; covered by the lifecycle tests

        @given(case=operation.as_strategy())
        @hypothesis_settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, suppress_health_check=list(HealthCheck),
                  database=None)
        def check(case: schemathesis.Case) -> None:
            shorten_prefer_wait(case.headers)  # jobs never end on the idle API
            response = case.call(base_url=idle_api.base_url, headers=headers, timeout=10)
            assert response.status_code < 500, (case.method, case.formatted_path, response.text)
            if response.status_code >= 400:
                body = response.json()
                assert set(body) == {"error"} and body["error"]["code"] and body["error"]["message"], body

        check()
