"""A SIGKILLed front worker takes its embedded beat (`-B`) child along: no second scheduler
survives beside the worker that replaces it (workers/lifeline.py)."""

from __future__ import annotations

import os
import signal
import time

import psutil

from tests.api.support import wait_until
from tests.support import services


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_sigkilled_worker_takes_its_beat_child_along() -> None:
    worker = services.WorkerProcess(queues="maintenance", concurrency=1, beat=True).start(wait_ready=True)
    assert worker.proc is not None
    try:
        main = psutil.Process(worker.proc.pid)
        [beat] = wait_until(main.children, timeout=30, what="the embedded beat process")
        # The child exists before it logs: on busy cores its start-up line comes a while later.
        wait_until(lambda: "beat" in worker.log_text().lower(), timeout=30, what="beat's start-up line")
        time.sleep(1.0)  # beat has run its start-up (where it asks for the parent-death signal)
        assert _alive(beat)
        os.kill(main.pid, signal.SIGKILL)  # the worker only, as a crash would: not its process group
        worker.proc.wait(timeout=10)
        wait_until(lambda: not _alive(beat), timeout=10, what="the beat child to die with its worker")
    finally:
        worker.kill()  # the process group: whatever is left
