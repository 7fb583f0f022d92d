"""Import the pytest plugins' packages whole, once, before a test starts a thread.

pytest rewrites the asserts of every module of a package that registers a plugin (schemathesis,
hypothesis, anyio, ...), so the first import of each such module runs `ast.parse`. CPython 3.11.7's
AST constructor keeps its recursion depth in interpreter-wide state (python/cpython#106905), so two
parses that overlap - in two threads, or one begun by code the garbage collector runs in the middle
of another - fail with `SystemError: AST constructor recursion depth mismatch`. CI met it in
`test_fuzz` (schemathesis imports ~90 modules lazily there), beside the suite's server threads and
a collected `AsyncResult` reconnecting to a dead Redis. Importing here, while the process has one
thread and little garbage, leaves no parse for test time.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import pkgutil
import warnings

# Modules that need packages the suite does not install, run when imported, or no test imports.
_SKIPPED = frozenset({"extra", "__main__", "cli", "_trio", "tests", "testing"})


def plugin_packages() -> list[str]:
    """The top-level packages of the installed distributions that register a pytest plugin: all
    of such a distribution's files are rewritten (pytest's `_mark_plugins_for_rewrite`), not only
    its plugin module (hypothesis's is `_hypothesis_pytestplugin`, beside `hypothesis`)."""
    packages: set[str] = set()
    for dist in importlib.metadata.distributions():
        if any(entry.group == "pytest11" for entry in dist.entry_points):
            packages.update(file.parts[0] for file in dist.files or []
                            if len(file.parts) == 2 and file.name == "__init__.py")
    return sorted(packages)


def import_plugin_packages() -> None:
    """Import every module of the plugin packages (those importable here)."""
    for name in plugin_packages():
        try:
            package = importlib.import_module(name)
        except ImportError:
            continue
        paths = getattr(package, "__path__", None)
        if paths is None:
            continue
        for module in pkgutil.walk_packages(paths, prefix=f"{name}.", onerror=lambda _: None):
            if _SKIPPED.intersection(module.name.split(".")):
                continue
            # A module's own warnings at import (hypothesis warns that loading its charmap here is
            # slow) are not the suite's: the same code would run, unwarned, at its first use.
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(module.name)
