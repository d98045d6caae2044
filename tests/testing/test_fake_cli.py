"""``python -m agi_jupyter.testing.fake_llm``: a fake server in its own process."""

from __future__ import annotations

import selectors
import signal
import subprocess
import sys
import time

import openai
import pytest

from agi_jupyter.testing import FakeLLMClient, Turn

pytestmark = pytest.mark.slow


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise AssertionError("the fake server printed nothing")
    return proc.stdout.readline().strip()


def test_cli_serves_until_sigterm() -> None:
    command = [sys.executable, "-m", "agi_jupyter.testing.fake_llm", "--port", "0"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        try:
            line = _read_line(proc, timeout=10)
            assert line.startswith("FAKE_LLM_URL=http://127.0.0.1:")
            url = line.removeprefix("FAKE_LLM_URL=")
            remote = FakeLLMClient(url)
            remote.enqueue(Turn(text="from another process"))
            with openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as client:
                response = client.responses.create(model="m", input="hi")
            assert response.output_text == "from another process"
            assert [r.protocol for r in remote.requests()] == ["responses"]
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=5) == 0
            assert time.monotonic() - started < 5
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)
