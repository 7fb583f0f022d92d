"""The README stays true to the code: every setting documented, its commands and links exist."""

from __future__ import annotations

import os
import re
from pathlib import Path

from infra.settings import Limits, Settings
from tests.support.services import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def _documented(variable: str) -> bool:
    return re.search(rf"^\| `{variable}` \|", README, flags=re.M) is not None


def test_every_setting_has_a_row_in_the_configuration_table() -> None:
    variables = [f"TURNOUT_{name.upper()}" for name in Settings.model_fields if name != "limits"]
    variables += [f"TURNOUT_LIMIT_{name.upper()}" for name in Limits.model_fields]
    missing = [v for v in variables if not _documented(v)]
    assert not missing, f"add these to the README's configuration table: {missing}"


def _render(default: object) -> str | None:
    """How a default is written in the table; None for defaults shown as *(empty)*/*(unset)*."""
    if default is None or default == "":
        return None
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, float):
        return f"{default:g}"
    if isinstance(default, str | int | Path):
        return str(default)
    return None  # secrets and enums are checked by their rows' presence only


def test_documented_defaults_match_the_code() -> None:
    rows = dict(re.findall(r"^\| `(TURNOUT_[A-Z_]+)` \| ([^|]*) \|", README, flags=re.M))
    fields = {f"TURNOUT_{n.upper()}": f for n, f in Settings.model_fields.items() if n != "limits"}
    fields |= {f"TURNOUT_LIMIT_{n.upper()}": f for n, f in Limits.model_fields.items()}
    for variable, field in fields.items():
        expected = _render(field.default)
        shown = rows[variable].strip()
        if expected is None:
            assert shown.startswith("*(") or shown.startswith("`"), (variable, shown)
        else:
            assert shown == f"`{expected}`", (variable, shown, expected)


def test_the_two_commands_exist_and_are_executable() -> None:
    for script in ("scripts/up", "scripts/test"):
        assert f"./{script}" in README
        assert os.access(REPO_ROOT / script, os.X_OK), script


def test_local_links_resolve() -> None:
    for target in re.findall(r"\]\(([^)#:]+)\)", README):
        assert (REPO_ROOT / target).exists(), target
