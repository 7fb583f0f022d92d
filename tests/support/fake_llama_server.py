"""A stand-in for `llama-server` in the `--local-llm` wiring test (TURNOUT_LOCAL_LLM_SERVER_COMMAND).

It takes llama-server's command line, refuses a missing model file like llama-server does,
and serves the scripted OpenAI-compatible server on the given port. It is not a model: every
routing request gets the same decision (SearchArticles "Kubernetes"), every other chat request
a fixed sentence. Each request body is appended to $FAKE_LLAMA_LOG (JSON lines) so the test
can see what the stack sent.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from tests.support.llm_server import ScriptedLLM, Step, Text, json_decision


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-m", "--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args, _ = parser.parse_known_args()
    if not Path(args.model).is_file():
        print(f"error: failed to load model '{args.model}'", file=sys.stderr)
        sys.exit(1)
    log = os.environ.get("FAKE_LLAMA_LOG")

    def reply(body: dict[str, Any]) -> Step:
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(body, ensure_ascii=False) + "\n")
        if "response_format" in body:
            return json_decision("SearchArticles", {"text": "Kubernetes"})
        return Text("A scripted answer.")

    server = ScriptedLLM()
    server.on_chat(reply)
    server.start(port=args.port)
    print(f"fake llama-server listening on {args.host}:{args.port}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop()


if __name__ == "__main__":
    main()
