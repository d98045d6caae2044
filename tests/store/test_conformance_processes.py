"""Every backend: two OS processes writing the same store at once: no lock errors, no lost or
duplicate rows."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agi_jupyter.records import Run, Session
from agi_jupyter.store import Store

WRITER = Path(__file__).with_name("store_writer.py")
REPO = Path(__file__).resolve().parents[2]
EVENTS_PER_WRITER = 2500
MESSAGES_PER_WRITER = 250


def wait_for(paths: list[Path], procs: list[subprocess.Popen[str]]) -> None:
    for _ in range(6000):  # bounded: at most ~60 s, then the assertion below reports it
        if all(p.exists() for p in paths) or any(proc.poll() is not None for proc in procs):
            break
        time.sleep(0.01)
    if not all(p.exists() for p in paths):
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        details = [proc.communicate()[1] for proc in procs]
        raise AssertionError(f"a writer did not start: {details}")


@pytest.mark.slow
def test_two_processes_append_to_the_same_run(
    store: Store,
    session: Session,
    run: Run,
    project: Path,
    tmp_path: Path,
    backend: str,
    request: pytest.FixtureRequest,
) -> None:
    url = [request.getfixturevalue("postgres_url")] if backend == "postgres" else []
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{tag}" for tag in "ab"]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(WRITER),
                str(project),
                session.id,
                run.id,
                tag,
                str(EVENTS_PER_WRITER),
                str(MESSAGES_PER_WRITER),
                str(ready_file),
                str(go),
                *url,
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag, ready_file in zip("ab", ready, strict=True)
    ]
    try:
        wait_for(ready, procs)
        go.touch()
        outputs = [proc.communicate(timeout=600) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    summaries = [json.loads(out) for out, _ in outputs]
    for summary in summaries:
        assert summary["error_count"] == 0, summary["errors"]
        assert summary["events"] == EVENTS_PER_WRITER
        assert summary["messages"] == MESSAGES_PER_WRITER

    events = store.list_run_events(run.id)
    total = 2 * EVENTS_PER_WRITER
    assert [e.seq for e in events] == list(range(1, total + 1))  # no gaps, no duplicates
    for tag in "ab":
        mine = [e.payload["i"] for e in events if e.payload["writer"] == tag]
        assert mine == list(range(EVENTS_PER_WRITER))  # none lost, in each writer's order
    writers = [e.payload["writer"] for e in events]
    switches = sum(1 for x, y in itertools.pairwise(writers) if x != y)
    assert switches >= 1, "the writers did not overlap"

    messages = store.list_messages(session.id)
    assert len(messages) == 2 * MESSAGES_PER_WRITER
    assert len({m.id for m in messages}) == len(messages)
    assert store.get_session(session.id).message_count == 2 * MESSAGES_PER_WRITER
    tail = store.list_session_run_events(session.id, limit=total + 10)
    assert [e.id for _, e in tail] == [e.id for e in events]
