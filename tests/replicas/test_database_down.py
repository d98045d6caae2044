"""While the shared PostgreSQL database is down, a server answers at once — 503
``STORE_UNAVAILABLE`` with ``Retry-After`` — instead of hanging past a client's timeout
(issue 29.2); when the database is back, the same server serves again and nothing is lost."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agi_jupyter.testing import FakeLLMServer
from tests.postgres_server import PostgresServer, binaries
from tests.replicas.conftest import Replica, replica_env, start_replica, wait_ready

CLIENT_TIMEOUT = 10.0  # what a client waits (the audit's): a 503 must come before it


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test alone, which it stops and starts again."""
    bin_dir = binaries()
    if bin_dir is None:
        pytest.fail("PostgreSQL is not installed (scripts/install.sh installs it)")
    server = PostgresServer(bin_dir, durable=True)  # a crash keeps what was committed
    server.start()
    server.admin("CREATE DATABASE agi_down")
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_server_answers_503_while_the_database_is_down_and_recovers(
    tmp_path: Path, own_postgres: PostgresServer, fake: FakeLLMServer
) -> None:
    (tmp_path / "project").mkdir()
    env = replica_env(tmp_path, own_postgres.url("agi_down"), fake.openai_base_url)
    replica: Replica = start_replica("down", tmp_path / "project", env, tmp_path)
    try:
        wait_ready(replica)
        session = replica.call("POST", "sessions", json={"title": "kept"})["session"]
        own_postgres.halt()
        try:
            with replica.client(timeout=CLIENT_TIMEOUT) as client:
                for path in ("sessions", f"sessions/{session['id']}", "stats"):
                    answer = client.get(path)  # a timeout here is the defect
                    assert answer.status_code == 503, (path, answer.status_code, answer.text)
                    assert answer.json()["error"]["code"] == "STORE_UNAVAILABLE"
                    assert int(answer.headers["Retry-After"]) >= 1
                written = client.post("sessions", json={"title": "while down"})
                assert written.status_code == 503, written.text
        finally:
            own_postgres.resume()
        deadline = time.monotonic() + 60
        listed = None
        while listed is None and time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError), replica.client(timeout=30) as client:
                answer = client.get("sessions")
                if answer.status_code == 200:
                    listed = answer.json()["sessions"]
            time.sleep(0.5)
        assert listed is not None, replica.log_tail()
        assert [s["title"] for s in listed] == ["kept"], "nothing lost, nothing half-written"
        created = replica.call("POST", "sessions", json={"title": "after"})
        assert created["session"]["title"] == "after"
    finally:
        replica.stop()
