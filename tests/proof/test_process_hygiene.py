"""Tests leave no process behind: a pytest run stopped by SIGTERM (a CI timeout) or SIGKILL mid-test, where
no fixture finalizer runs, still takes every process it started along - a private redis-server,
a Celery worker started in its own session, and that worker's beat child (tests/support/reaper.py).
Also when pytest runs its tests in worker processes (pytest-xdist, as ./scripts/test does): killing the
controlling process takes its workers along, and each worker's own reaper takes what it started."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.api.support import wait_until
from tests.support import services

pytestmark = pytest.mark.slow

DRILL_MARK = "HYGIENE_MARK"


def _descendants(mark: str) -> list[psutil.Process]:
    """Processes carrying the drill's own mark (every descendant of the child pytest inherits it)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(DRILL_MARK) == mark and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _describe(pid: int) -> str:
    try:
        proc = psutil.Process(pid)
        return f"{pid} {proc.status()} {' '.join(proc.cmdline())[:200]} (parent {proc.ppid()})"
    except psutil.Error:
        return f"{pid} gone"


@pytest.mark.parametrize(("sig", "processes"), [(signal.SIGTERM, 0), (signal.SIGKILL, 0), (signal.SIGKILL, 2)],
                         ids=["SIGTERM", "SIGKILL", "SIGKILL-two-processes"])
def test_pytest_killed_mid_run_leaves_no_process_behind(tmp_path: Path, sig: signal.Signals, processes: int) -> None:
    mark = secrets.token_hex(6)
    ready = tmp_path / "ready.json"
    # Its temporary files (each pytest process's data directory) go where this test's go: no finalizer
    # of the killed run removes them.
    env = {**os.environ, DRILL_MARK: mark, "HYGIENE_READY": str(ready), "TMPDIR": str(tmp_path)}
    child = subprocess.Popen(
        [sys.executable, "-m", "pytest", "tests/support/hygiene_child.py", "-q", "-p", "no:cacheprovider",
         "-n", str(processes)],
        cwd=services.REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    started: dict[str, object] = {}
    try:
        deadline = time.monotonic() + 180
        while not ready.exists():
            assert child.poll() is None, child.communicate()[0].decode(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the child pytest did not start its processes"
            time.sleep(0.2)
        started = json.loads(ready.read_text())
        pids = [int(p) for p in started["pids"]]  # type: ignore[attr-defined]
        assert len(pids) >= 3, started  # redis-server, the worker and its beat child
        assert all(psutil.pid_exists(p) for p in pids)
        # The child pytest (and its test process), the worker, its beat (redis-server hides its env).
        assert len(_descendants(mark)) >= 3 + (processes > 0)

        child.send_signal(sig)
        child.wait(timeout=30)
        assert child.returncode == -sig  # killed outright: no finalizer ran
        wait_until(lambda: not _descendants(mark), timeout=30,
                   what="every process of the killed run to be gone")
        survivors = [_describe(p) for p in pids if _alive(p)]
        assert not survivors, survivors
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
        # Whatever survived a failure here must not outlive this test.
        known = [psutil.Process(p) for p in started.get("pids", []) if _alive(p)]  # type: ignore[attr-defined]
        for proc in [*_descendants(mark), *known]:
            try:
                proc.kill()
            except psutil.Error:
                pass
        if started:  # what the killed run could not clean up itself
            services.drop_database(str(started["database"]))
            services.delete_redis_prefix(str(started["prefix"]))
