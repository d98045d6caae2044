"""Canary secrets of every kind appear nowhere: not in ``.agi/``, the streams, the CLI's output
or what the provider was sent.

The secrets: a key secret by its variable's name only in value-agnostic form
(``STRIPE_APIKEY``), a password inside a URL (``DATABASE_URL``), a token known by its prefix
alone (``ghp_…`` in a plainly named variable), a long high-entropy token, and values of the
credentials file ``agi setup`` writes. A ``shell.run`` call prints each of them raw, reversed,
as hex, as base64 and base64url at each byte offset, wrapped and not, and as part of a large
output that is spilled to an artifact; the run is streamed as NDJSON while a session stream
(SSE) follows it, and the same prompt runs through the ``agi`` command line.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agi_jupyter.cli.main import cli
from agi_jupyter.testing import FakeLLMServer
from tests.server.conftest import Api, Fetch, project_store, sse_events
from tests.stored import stored_texts as all_stored

CANARIES = {
    "STRIPE_APIKEY": "rk_live_51CanaryStripeKey0000aaaa",
    "DATABASE_URL": "postgres://app:Canary-Db-Passw0rd-1111@db.internal:5432/app",
    "GH": "ghp_CanaryGithubToken2222bbbbccccdddd",
    "SESSION_BLOB": "Zq8vK2mN7xP4wL9rT6yB3cF5hJ1dG0sCanary33",
}
CREDENTIALS = {
    "anthropic": "sk-ant-api03-CanaryCredentialsFile4444",
    "custom_service": "CanaryCustomCredential5555eeeeffff",
}
SECRETS = [
    "rk_live_51CanaryStripeKey0000aaaa",
    "Canary-Db-Passw0rd-1111",
    "ghp_CanaryGithubToken2222bbbbccccdddd",
    "Zq8vK2mN7xP4wL9rT6yB3cF5hJ1dG0sCanary33",
    *CREDENTIALS.values(),
]

# Prints every secret in every form a command may turn it into, then a long output (spilled
# to an artifact) with all of them again at its end. No secret is in the prompt itself.
SCRIPT = r"""
import base64, codecs, json, os
creds = json.load(open(os.path.join(os.environ["AGI_CONFIG_DIR"], "credentials.json")))
values = [os.environ[n] for n in ("STRIPE_APIKEY", "DATABASE_URL", "GH", "SESSION_BLOB")]
values += list(creds.values())
def forms(v):
    b = v.encode()
    yield v
    yield v[::-1]
    yield b.hex()
    yield b.hex().upper()
    for pad in (b"", b"x", b"xy"):
        yield base64.b64encode(pad + b + b"\n").decode()
        yield base64.urlsafe_b64encode(pad + b).decode()
        yield base64.encodebytes(pad + b * 3).decode()
    yield json.dumps({"k": v})
    yield "\n".join(sorted(os.environ.items()).__repr__()[i:i + 70] for i in range(0, 200, 70))
for v in values:
    for f in forms(v):
        print(f)
for i in range(3000):
    print("filler line", i, "-" * 40)
for v in values:
    print(v, base64.b64encode(v.encode()).decode())
"""


def tool_prompt() -> str:
    command = f"python3 - <<'EOF'\n{SCRIPT}\nEOF\nenv"
    return "/tool shell.run " + json.dumps({"command": command})


def forms_of(secret: str) -> list[str]:
    """What to look for: the secret, reversed, hex, and the base64 text its bytes alone make
    at each offset (as the redactor's own definition would, written out here again)."""
    data = secret.encode()
    found = {secret, secret[::-1], data.hex(), data.hex().upper()}
    for align in range(3):
        skip, end = -(-8 * align // 6), (align + len(data)) * 8 // 6
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            found.add(encode(b"\0" * align + data).decode()[skip:end])
    return sorted(found)


def leaks(where: str, text: str) -> list[str]:
    flat = text.replace("\\n", "").replace("\n", "").replace("\\r", "").replace("\r", "")
    return [f"{where}: {form}" for s in SECRETS for form in forms_of(s) if form in flat]


@pytest.fixture
def agi_config() -> dict[str, Any]:
    return {"persist_deltas": True}


@pytest.fixture
def canaries(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    config_dir = tmp_path / "agi-config"
    config_dir.mkdir(exist_ok=True)
    (config_dir / "credentials.json").write_text(json.dumps(CREDENTIALS))


@pytest.mark.slow
@pytest.mark.usefixtures("canaries")
async def test_canary_secrets_appear_nowhere(
    api: Api, fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    session = (await fetch("sessions", method="POST", json={"agent": "build"})).data["session"]
    streamed: list[str] = []
    async with api.client(timeout=120) as client:
        async with client.stream("GET", f"/sessions/{session['id']}/stream") as sse:
            post = client.post(
                f"/sessions/{session['id']}/messages",
                json={"content": tool_prompt()},
                headers={"Accept": "application/x-ndjson"},
            )
            reply = asyncio.ensure_future(post)
            async for event in sse_events(sse):
                streamed.append(json.dumps(event))
                if event["data"]["type"] == "run.final":
                    break
        ndjson = (await reply).text
    events = [json.loads(line) for line in ndjson.splitlines()]
    outputs = [e for e in events if e["type"] == "tool.call.output"]
    assert outputs, "the tool ran"
    assert "REDACTED" in json.dumps(outputs), "it printed the secrets, redacted"
    assert "all of it is artifact art_" in outputs[0]["output"], "its long output was spilled"

    cli_run = await asyncio.to_thread(
        CliRunner().invoke,
        cli,
        ["--project", str(server_root), "-a", "build", "--json", tool_prompt()],
        catch_exceptions=False,
    )
    assert cli_run.exit_code == 0, cli_run.stderr
    human = await asyncio.to_thread(
        CliRunner().invoke, cli, ["--project", str(server_root), "-a", "build", tool_prompt()]
    )

    found = leaks("ndjson", ndjson) + leaks("sse", "".join(streamed))
    found += leaks("cli --json", cli_run.stdout + cli_run.stderr)
    found += leaks("cli", human.stdout + human.stderr)
    for request in fake_llm.requests:
        headers = {k: v for k, v in request.headers.items() if k.lower() != "authorization"}
        found += leaks(f"provider {request.path}", json.dumps(request.body) + json.dumps(headers))
    for where, text in stored_texts(server_root):
        found += leaks(where, text)
    assert found == []


def stored_texts(server_root: Path) -> list[tuple[str, str]]:
    """Everything the project's store holds (the files under .agi/, or on PostgreSQL also
    every row of the project's schema), with at least one spilled artifact among it."""
    with project_store(server_root) as store:
        texts = all_stored(server_root, store)
        if store.dialect == "sqlite":
            assert any(where.startswith(".agi/artifacts/") for where, _ in texts)
        else:
            spilled = "SELECT COUNT(*) FROM artifacts WHERE content IS NOT NULL"
            assert int(store.query(spilled).rows[0][0])
    return texts
