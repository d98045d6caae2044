"""``agi cancel`` and the cells a run's ``notebook.run`` left running: in process the answer
names none (they live in the process that runs the run); ``--server --interrupt`` interrupts
the one running in a real ``agi serve`` (the default, leaving them running, is tested on the
Python API in tests/notebook/test_notebook_tools.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agi_jupyter.app import Agi
from agi_jupyter.cli.remote import ServerClient
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.cli.conftest import run_agi
from tests.cli.test_cli_faults import serve  # noqa: F401 - the fixture
from tests.notebook.conftest import write_notebook

NAP = "import time\nprint('napping', flush=True)\ntime.sleep(120)"


def test_cancel_json_is_the_run_with_its_cells(agi: Agi) -> None:
    queued = agi.submit("later", start=False)
    done = run_agi(["cancel", queued.id, "--json"])
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert (answer["id"], answer["status"], answer["cells"]) == (queued.id, "cancelled", [])


def test_cancel_interrupt_through_the_server_interrupts_the_running_cell(
    project: Path,
    fake_llm: FakeLLMServer,
    serve: Callable[[], tuple[Any, ServerClient]],  # noqa: F811 - the fixture
) -> None:
    write_notebook(project / "slow.ipynb", [("nap", "code", NAP)])
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.run", {"cell_ids": ["nap"], "timeout": 100})]),
        Turn(text="-"),
    )
    _process, client = serve()
    session = client.call("POST", "sessions", {"agent": "build", "notebook_path": "slow.ipynb"})
    run = client.call("POST", f"sessions/{session['session']['id']}/runs", {"input": "nap"})["run"]
    deadline = time.monotonic() + 90
    ledger: list[dict[str, Any]] = []
    while time.monotonic() < deadline and not ledger:  # the cell started (the ledger says so)
        ledger = client.call("GET", "executions?path=slow.ipynb")["executions"]
        time.sleep(0.3)
    assert ledger, "the cell started"
    assert ledger[-1]["status"] == "running"
    time.sleep(1.0)  # past the print, inside time.sleep (an interrupt before it is as good)

    url, token = client.base, client.token or ""
    done = run_agi(["cancel", run["id"], "--interrupt", "--server", url, "--token", token])
    assert done.returncode == 0, done.stderr
    first, cell = done.stdout.splitlines()
    assert first == f"{run['id']} cancelled"
    assert cell.startswith("cell nap of slow.ipynb (ex-")
    assert cell.endswith("): interrupted")
    while time.monotonic() < deadline and ledger[-1]["status"] == "running":
        ledger = client.call("GET", "executions?path=slow.ipynb")["executions"]
        time.sleep(0.3)
    assert ledger[-1]["status"] == "interrupted"
