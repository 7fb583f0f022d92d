"""The API boundary: strict JSON types (no coercion), `Allow` on every 405, and the 400 of an
undecodable body and the 413 of an oversized one in the OpenAPI document."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from infra.settings import Settings
from tests.api.support import ApiServer, issue_key


def _submit(c: httpx.Client, body: Any) -> httpx.Response:
    return c.post("/v1/questions", json=body)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"question": "ruby news", "pageSize": "5"}, "pageSize"),
        ({"question": "ruby news", "pageSize": True}, "pageSize"),
        ({"question": "ruby news", "pageSize": 5.0}, "pageSize"),
        ({"question": 5}, "question"),
        ({"question": "ruby news", "webhookUrl": 1}, "webhookUrl"),
    ],
)
def test_values_of_another_json_type_are_rejected_not_coerced(
    idle_client: httpx.Client, body: dict[str, Any], field: str
) -> None:
    response = _submit(idle_client, body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and error["message"].startswith(f"{field}:"), error
    assert [d["field"] for d in error["details"]] == [field]


def test_an_integer_page_size_is_still_accepted(idle_client: httpx.Client) -> None:
    response = _submit(idle_client, {"question": "ruby news", "pageSize": 5})
    assert response.status_code == 202, response.text
    assert response.json()["pageSize"] == 5


def test_an_undecodable_body_is_a_documented_400(
    idle_api: ApiServer, idle_client: httpx.Client, settings: Settings
) -> None:
    paths = idle_client.get("/openapi.json").json()["paths"]
    for path, client in (("/v1/questions", idle_client),
                         ("/v1/admin/reembed", idle_api.client(issue_key(settings, "admin", admin=True).token))):
        response = client.post(path, content=b'{"question": "\xff\xfe"}', headers={"Content-Type": "application/json"})
        assert response.status_code == 400, (path, response.text)
        assert response.json()["error"]["code"] == "bad_request"
        assert "400" in paths[path]["post"]["responses"], path


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/v1/questions", {"POST"}),
        ("POST", "/v1/jobs/job_x", {"GET", "DELETE"}),  # two routes share the path
        ("PUT", "/v1/jobs/job_x/pages/2", {"GET"}),
        ("POST", "/v1/ops/health", {"GET"}),
    ],
)
def test_405_says_which_methods_the_path_allows(
    idle_client: httpx.Client, method: str, path: str, allow: set[str]
) -> None:
    response = idle_client.request(method, path)
    assert response.status_code == 405, response.text
    assert set(response.headers["Allow"].split(", ")) == allow
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_openapi_lists_400_and_413(idle_client: httpx.Client) -> None:
    paths = idle_client.get("/openapi.json").json()["paths"]
    assert {"400", "413"} <= set(paths["/v1/questions"]["post"]["responses"])
    assert {"400", "413"} <= set(paths["/v1/admin/reembed"]["post"]["responses"])
