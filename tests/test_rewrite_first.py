"""tests/support/rewrite_first.py: by the time a test runs, the pytest plugins' packages are
imported whole (and so rewritten), so a test's lazy imports of them parse nothing while a server
thread runs. Without it, what test_fuzz does first imports ~90 schemathesis and hypothesis modules."""

from __future__ import annotations

import sys

import schemathesis
from hypothesis import HealthCheck, find
from hypothesis import settings as hypothesis_settings

from infra.settings import Settings
from tests.support.rewrite_first import plugin_packages


def _plugin_modules() -> set[str]:
    packages = set(plugin_packages())
    return {name for name in list(sys.modules) if name.split(".")[0] in packages}


def test_the_plugin_packages_are_those_pytest_rewrites() -> None:
    packages = plugin_packages()
    # schemathesis and anyio register plugins; hypothesis's plugin module sits beside its package
    assert {"schemathesis", "hypothesis", "anyio", "xdist"} <= set(packages), packages
    assert all(type(sys.modules[name].__loader__).__name__ == "AssertionRewritingHook"
               for name in ("schemathesis.specs.openapi.schemas", "hypothesis.strategies._internal.regex"))


def test_a_schema_fuzzed_as_test_fuzz_does_imports_no_plugin_module(settings: Settings) -> None:
    from api.main import create_app

    before = _plugin_modules()
    schema = schemathesis.openapi.from_dict(create_app(settings).openapi())
    operation = next(result.ok() for result in schema.get_all_operations()  # type: ignore[union-attr]
                     if result.ok().path == "/v1/questions")  # type: ignore[union-attr]
    case = find(operation.as_strategy(), lambda _: True,
                settings=hypothesis_settings(database=None, suppress_health_check=list(HealthCheck)))
    assert case.method.upper() == "POST"
    assert _plugin_modules() - before == set()
