"""The embedded beat process (`worker -B`) dies with its worker.

Celery forks beat as a child of the worker. When the worker is SIGKILLed (a crash, an OOM kill,
a supervisor's last resort) nothing tells that child, which keeps scheduling the sweeper: a
restarted worker then runs a second scheduler beside it. The kernel's parent-death signal
(PR_SET_PDEATHSIG) ends beat as soon as its worker is gone, however it went.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
from typing import Any

from celery.signals import beat_embedded_init

log = logging.getLogger("turnout.worker")

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send `sig` to this process when its parent dies (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        log.warning("prctl(PR_SET_PDEATHSIG) failed: errno %s", ctypes.get_errno())
        return False
    return True


def _beat_follows_its_worker(**_: Any) -> None:
    parent = multiprocessing.parent_process()
    if not die_with_parent():
        return
    # The worker may have died before the request above took effect: then nobody will signal us.
    if parent is not None and os.getppid() != parent.pid:
        log.warning("embedded beat: its worker (pid %s) is gone; stopping", parent.pid)
        os.kill(os.getpid(), signal.SIGTERM)


class Lifeline:
    """A worker hook (workers/lifecycle.py): armed at the worker's start, before Celery forks beat
    (`-B`), so the beat child asks for the parent-death signal first thing."""

    name = "beat lifeline"

    def start(self, worker: object) -> None:
        beat_embedded_init.connect(_beat_follows_its_worker)

    def stop(self, worker: object) -> None:
        beat_embedded_init.disconnect(_beat_follows_its_worker)


LIFELINE = Lifeline()
