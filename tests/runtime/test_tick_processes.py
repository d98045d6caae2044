"""Several OS processes ticking the same store execute every queued run exactly once."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agi_jupyter.testing import FakeLLMServer
from tests.runtime.conftest import MakeAgi

WORKER = textwrap.dedent(
    """
    import json, sys
    from agi_jupyter.app import Agi

    project, env = sys.argv[1], json.loads(sys.argv[2])
    executed = 0
    with Agi(project, env=env) as agi:
        for _ in range(400):  # bounded: each tick claims up to 5 runs
            result = agi.tick(max_runs=5)
            executed += result.executed
            if not agi.store.due_runs(limit=1) and result.executed == 0:
                break
    print(json.dumps({"executed": executed}))
    """
)


@pytest.mark.slow
def test_four_processes_ticking_200_runs_execute_each_once(
    make_agi: MakeAgi, project: Path, agi_env: dict[str, str], fake_llm: FakeLLMServer
) -> None:
    agi = make_agi()
    session_ids = [agi.new_session(model="fake:echo").id for _ in range(20)]
    run_ids = [
        agi.submit(f"job {i}", session=session_ids[i % 20], start=False).id for i in range(200)
    ]
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(project), json.dumps(agi_env)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [w.communicate(timeout=240) for w in workers]
    for worker, (_out, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err
    executed = sum(json.loads(out.strip().splitlines()[-1])["executed"] for out, _ in outputs)
    assert executed == 200
    runs = [agi.run(run_id) for run_id in run_ids]
    assert {r.status for r in runs} == {"succeeded"}
    assert {r.attempt for r in runs} == {1}
    for run_id in run_ids[:20]:
        finals = [e for e in agi.store.list_run_events(run_id) if e.type == "run.final"]
        assert len(finals) == 1
    assert len([r for r in fake_llm.requests if r.protocol == "chat"]) == 200
