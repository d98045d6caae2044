"""The OpenAPI document says exactly what the server does: schemathesis, every check.

``schemathesis run --checks all`` against a live ``jupyter server`` (a subprocess with the agi
extension, every provider pointed at the fake LLM server and configured, a webhook secret set)
must report zero failures: every operation of the document, generated positive and negative
requests, the coverage phase (boundary values, missing headers, undeclared methods) and stateful
sequences along the document's links. It is generic over the whole document, so routes added
later are fuzzed too. Streams are bounded by the server's ``stream_max_seconds``.

One expectation is widened, for the operations whose body can hold an attached image (found in
the document: a request body that reaches ``ImageInput``): they may answer a schema-valid body
``422 ATTACHMENT_REFUSED``. The schema says "base64, at most the bound" — whether the bytes are a
PNG, JPEG, GIF or WebP image, and how many images one message holds, is beyond JSON Schema, and
schemathesis' acceptance check takes no 422 by default. Every other check, and this one for
every other status and operation, stays as it is; tests/server/test_attachments_api.py checks
what the 422s say.

Bounds for CI: ``SCHEMATHESIS_EXAMPLES`` examples per operation (default 15) and
``SCHEMATHESIS_SECONDS`` of fuzzing (default 120); a fixed seed (``SCHEMATHESIS_SEED``) makes
a run repeatable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.model_specs import KNOWN_PROVIDERS
from agi_jupyter.testing import FakeLLMServer
from tests.jupyterlab_server import LabServer, offline_env, start_jupyter_server

REPO = Path(__file__).resolve().parents[2]

WEBHOOK_SECRET = "whsec_" + "c2NoZW1hdGhlc2lzLXRlc3Qtc2VjcmV0LTAxMjM0NTY3"


def _provider_setup(fake: FakeLLMServer) -> tuple[dict[str, object], dict[str, str]]:
    """Global config and credentials: every provider configured and served by the fake."""
    urls = {name: fake.openai_base_url for name in KNOWN_PROVIDERS}
    urls["anthropic"] = fake.anthropic_base_url
    config = {"providers": {name: {"base_url": url} for name, url in urls.items()}}
    keys = {name: f"sk-fuzz-{name}" for name, p in KNOWN_PROVIDERS.items() if p.key_env}
    return config, {**keys, "openai_webhook_secret": WEBHOOK_SECRET}


@pytest.fixture
def server(tmp_path: Path, fake_llm: FakeLLMServer) -> Iterator[LabServer]:
    root = tmp_path / "root"
    root.mkdir()
    config_dir = tmp_path / "agi-config"
    config_dir.mkdir()
    config, credentials = _provider_setup(fake_llm)
    (config_dir / "config.json").write_text(json.dumps(config))
    (config_dir / "credentials.json").write_text(json.dumps(credentials))
    env = offline_env(AGI_CONFIG_DIR=str(config_dir), AGI_FAKE_LLM_URL=fake_llm.openai_base_url)
    args = (
        "--AgiExtensionApp.stream_max_seconds=3",
        "--AgiExtensionApp.freeze_gc=False",
        "--AgiExtensionApp.tick_interval=1",
    )
    started = start_jupyter_server(root, env, tmp_path / "server.log", extra_args=args)
    yield started
    started.stop()


# What schemathesis' positive-data acceptance check takes by default, and the one status the
# operations taking attached images add to it (see the module's docstring).
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]
IMAGE_REFUSED = "422"


def operations_taking_images(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(method, path) of each operation whose request body can hold an ``ImageInput``."""
    schemas = document["components"]["schemas"]

    def reaches(node: Any, seen: frozenset[str]) -> bool:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                return name == "ImageInput" or (
                    name not in seen and reaches(schemas[name], seen | {name})
                )
            return any(reaches(value, seen) for value in node.values())
        if isinstance(node, list):
            return any(reaches(value, seen) for value in node)
        return False

    return [
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict) and reaches(operation.get("requestBody"), frozenset())
    ]


def schemathesis_config(server: LabServer, where: Path) -> Path:
    request = urllib.request.Request(
        f"{server.url}/agi/openapi.json", headers={"Authorization": f"token {server.token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        document = json.load(response)
    taking = operations_taking_images(document)
    assert ("POST", "/agi/v1/sessions/{session_id}/messages") in taking, taking
    statuses = ", ".join(f'"{status}"' for status in [*ACCEPTED, IMAGE_REFUSED])
    config = where / "schemathesis.toml"
    config.write_text(
        "".join(
            f'[[operations]]\ninclude-method = "{method}"\ninclude-path = "{path}"\n'
            f"checks.positive_data_acceptance.expected-statuses = [{statuses}]\n\n"
            for method, path in taking
        )
    )
    return config


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_schemathesis_finds_nothing(server: LabServer, tmp_path: Path) -> None:
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--no-color",
        "--config-file",
        str(schemathesis_config(server, tmp_path)),
        "run",
        f"{server.url}/agi/openapi.json",
        "--header",
        f"Authorization: token {server.token}",
        "--checks",
        "all",
        # `all` includes ST112, a response slower than 10 s unless told: that measures the
        # machine's load, not the contract (timing belongs to benchmarks/). A JSON reply waits
        # for its run, and one took 28 s once under a full CI (not reproduced alone). The
        # limit is the request timeout's: only a hang fails.
        "--max-response-time",
        "90",
        "--max-examples",
        os.environ.get("SCHEMATHESIS_EXAMPLES", "15"),
        "--max-time",
        os.environ.get("SCHEMATHESIS_SECONDS", "120"),
        "--seed",
        os.environ.get("SCHEMATHESIS_SEED", "20261123"),
        "--request-timeout",
        "90",
        "--workers",
        "1",
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=840)
    if done.returncode != 0:
        # The whole report is kept; the message ends with schemathesis' failures (what a
        # truncated CI log shows is the end of it), after the server's log.
        kept = REPO / "test-artifacts" / f"schemathesis-{os.getpid()}.txt"
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
        start = done.stdout.find("FAILURES")
        failures = done.stdout[start if start >= 0 else 0 :][:12000]
        pytest.fail(
            f"--- server log ---\n{server.log_tail(40)}\n--- stderr ---\n{done.stderr[-3000:]}\n"
            f"--- schemathesis' failures (whole report: {kept}) ---\n{failures}"
        )
    print(done.stdout[-4000:])  # the figures (operations, test cases) with pytest -rP
