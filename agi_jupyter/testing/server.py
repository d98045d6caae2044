"""``FakeLLMServer``: a scripted OpenAI/Anthropic-compatible server on a real local port."""

from __future__ import annotations

import threading
from types import TracebackType

from agi_jupyter.testing.control import reset
from agi_jupyter.testing.handler import FakeHTTPServer
from agi_jupyter.testing.script import JSON, RecordedRequest, Turn
from agi_jupyter.testing.state import FakeState, Rule


class FakeLLMServer:
    """Speaks OpenAI Chat Completions, OpenAI Responses and Anthropic Messages over HTTP.

    ::

        with FakeLLMServer() as server:
            server.enqueue(Turn(text="hello"), Turn(fault=Fault(status=429)))
            client = openai.OpenAI(base_url=server.openai_base_url, api_key="x")

    Every model request of any protocol takes the next queued turn; with none queued,
    ``default_rule(protocol, body)`` answers (echo, ``/tool`` lines, tool-result summary).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self._state = FakeState()
        self._httpd: FakeHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeLLMServer:
        if self._httpd is not None:
            return self
        httpd = FakeHTTPServer((self.host, self.port), self._state)
        self.port = int(httpd.server_address[1])
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-llm-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def enqueue(self, *turns: Turn) -> None:
        """Queue turns; each model request (any protocol) takes the first one."""
        self._state.enqueue(*turns)

    @property
    def pending_turns(self) -> int:
        return self._state.pending()

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the requests received so far, oldest first."""
        return self._state.requests

    @property
    def closed_streams(self) -> list[tuple[str, float]]:
        """The streams whose client closed the connection before their end, oldest first:
        ``(path, time.monotonic() when the server saw it)``."""
        return self._state.closed

    def wait_closed(self, count: int = 1, timeout: float = 10.0) -> bool:
        """Wait until ``count`` streams were closed by their client; False if not in time."""
        return self._state.wait_closed(count, timeout)

    def clear(self) -> None:
        """Empty the turn queue, the request log and the stored responses."""
        self._state.clear()

    def reset(self) -> None:
        """``clear()`` and restore the default rule."""
        reset(self._state)

    def serve_props(self, props: JSON | None) -> None:
        """Answer ``GET /props`` with ``props``, as llama.cpp's ``llama-server`` does
        (``{"chat_template_caps": {"supports_tools": false}, "default_generation_settings":
        {"n_ctx": 4096}}``); None: 404, as a server without it."""
        self._state.props = props

    def serve_show(self, show: JSON | None) -> None:
        """Answer Ollama's ``POST /api/show`` with ``show`` (``{"capabilities": ["completion"],
        "model_info": {"llama.context_length": 4096}}``); None: 404."""
        self._state.show = show

    def complete_background(self, response_id: str) -> None:
        """Let a background response finish now (``KeyError`` if the id is unknown)."""
        self._state.store.complete(response_id)

    def release(self) -> None:
        """Let every stream held at its ``Fault.hold_after`` (now or later) go on."""
        self._state.gate.set()

    @property
    def default_rule(self) -> Rule:
        return self._state.default_rule

    @default_rule.setter
    def default_rule(self, rule: Rule) -> None:
        self._state.default_rule = rule

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<FakeLLMServer {self.url} {state}>"
