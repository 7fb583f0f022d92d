"""The dashboard page and its assets: served without a key (no data in them), nothing else, no CDN."""

from __future__ import annotations

import re

from api.routes.ops import STATIC_DIR
from tests.api.support import ApiServer


def test_page_and_its_assets_are_served(api: ApiServer) -> None:
    with api.client() as anonymous:
        page = anonymous.get("/v1/ops/dashboard")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "connect-src 'self'" in csp and "default-src 'none'" in csp
        assets = re.findall(r'(?:src|href)="(dashboard/[^"]+)"', page.text)
        assert sorted(assets) == ["dashboard/charts.js", "dashboard/dashboard.css", "dashboard/dashboard.js",
                                  "dashboard/jobs.js", "dashboard/panels.js", "dashboard/usage.js"]
        for asset in assets:
            response = anonymous.get(f"/v1/ops/{asset}")
            assert response.status_code == 200, asset
            expected = "text/css" if asset.endswith(".css") else "text/javascript"
            assert response.headers["content-type"].startswith(expected)
        assert "Bearer" in anonymous.get("/v1/ops/dashboard/dashboard.js").text  # data needs the key


def test_nothing_but_the_assets(api: ApiServer) -> None:
    with api.client() as anonymous:
        for name in ("dashboard.html", "nope.js", "..%2Froutes%2Fops.py", "%2e%2e%2fmain.py"):
            response = anonymous.get(f"/v1/ops/dashboard/{name}")
            assert response.status_code == 404, name
            assert response.json()["error"]["code"] == "not_found"


def test_works_without_internet() -> None:
    """No file the page loads refers to another host (the SVG namespace is an identifier, not a fetch)."""
    for path in STATIC_DIR.iterdir():
        text = path.read_text(encoding="utf-8")
        urls = set(re.findall(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s\"')]*", text)) - {"http://www.w3.org/2000/svg"}
        assert not urls, f"{path.name} refers to {urls}"
