"""The supervisor of `turnout up` on real child processes: restart with bounded back-off, the others
untouched, a crash loop named and given up on. (The whole stack under SIGKILL is drilled in
tests/proof/test_fault_supervisor.py.)"""

from __future__ import annotations

import io
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from turnout.embedded import EmbeddedError
from turnout.embedded.processes import Child
from turnout.embedded.supervisor import (
    MAX_CRASHES,
    CrashLoop,
    Restart,
    Supervised,
    Supervisor,
    backoff_s,
    child_service,
)


def _child(tmp_path: Path, name: str, code: str) -> Child:
    return Child(name, [sys.executable, "-c", code], log_path=tmp_path / f"{name}.log", env=dict(os.environ))


@pytest.fixture
def children(tmp_path: Path) -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    for child in started:
        child.stop(timeout_s=5)


def _tick_until(supervisor: Supervisor, done: object, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        supervisor.tick()
        if callable(done) and done():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached")


def test_backoff_grows_and_is_bounded() -> None:
    waits = [backoff_s(n) for n in range(1, 10)]
    assert waits[0] == 0.5 and waits == sorted(waits)
    assert max(waits) == 8.0


def test_a_killed_child_is_restarted_and_the_others_keep_running(tmp_path: Path, children: list[Child]) -> None:
    victim = _child(tmp_path, "victim", "import time; time.sleep(60)").start()
    bystander = _child(tmp_path, "bystander", "import time; time.sleep(60)").start()
    children += [victim, bystander]
    restarts: list[Restart] = []
    err = io.StringIO()
    supervisor = Supervisor([child_service(victim), child_service(bystander)], on_restart=restarts.append, err=err)
    supervisor.tick()
    assert not restarts  # nothing died: nothing restarted

    first_pid, bystander_pid = victim.pid, bystander.pid
    os.kill(first_pid or 0, signal.SIGKILL)
    _tick_until(supervisor, lambda: bool(restarts))

    assert victim.pid != first_pid and victim.exit_code() is None  # running again
    assert bystander.pid == bystander_pid and bystander.exit_code() is None
    [event] = restarts
    assert event.child == "victim" and event.reason == "killed by SIGKILL"
    assert 0.4 <= event.down_s < 5.0  # the first back-off step is 0.5 s
    assert "victim stopped (killed by SIGKILL); restarting in 0.5s" in err.getvalue()
    assert "victim restarted" in err.getvalue()


def test_a_crash_loop_names_the_child_and_why(tmp_path: Path, children: list[Child]) -> None:
    crasher = _child(tmp_path, "crasher", "import sys; print('bad config: no such thing'); sys.exit(3)").start()
    children.append(crasher)
    restarts: list[Restart] = []
    # A short back-off keeps the test quick; the count and the message are what is checked.
    supervisor = Supervisor([child_service(crasher)], on_restart=restarts.append, err=io.StringIO())
    supervisor_clock = [0.0]

    def clock() -> float:
        supervisor_clock[0] += 10.0  # every tick 10 s later: each back-off has passed
        return supervisor_clock[0]

    supervisor.clock = clock
    supervisor.window_s = 1000.0
    with pytest.raises(CrashLoop) as loop:
        for _ in range(200):
            supervisor.tick()
            time.sleep(0.05)
    message = str(loop.value)
    assert message.startswith(f"crasher crashed {MAX_CRASHES + 1} times within 1000s (last: exited with code 3)")
    assert "bad config: no such thing" in message  # its log tail says why
    assert len(restarts) == MAX_CRASHES


def test_a_restart_that_fails_counts_as_a_crash(tmp_path: Path) -> None:
    """E.g. PostgreSQL that will not start again: each failed start is one more crash, then it gives up."""
    attempts: list[float] = []

    def restart() -> None:
        attempts.append(now[0])
        raise EmbeddedError("embedded PostgreSQL did not start again: pg_ctl: could not start server\nlog…")

    now = [0.0]
    service = Supervised("postgres", stopped=lambda: "the postmaster (pid 1) is gone", restart=restart)
    supervisor = Supervisor([service], err=io.StringIO(), clock=lambda: now[0])
    with pytest.raises(CrashLoop) as loop:
        for _ in range(100):
            supervisor.tick()
            now[0] += 1.0
    assert len(attempts) == MAX_CRASHES  # the first crash plus MAX_CRASHES failed starts
    assert "postgres crashed 6 times" in str(loop.value)
    assert "(last: restart failed: embedded PostgreSQL did not start again: pg_ctl: could not start server)" \
        in str(loop.value)
    # The back-off grew between the attempts (0.5, 1, 2, 4, 8 s: ticks are 1 s apart).
    gaps = [b - a for a, b in zip(attempts, attempts[1:], strict=False)]
    assert gaps == sorted(gaps) and gaps[-1] >= 4.0, gaps
