"""HTTP handling: routing, recording, faults, JSON answers and chunked SSE streams.

Streams use HTTP/1.1 chunked encoding, so a dropped stream (``Fault.drop_after``) is a socket
closed before the terminating chunk, which clients see as an incomplete body, while a
truncated one (``Fault.truncate``) ends cleanly without its finishing events.
"""

from __future__ import annotations

import contextlib
import json
import re
import select
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, cast
from urllib.parse import parse_qs, urlsplit

from agi_jupyter.testing import wire_anthropic, wire_chat, wire_fim, wire_responses
from agi_jupyter.testing.background import NotCancellableError
from agi_jupyter.testing.control import handle_control, models_list
from agi_jupyter.testing.plan import Plan, SSEEvent
from agi_jupyter.testing.rules import input_tokens
from agi_jupyter.testing.script import JSON, Fault, ProtocolName, RecordedRequest, Turn
from agi_jupyter.testing.state import FakeState
from agi_jupyter.testing.wire_errors import error_body

# The longest a ``Fault.hold_after`` stream waits for ``release()``: a test that forgets to
# release still ends.
HOLD_LIMIT = 120.0


class Wire(Protocol):
    """What each ``wire_*`` module provides."""

    def stream_events(self, plan: Plan) -> list[SSEEvent]: ...

    def final_body(self, plan: Plan, *, truncated: bool = False) -> JSON: ...


class _Fim:
    """A fill-in-the-middle wire of ``wire_fim`` as a ``Wire``."""

    def __init__(self, events: Callable[[Plan], list[SSEEvent]], body: Callable[..., JSON]) -> None:
        self.stream_events = events
        self.final_body = body


WIRES: dict[str, Wire] = {
    "chat": wire_chat,
    "responses": wire_responses,
    "anthropic": wire_anthropic,
    "infill": _Fim(wire_fim.infill_events, wire_fim.infill_body),
    "ollama": _Fim(wire_fim.ollama_events, wire_fim.ollama_body),
}
NDJSON_WIRES = frozenset({"ollama"})  # streamed one JSON object a line, not as SSE
STREAMS_BY_DEFAULT = frozenset({"ollama"})  # ``stream`` absent means true
ROUTES: list[tuple[str, re.Pattern[str], ProtocolName, str]] = [
    ("POST", re.compile(r".*/chat/completions"), "chat", "model"),
    ("POST", re.compile(r".*/responses"), "responses", "model"),
    ("GET", re.compile(r".*/responses/(?P<id>[^/]+)"), "responses", "retrieve"),
    ("POST", re.compile(r".*/responses/(?P<id>[^/]+)/cancel"), "responses", "cancel"),
    ("POST", re.compile(r".*/messages/count_tokens"), "anthropic", "count_tokens"),
    ("POST", re.compile(r".*/messages"), "anthropic", "model"),
    ("GET", re.compile(r".*/models"), "other", "models"),
    ("GET", re.compile(r"/props"), "other", "props"),
    ("POST", re.compile(r"/api/show"), "other", "show"),
    ("POST", re.compile(r"/infill"), "infill", "model"),
    ("POST", re.compile(r"/api/generate"), "ollama", "model"),
]


class FakeHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server holding the fake's state and its open connections."""

    daemon_threads = True
    block_on_close = False
    # socketserver's default listen backlog (5) drops the SYNs of a burst of connections (a
    # tick starting many runs, several servers at once), and each dropped one waits ~1 s.
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], state: FakeState) -> None:
        self.state = state
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, FakeHandler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that reset or time out their connection are normal; other errors print."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)

    def close_connections(self) -> None:
        """Shut every open client connection down, so stalled handlers end at once."""
        with self.connections_lock:
            open_sockets = list(self.connections)
        for sock in open_sockets:
            _shutdown(sock)


class FakeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "agi-jupyter-fake-llm/0.1"
    timeout = 60

    @property
    def fake(self) -> FakeHTTPServer:
        return cast(FakeHTTPServer, self.server)

    @property
    def state(self) -> FakeState:
        return self.fake.state

    def setup(self) -> None:
        super().setup()
        # Each SSE event is its own send(): without TCP_NODELAY, Nagle's algorithm meets the
        # client's delayed ACK and every short streamed answer waits ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.fake.connections_lock:
            self.fake.connections.add(self.connection)

    def finish(self) -> None:
        with self.fake.connections_lock:
            self.fake.connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read ``server.requests`` instead."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        path = urlsplit(self.path).path
        try:
            raw = self._read_body()
            body = json.loads(raw) if raw.strip() else None
        except ValueError:
            if not path.startswith("/_fake/"):
                self._record(method, path, None, "other")
            message = "request body is not valid JSON"
            self._send_json(400, error_body(self._error_style, 400, message))
            return
        try:
            self._route(method, path, body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _route(self, method: str, path: str, body: Any) -> None:
        if path.startswith("/_fake/"):
            status, payload = handle_control(self.state, method, path, body)
            self._send_json(status, payload)
            return
        for route_method, pattern, protocol, action in ROUTES:
            match = pattern.fullmatch(path)
            if match and route_method == method:
                self._record(method, path, body, protocol)
                self._act(action, protocol, body, match.groupdict().get("id"))
                return
        self._record(method, path, body, "other")
        self._send_json(404, error_body(self._error_style, 404, f"(fake) no route {method} {path}"))

    @property
    def _error_style(self) -> str:
        return "anthropic" if "anthropic-version" in self.headers else "chat"

    def _act(self, action: str, protocol: ProtocolName, body: Any, response_id: str | None) -> None:
        if action == "models":
            self._send_json(200, models_list("anthropic-version" in self.headers))
        elif action in ("props", "show"):
            said = self.state.props if action == "props" else self.state.show
            if said is None:
                self._send_json(404, error_body("chat", 404, f"(fake) no {action}"))
            else:
                self._send_json(200, said)
        elif not isinstance(body, dict) and action in ("model", "count_tokens"):
            self._send_json(400, error_body(protocol, 400, "request body must be a JSON object"))
        elif action == "count_tokens":
            self._send_json(200, {"input_tokens": input_tokens("anthropic", body)})
        elif action == "model":
            self._model_request(protocol, body)
        else:
            self._stored_response(action, str(response_id))

    def _model_request(self, protocol: str, body: JSON) -> None:
        turn = self.state.next_turn(protocol, body)
        fault = turn.fault or Fault()
        if fault.delay_before_headers > 0:
            time.sleep(fault.delay_before_headers)
        if fault.status is not None:
            self._send_fault(protocol, fault)
            return
        plan = self.state.plan(turn, protocol, body)
        wire = WIRES[protocol]
        if protocol == "responses" and body.get("background") and not body.get("stream"):
            self._send_json(200, self._start_background(plan, turn), fault.headers)
            return
        streamed = body.get("stream", protocol in STREAMS_BY_DEFAULT)
        events = wire.stream_events(plan) if streamed else []
        if protocol == "responses":  # a background stream can be resumed: its events are kept
            kept = events if streamed and body.get("background") else None
            self.state.store.add_done(wire.final_body(plan), kept)
        if streamed:
            self._send_sse(events, fault, ndjson=protocol in NDJSON_WIRES)
        else:
            final = wire.final_body(plan, truncated=fault.truncate)
            self._send_json(200, final, fault.headers, drop=fault.drop_after is not None)

    def _start_background(self, plan: Plan, turn: Turn) -> JSON:
        pending = wire_responses.response_json(plan, "queued", [])
        if turn.fault is None:
            final = wire_responses.response_json(plan, "completed")
        else:
            error = {"code": "server_error", "message": _fault_message(turn.fault)}
            final = wire_responses.response_json(plan, "failed", [], error=error)
        return self.state.store.add_background(pending, final, turn.background_delay)

    def _stored_response(self, action: str, response_id: str) -> None:
        query = parse_qs(urlsplit(self.path).query)
        if action == "retrieve" and query.get("stream") == ["true"]:
            self._resume_stream(response_id, query.get("starting_after", ["-1"])[0])
            return
        try:
            if action == "cancel":
                payload = self.state.store.cancel(response_id)
            else:
                payload = self.state.store.get(response_id)
        except KeyError:
            message = f"Response with id '{response_id}' not found."
            self._send_json(404, error_body("responses", 404, message))
        except NotCancellableError as exc:
            self._send_json(400, error_body("responses", 400, str(exc)))
        else:
            self._send_json(200, payload)

    def _resume_stream(self, response_id: str, starting_after: str) -> None:
        """``GET /responses/{id}?stream=true&starting_after=N``: a background response's
        events after sequence number ``N``."""
        try:
            events = self.state.store.events_after(response_id, int(starting_after))
        except KeyError:
            message = f"Response with id '{response_id}' not found."
            self._send_json(404, error_body("responses", 404, message))
            return
        except ValueError:
            self._send_json(400, error_body("responses", 400, "starting_after: not an integer"))
            return
        if events is None:
            message = (
                "This response cannot be streamed because it was not created with background=true."
            )
            self._send_json(400, error_body("responses", 400, message))
            return
        self._send_sse(events, Fault())

    def _send_fault(self, protocol: str, fault: Fault) -> None:
        status = int(fault.status or 500)
        headers = dict(fault.headers)
        if isinstance(fault.body, str):
            headers.setdefault("Content-Type", "text/plain; charset=utf-8")
            self._send_bytes(status, fault.body.encode(), headers)
            return
        body = fault.body
        if body is None:
            body = error_body(protocol, status, None, _new_request_id())
        self._send_json(status, body, headers)

    def _record(self, method: str, path: str, body: Any, protocol: ProtocolName) -> None:
        headers = {key.lower(): value for key, value in self.headers.items()}
        self.state.record(
            RecordedRequest(method=method, path=path, headers=headers, body=body, protocol=protocol)
        )

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._read_chunked()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _read_chunked(self) -> bytes:
        data = bytearray()
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return bytes(data)
            data += self.rfile.read(size)
            self.rfile.readline()

    def _send_json(
        self, status: int, payload: Any, headers: dict[str, str] | None = None, drop: bool = False
    ) -> None:
        data = json.dumps(payload).encode()
        all_headers = {"Content-Type": "application/json"} | (headers or {})
        self._send_bytes(status, data, all_headers, drop=drop)

    def _send_bytes(
        self, status: int, data: bytes, headers: dict[str, str], drop: bool = False
    ) -> None:
        self.send_response(status)
        self._common_headers(headers)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if drop:
            self.wfile.write(data[: len(data) // 2])
            self._abort()
            return
        self.wfile.write(data)

    def _send_sse(self, events: list[SSEEvent], fault: Fault, *, ndjson: bool = False) -> None:
        """The events as SSE (``ndjson``: each one's data on a line of its own). A client that
        closes its connection while the stream waits (a stall, a hold) or is written to is
        recorded (``FakeState.closed``) and the stream ends there."""
        self.send_response(200)
        kind = "application/x-ndjson" if ndjson else "text/event-stream; charset=utf-8"
        self._common_headers({"Content-Type": kind} | fault.headers)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        to_send = [e for e in events if not (fault.truncate and e.final)]
        for n, event in enumerate(to_send):
            if fault.drop_after is not None and n >= fault.drop_after:
                break
            if n and not self._wait(fault, n):
                self._client_closed()
                return
            data = (event.data + "\n").encode() if ndjson else event.encode()
            try:
                self._write_chunk(data)
            except (BrokenPipeError, ConnectionResetError):
                self._client_closed()
                return
        if fault.drop_after is not None:
            self._abort()
            return
        self._write_chunk(b"")

    def _wait(self, fault: Fault, n: int) -> bool:
        """The fault's stall before event ``n`` and its hold; False once the client is gone."""
        if fault.stall_between_events > 0 and self._client_gone(fault.stall_between_events):
            return False
        if n == fault.hold_after:
            deadline = time.monotonic() + HOLD_LIMIT
            while not self.state.gate.is_set() and time.monotonic() < deadline:
                if self._client_gone(0.02):
                    return False
        return True

    def _client_gone(self, timeout: float) -> bool:
        """Whether the client closed its connection, waiting up to ``timeout`` seconds to
        know (an HTTP/1.1 client sends nothing while it waits for the answer)."""
        readable, _, _ = select.select([self.connection], [], [], timeout)
        if not readable:
            return False
        try:
            peeked: bytes = self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return True
        return peeked == b""

    def _client_closed(self) -> None:
        self.close_connection = True
        self.state.record_closed(urlsplit(self.path).path)

    def _common_headers(self, headers: dict[str, str]) -> None:
        request_id = _new_request_id()
        self.send_header("x-request-id", request_id)
        self.send_header("request-id", request_id)
        for key, value in headers.items():
            self.send_header(key, value)

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _abort(self) -> None:
        """Close the connection mid-body, as a crashed upstream would."""
        self.close_connection = True
        _shutdown(self.connection)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _fault_message(fault: Fault) -> str:
    if isinstance(fault.body, str):
        return fault.body
    if isinstance(fault.body, dict) and isinstance(fault.body.get("message"), str):
        return str(fault.body["message"])
    return "(fake) the background response failed"


def _new_request_id() -> str:
    return "req_" + uuid.uuid4().hex[:24]
