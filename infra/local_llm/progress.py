"""How the long steps (build, weights download) report progress: a phase, done and total."""

from __future__ import annotations

from collections.abc import Callable

# (what is happening, steps done, steps in all; total 0 = unknown)
ProgressFn = Callable[[str, int, int], None]


def silent(what: str, done: int, total: int) -> None:
    """The default: nobody is watching."""
