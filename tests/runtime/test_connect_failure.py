"""A run whose provider's certificate fails verification fails at once: one attempt, one
connection, and a message that says what to fix (a retry can never succeed)."""

from __future__ import annotations

import socketserver
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agi_jupyter.app import Agi
from tests.providers.conftest import certificate  # noqa: F401 (a fixture)


class _TlsServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, context: ssl.SSLContext) -> None:
        self.context = context
        self.connections = 0
        super().__init__(("127.0.0.1", 0), _Handshake)


class _Handshake(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server = self.server
        assert isinstance(server, _TlsServer)
        server.connections += 1
        try:
            with server.context.wrap_socket(self.request, server_side=True) as tls:
                tls.recv(65536)
        except (ssl.SSLError, OSError):
            return


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[_TlsServer]:  # noqa: F811
    cert, key = certificate
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = _TlsServer(context)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(10)


@pytest.mark.parametrize("model", ["openai-chat:gpt-4o-mini", "anthropic:claude-sonnet-4-6"])
def test_a_run_against_an_untrusted_certificate_fails_after_one_attempt(
    project: Path, agi_env: dict[str, str], tls_server: _TlsServer, model: str
) -> None:
    url = f"https://127.0.0.1:{tls_server.server_address[1]}"
    env = {**agi_env, "OPENAI_BASE_URL": f"{url}/v1", "ANTHROPIC_BASE_URL": url}
    agi = Agi(project, env=env)  # the default retries and backoff
    try:
        session = agi.new_session(model=model)
        result = agi.ask("hello", session=session.id)
        stored = result.run
    finally:
        agi.close()
    assert stored.status == "failed"
    assert stored.attempt == 1
    assert "TLS certificate failed verification" in (stored.error or {}).get("message", "")
    assert result.text == ""
    assert tls_server.connections == 1
