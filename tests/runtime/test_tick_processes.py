"""Several OS processes ticking the same store execute every queued run exactly once, and the
runs of each session one after another, in order."""

from __future__ import annotations

import itertools
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
    import json, sys, time
    from agi_jupyter.app import Agi

    project, env = sys.argv[1], json.loads(sys.argv[2])
    executed = 0
    with Agi(project, env=env) as agi:
        for _ in range(2000):  # bounded: each tick claims up to 5 runs
            result = agi.tick(max_runs=5)
            executed += result.executed
            if not agi.store.list_runs(statuses=["queued", "running"], limit=1).items:
                break
            if result.executed == 0:
                time.sleep(0.05)  # what is left is running elsewhere
    print(json.dumps({"executed": executed}))
    """
)


@pytest.mark.slow
def test_eight_processes_ticking_200_runs_execute_each_once_in_session_order(
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
        for _ in range(8)
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
    for session_id in session_ids:  # one at a time, in the order they were queued
        # The session stream is in the order writes were committed in (times are taken
        # before a write waits for the lock, so they need not be; cursors are opaque). A
        # run's events up to its ending all come before the next run's first event: it was
        # claimed only once the run before it had ended.
        positions: dict[str, list[int]] = {}
        stream = agi.store.list_session_run_events(session_id, limit=1000)
        for position, (_cursor, event) in enumerate(stream):
            positions.setdefault(event.run_id, []).append(position)
        ordered = [r.id for r in runs if r.session_id == session_id]
        for earlier, later in itertools.pairwise(ordered):
            before_ending = positions[earlier][:-2]  # all but run.status and run.final
            assert max(before_ending) < min(positions[later])
