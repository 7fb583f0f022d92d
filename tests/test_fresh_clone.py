"""What a new user meets on a fresh clone: the suite says what it needs, and the docs give the
number of workers `turnout up` really runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.services import REPO_ROOT
from turnout.embedded import stack

NUMBERS = {2: "two", 3: "three", 4: "four"}


def test_without_the_corpus_the_suite_stops_at_once_naming_the_setting(tmp_path: Path) -> None:
    env = {**os.environ, "TURNOUT_TEST_CORPUS": str(tmp_path / "missing" / "articles.jsonl")}
    done = subprocess.run([sys.executable, "-m", "pytest", "tests/test_readme.py", "-q", "-p", "no:cacheprovider"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 4, output  # a usage error: nothing ran
    assert output.count("TURNOUT_TEST_CORPUS") == 1 and str(tmp_path / "missing") in output, output
    assert len([line for line in output.splitlines() if line.startswith("ERROR")]) == 1, output


def test_the_docs_say_how_many_workers_run() -> None:
    groups = [stack.ROUTER_QUEUES, stack.FRONT_QUEUES, stack.VECTOR_QUEUES]
    said = f"{NUMBERS[len(groups)]} workers"
    help_text = subprocess.run([sys.executable, "-m", "turnout", "up", "--help"], cwd=REPO_ROOT, capture_output=True,
                               text=True, timeout=60, env={**os.environ, "COLUMNS": "200"}).stdout
    for where, text in [("turnout up --help", help_text), ("scripts/up", (REPO_ROOT / "scripts/up").read_text()),
                        ("turnout/embedded/stack.py", stack.__doc__ or "")]:
        assert said in " ".join(text.split()), f"{where} must say {said}"
        for wrong in set(NUMBERS.values()) - {NUMBERS[len(groups)]}:
            assert f"{wrong} workers" not in text, f"{where} says {wrong} workers"
    embedded = (REPO_ROOT / "docs/embedded.md").read_text()
    for queues in groups:
        assert f"--queues {','.join(q.value for q in queues)}" in embedded, queues
    assert "both workers" not in embedded and "two workers" not in embedded
