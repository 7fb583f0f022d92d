"""Child processes of `turnout up`.

Each child runs in its own session (process group), so Ctrl-C in the terminal reaches only
`turnout up`, which then stops the children in order. Output goes to a log file per child.
Stopping is TERM to the leader, a bounded wait, then KILL to the whole group, so nothing
outlives the stack. On Linux a child also gets SIGTERM if `turnout up` itself dies abruptly.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import psutil

from turnout.embedded import EmbeddedError

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def become_subreaper() -> None:
    """Adopt orphaned descendants (the postmaster, once `pg_ctl` exits) so they are reaped here
    rather than left as zombies under an init that may not reap."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _child_setup(parent_pid: int) -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)  # blocked by the parent around the fork
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


class Child:
    """One long-running child process (API, worker, Redis) with its log file."""

    def __init__(self, name: str, argv: Sequence[str], *, log_path: Path, env: Mapping[str, str]) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = dict(env)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Child:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        parent = os.getpid()
        with self.log_path.open("ab") as log:
            log.write(f"\n==== {self.name} starting at {datetime.now(UTC).isoformat()} ====\n".encode())
            log.flush()
            # A stop signal must not land between the fork and `self.proc` being set (an untracked
            # child): hold it until the child is recorded; the child unblocks it before exec.
            previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
            try:
                self.proc = subprocess.Popen(
                    self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=lambda: _child_setup(parent),  # runs before exec; we spawn from one thread
                )
            except OSError as exc:
                raise EmbeddedError(f"cannot start {self.name} ({self.argv[0]}): {exc}") from exc
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        return self

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def exit_code(self) -> int | None:
        """None while running."""
        return None if self.proc is None else self.proc.poll()

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, sig)

    def wait(self, timeout_s: float) -> bool:
        """True when the process has exited (and been reaped) within the timeout."""
        if self.proc is None:
            return True
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def kill_group(self) -> None:
        """SIGKILL everything left in the child's process group (helpers it spawned)."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def stop(self, timeout_s: float) -> None:
        """TERM, wait, then KILL the group; always returns with the group gone."""
        if self.proc is None:
            return
        self.signal(signal.SIGTERM)
        if not self.wait(timeout_s):
            print(f"  {self.name} did not stop within {timeout_s:.0f}s; killing it", file=sys.stderr)
        self.kill_group()  # the leader is gone or stuck; no member of its group may stay
        self.wait(10)

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def wait_gone(pid: int, timeout_s: float) -> bool:
    """Wait until a process (not necessarily our child) has exited; reap it if it is ours."""
    try:
        proc = psutil.Process(pid)
        proc.wait(timeout=timeout_s)
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        return False
    return True


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until(check: Callable[[], bool], *, timeout_s: float, interval_s: float = 0.25) -> bool:
    """Poll ``check()`` until it is true or the timeout passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval_s)
    return False
