"""A scripted OpenAI-compatible server on loopback, for tests.

Real HTTP, spoken to by the real `openai` client (in the test process or in a Celery worker
subprocess). Each test dictates what every request gets back: tool calls, prose, JSON
content, HTTP errors (429 with Retry-After, 500, 400), delays (to trigger timeouts) or
garbage. Everything it was sent is recorded. It is not a model and never pretends to be one:
an unscripted request gets a 500 saying so, which fails the test that forgot to script it.

    llm.script(ToolCall("SearchArticles", {"text": "docker"}), Text("done"))
    llm.on_chat(lambda body: ToolCall(...))      # or decide per request
    assert llm.chat_requests[0]["tools"][0]["function"]["name"] == "SearchArticles"
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import math
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route


@dataclass
class ToolCall:
    """The model calls one tool. `arguments` may be a dict or a raw (possibly broken) string."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    prompt_tokens: int = 120
    completion_tokens: int = 20
    content: str | None = None
    finish_reason: str = "tool_calls"


@dataclass
class ToolCalls:
    """Several tool calls in one message (a model ignoring parallel_tool_calls=false)."""

    calls: list[ToolCall]
    prompt_tokens: int = 120
    completion_tokens: int = 40


@dataclass
class Text:
    """The model answers in prose (or JSON text, for json_schema mode)."""

    content: str
    prompt_tokens: int = 100
    completion_tokens: int = 30
    finish_reason: str = "stop"
    chunk_delay_s: float = 0.0  # a streamed request (`"stream": true`) gets a word per chunk, this far apart


@dataclass
class HttpError:
    status: int
    message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Delay:
    seconds: float
    then: Step


@dataclass
class Garbage:
    """A 200 response whose body is not a valid completion."""

    body: str = "<html>definitely not json"
    content_type: str = "application/json"


Reply = ToolCall | ToolCalls | Text | HttpError | Garbage
Step = Reply | Delay
Handler = Callable[[dict[str, Any]], Step | None]  # None: not scripted (a 500 saying so)


def json_decision(tool: str, arguments: dict[str, Any], **kw: Any) -> Text:
    """A json_schema-mode reply: the decision as JSON text content."""
    return Text(json.dumps({"tool": tool, "arguments": arguments}), **kw)


# Function words (the answer check's stop words) that tell a repeated sentence apart without a content
# word the passages lack: the answer tidy drops a sentence said twice (retrieval/answer_tidy.py).
_ASIDES = ("also", "again", "further", "once", "just", "only", "very", "then", "here", "there")


def answer_from_passage(body: dict[str, Any], *, repeat: int = 1, **kw: Any) -> Text:
    """A RAG answer a reader would accept: the first sentence of passage [1] of the request's
    material (retrieval/answer_prompt.py), cited, ``repeat`` times (a longer streamed answer), each
    time after another pair of function words (at most 100)."""
    user = str(body["messages"][-1]["content"])
    material = user.split(">>>\n", 1)[1].split("\n<<<END MATERIAL", 1)[0]
    passage = material.split("\n", 1)[1] if "\n" in material else material  # after "[1] title (language)"
    sentence = re.split(r"(?<=[.!?])\s", passage.strip(), maxsplit=1)[0].rstrip(".")
    said = [f"{sentence} [1]."] + [
        f"{_ASIDES[n // len(_ASIDES)].capitalize()} {_ASIDES[n % len(_ASIDES)]}, {sentence} [1]." for n in range(1, repeat)]
    return Text(" ".join(said), **kw)


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    at: float


class ScriptedLLM:
    def __init__(self, embedding_dim: int = 64) -> None:
        self._lock = threading.Lock()
        self._script: deque[Step] = deque()
        self._handler: Handler | None = None
        self._fail_all: str | None = None
        self.requests: list[Recorded] = []
        self.embedding_dim = embedding_dim
        self._ids = itertools.count(1)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # ---- test-facing API ----
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *steps: Step) -> None:
        """Queue replies for the next chat requests, in order (appends)."""
        with self._lock:
            self._script.extend(steps)

    def on_chat(self, handler: Handler | None) -> None:
        """Decide each chat reply from the request body (used once the queue is empty)."""
        with self._lock:
            self._handler = handler

    def fail_every_call(self, reason: str = "this test allows no LLM call") -> None:
        with self._lock:
            self._fail_all = reason

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self._handler = None
            self._fail_all = None
            self.requests.clear()

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith("/embeddings")]

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    # ---- lifecycle ----
    def start(self, port: int = 0) -> ScriptedLLM:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        self.port = sock.getsockname()[1]
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/health", self._health, methods=["GET"]),  # as llama-server has
            ]
        )
        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_keep_alive=30)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("scripted LLM server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    # ---- HTTP ----
    async def _record(self, request: Request) -> dict[str, Any]:
        raw = await request.body()
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_unparseable": raw.decode(errors="replace")}
        with self._lock:
            self.requests.append(Recorded(request.url.path, body, dict(request.headers), time.time()))
        return body

    def _next_step(self, body: dict[str, Any]) -> Step | None:
        with self._lock:
            if self._fail_all is not None:
                return HttpError(500, self._fail_all)
            if self._script:
                return self._script.popleft()
            handler = self._handler
        return handler(body) if handler is not None else None

    async def _chat(self, request: Request) -> Response:
        body = await self._record(request)
        step = self._next_step(body)
        if step is None:
            return JSONResponse({"error": {"message": "scripted LLM: no reply scripted for this request"}}, 500)
        while isinstance(step, Delay):
            await asyncio.sleep(step.seconds)
            step = step.then
        if body.get("stream") and isinstance(step, Text):
            return self._stream(step, body)
        return self._render(step, body.get("model", "scripted"))

    def _stream(self, step: Text, body: dict[str, Any]) -> Response:
        """The OpenAI streaming shape: `data:` chunks of the content (a word and its trailing
        space each), the usage chunk when asked for (`stream_options.include_usage`), `[DONE]`."""
        model = body.get("model", "scripted")
        completion_id = f"chatcmpl-{next(self._ids)}"
        pieces = re.findall(r"\S+\s*|\s+", step.content)

        def chunk(choices: list[dict[str, Any]], usage: dict[str, int] | None = None) -> str:
            payload = {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()),
                       "model": model, "choices": choices, "usage": usage}
            return f"data: {json.dumps(payload)}\n\n"

        async def events() -> Any:
            yield chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
            for piece in pieces:
                if step.chunk_delay_s:
                    await asyncio.sleep(step.chunk_delay_s)
                yield chunk([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
            yield chunk([{"index": 0, "delta": {}, "finish_reason": step.finish_reason}])
            if (body.get("stream_options") or {}).get("include_usage"):
                yield chunk([], {"prompt_tokens": step.prompt_tokens, "completion_tokens": step.completion_tokens,
                                 "total_tokens": step.prompt_tokens + step.completion_tokens})
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    def _render(self, step: Reply, model: str) -> Response:
        if isinstance(step, HttpError):
            return JSONResponse(
                {"error": {"message": step.message, "type": "scripted", "code": step.status}},
                status_code=step.status,
                headers=step.headers,
            )
        if isinstance(step, Garbage):
            return PlainTextResponse(step.body, media_type=step.content_type)
        if isinstance(step, Text):
            message: dict[str, Any] = {"role": "assistant", "content": step.content}
            return self._completion(model, message, step.finish_reason, step.prompt_tokens, step.completion_tokens)
        calls = step.calls if isinstance(step, ToolCalls) else [step]
        message = {
            "role": "assistant",
            "content": calls[0].content,
            "tool_calls": [
                {
                    "id": f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments),
                    },
                }
                for c in calls
            ],
        }
        prompt = step.prompt_tokens
        completion = step.completion_tokens
        finish = calls[0].finish_reason if isinstance(step, ToolCall) else "tool_calls"
        return self._completion(model, message, finish, prompt, completion)

    def _completion(
        self, model: str, message: dict[str, Any], finish: str, prompt: int, completion: int
    ) -> JSONResponse:
        return JSONResponse(
            {
                "id": f"chatcmpl-{next(self._ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
            }
        )

    async def _embeddings(self, request: Request) -> Response:
        body = await self._record(request)
        with self._lock:
            if self._fail_all is not None:
                return JSONResponse({"error": {"message": self._fail_all}}, 500)
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        data = [
            {"object": "embedding", "index": i, "embedding": hashed_embedding(t, self.embedding_dim)}
            for i, t in enumerate(texts)
        ]
        tokens = sum(len(t.split()) for t in texts)
        return JSONResponse(
            {"object": "list", "data": data, "model": body.get("model", "scripted"),
             "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
        )

    async def _health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def _models(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse({"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "tests"}]})


_WORD = re.compile(r"\w+", re.U)


def hashed_embedding(text: str, dim: int) -> list[float]:
    """Deterministic bag-of-words vector: same words, same direction. For tests of the
    OpenAI-compatible embeddings path only; it carries no meaning across languages."""
    vec = [0.0] * dim
    for word in _WORD.findall(text.lower()):
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        vec[h % dim] += 1.0 if (h >> 32) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]
