"""A real PostgreSQL server for the tests (Debian's ``postgresql`` package, no containers).

``PostgresServer.start()`` runs ``initdb`` and ``pg_ctl`` from ``/usr/lib/postgresql/*/bin``
into a fresh temporary folder, listening on a free port of 127.0.0.1 and on a unix socket in
that folder. The machines run as root and ``initdb`` refuses root, so the binaries run as the
package's ``postgres`` user (``runuser``) on a folder that user owns. Durability is switched
off (``fsync``, ``synchronous_commit``): a test server is thrown away.

Authentication: trust on the socket and over TCP, except the role ``agi_secret``, which must
give its password over TCP (scram-sha-256): the tests of password handling log in as it, to the
database of the same name that it owns.

As a pytest plugin (``tests/conftest.py``) it gives the session-scoped ``postgres_url``: one
server and one database per test process (each xdist worker has its own). Stores of different
tests do not meet: each project key (a tmp_path) has a schema of its own. Set
``AGI_TEST_DATABASE_URL`` to use a server of your own instead; without PostgreSQL installed the
PostgreSQL tests fail, unless ``AGI_TEST_POSTGRES=0`` says to skip them.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

SECRET_ROLE, SECRET_PASSWORD = "agi_secret", "s3cret-pw-0001"
HBA = f"""
local all all trust
host all {SECRET_ROLE} 127.0.0.1/32 scram-sha-256
host all all 127.0.0.1/32 trust
"""


def binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    def __init__(self, bin_dir: Path, *, durable: bool = False) -> None:
        """``durable``: commits survive ``halt`` (a crash); the default trades that for speed."""
        self.bin_dir = bin_dir
        self.durable = durable
        self.folder = Path(tempfile.mkdtemp(prefix="agi-pg-"))
        self.data = self.folder / "data"
        self.port = free_port()

    def _run(self, *args: str) -> None:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self.folder.chmod(0o700)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        (self.data / "pg_hba.conf").write_text(HBA)
        self.resume()

    def resume(self) -> None:
        """Start the server on its data folder (again, after ``halt``)."""
        options = " ".join(
            [
                f"-p {self.port}",
                f"-k {self.folder}",
                "-c listen_addresses=127.0.0.1",
                *(() if self.durable else ("-c fsync=off", "-c synchronous_commit=off")),
                "-c full_page_writes=off",
                "-c shared_buffers=32MB",
                "-c max_connections=300",
            ]
        )
        log = self.folder / "server.log"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(log), "-w", "start")

    def halt(self) -> None:
        """Stop the server at once, as a crash would (``immediate``), keeping its data."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def stop(self) -> None:
        try:
            self.halt()
        finally:
            if os.environ.get("AGI_TEST_POSTGRES_KEEP"):  # keep the folder (and its log)
                print(f"PostgreSQL test server kept in {self.folder}")
            else:
                shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, dbname: str = "postgres", user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{dbname}"

    def socket_url(self, dbname: str) -> str:
        return f"postgresql://postgres@/{dbname}?host={self.folder}&port={self.port}"

    def admin(self, *statements: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    if os.environ.get("AGI_TEST_POSTGRES") == "0":
        pytest.skip("AGI_TEST_POSTGRES=0: PostgreSQL tests skipped")
    bin_dir = binaries()
    if bin_dir is None:
        pytest.fail(
            "PostgreSQL is not installed (apt-get install postgresql; scripts/install.sh does "
            "it); AGI_TEST_POSTGRES=0 skips these tests"
        )
    server = PostgresServer(bin_dir)
    server.start()
    try:
        server.admin(
            "CREATE DATABASE agi_test",
            f"CREATE ROLE {SECRET_ROLE} LOGIN PASSWORD '{SECRET_PASSWORD}'",
            f"CREATE DATABASE {SECRET_ROLE} OWNER {SECRET_ROLE}",
        )
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of this test process's database (over the unix socket, no password)."""
    return os.environ.get("AGI_TEST_DATABASE_URL") or postgres_server.socket_url("agi_test")


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """The store backend a test runs on: tests (and fixtures) that take it run twice."""
    return str(request.param)


@pytest.fixture
def backend_env(backend: str, request: pytest.FixtureRequest) -> dict[str, str]:
    """Environment variables selecting the test's backend (``AGI_DATABASE_URL`` or none)."""
    if backend == "postgres":
        return {"AGI_DATABASE_URL": request.getfixturevalue("postgres_url")}
    return {}
