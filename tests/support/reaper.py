"""A reaper keyed to the test session: every process a test run starts dies with the run, also
when pytest is stopped by SIGTERM (a CI timeout) or SIGKILL, where no fixture finalizer runs.

`start(run_id)` (tests/conftest.py, at import, before anything is started) marks the session's
environment with `MARK=run_id` - every descendant inherits it: workers in their own sessions,
redis-server, `turnout up` and its children - and spawns this module as a watchdog in a session
of its own. The watchdog blocks on a pipe from pytest; when pytest exits, however it exits, the
pipe closes and the watchdog ends every process carrying the mark (SIGTERM, then SIGKILL after
a grace period), their descendants, and the pids sent with `track(pid)` (a server whose
environment cannot be read - redis-server overwrites it with its process title - or is not
inherited, e.g. a PostgreSQL started through runuser/pg_ctl, once its parent is gone). Processes of other runs carry
another mark and are never touched.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import IO

import psutil

MARK = "TESTRUN_TURNOUT"  # not TURNOUT_*: tests strip those to get an unconfigured environment
GRACE_S = 3.0

_pipe: IO[str] | None = None


def start(run_id: str) -> None:
    """Mark this process's environment with the run and start its watchdog (once per process)."""
    global _pipe
    if _pipe is not None:
        return
    os.environ[MARK] = run_id
    watchdog = subprocess.Popen(
        [sys.executable, "-m", "tests.support.reaper", run_id, str(os.getpid())], stdin=subprocess.PIPE, text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        start_new_session=True,  # a signal to pytest's process group must not take the watchdog along
    )
    _pipe = watchdog.stdin


def track(pid: int) -> None:
    """Also end `pid` with the run (for a process that does not inherit the environment)."""
    if _pipe is not None:
        try:
            _pipe.write(f"{pid}\n")
            _pipe.flush()
        except OSError:
            pass


def marked(run_id: str, *, exclude: frozenset[int] = frozenset()) -> list[psutil.Process]:
    """Live processes whose environment carries `MARK=run_id`."""
    found = []
    for proc in psutil.process_iter():
        if proc.pid in exclude:
            continue
        try:
            if proc.environ().get(MARK) == run_id and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue  # gone, or not ours to read
    return found


def _end(processes: list[psutil.Process]) -> None:
    for proc in processes:
        try:
            proc.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(processes, timeout=GRACE_S)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=GRACE_S)


def _tracked_alive(tracked: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in tracked if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def _children(roots: list[psutil.Process]) -> list[psutil.Process]:
    """Their descendants: a server that rewrites its process title (redis-server) loses its
    readable environment, but not its parent."""
    found = []
    for proc in roots:
        try:
            found.extend(proc.children(recursive=True))
        except psutil.Error:
            continue
    return found


def _watch(run_id: str, pytest_pid: int) -> None:
    tracked: list[psutil.Process] = []
    for line in sys.stdin:  # until pytest exits (EOF)
        try:
            tracked.append(psutil.Process(int(line)))  # remembers the start time: no pid-reuse mistakes
        except (ValueError, psutil.Error):
            continue
    for _ in range(5):  # a process may start another while it is being ended
        # Not pytest itself: its pipe closes while it finalizes, and its exit status is its own.
        roots = marked(run_id, exclude=frozenset({os.getpid(), pytest_pid}))
        victims = {*roots, *_tracked_alive(tracked), *_children(roots)}

        if not victims:
            return
        _end(list(victims))
        time.sleep(0.2)


if __name__ == "__main__":
    _watch(sys.argv[1], int(sys.argv[2]))
