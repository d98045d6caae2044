"""Run a fake LLM server as its own process, for kernels and servers to talk to.

    python -m agi_jupyter.testing.fake_llm --port 0

prints ``FAKE_LLM_URL=http://127.0.0.1:PORT`` (flushed) and serves until SIGTERM or SIGINT.
Script it over HTTP through the ``/_fake/*`` control endpoints (see ``FakeLLMClient``).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from agi_jupyter.testing.server import FakeLLMServer


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m agi_jupyter.testing.fake_llm",
        description="A scripted fake OpenAI/Anthropic server (Chat Completions, Responses, "
        "Messages) on a local port.",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: %(default)s)"
    )
    parser.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (default)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with FakeLLMServer(host=args.host, port=args.port) as server:
        print(f"FAKE_LLM_URL={server.url}", flush=True)
        while not stop.wait(0.2):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
