"""A writer process for test_store_processes.py (run as a script, not collected by pytest).

    python store_writer.py PROJECT SESSION_ID RUN_ID TAG EVENTS MESSAGES READY_FILE GO_FILE [URL]

Opens the store, touches READY_FILE, waits for GO_FILE, then appends EVENTS run events to RUN_ID
(one transaction each) and MESSAGES messages to SESSION_ID, interleaved; after its first event
it waits until the other writer's first event is there too, so the two always overlap. Every
failure is counted, not raised; a JSON summary goes to stdout. With URL, the project's store is
in that PostgreSQL database.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from agi_jupyter.records import TextPart
from agi_jupyter.store import create_store


def wait_until(condition: Callable[[], bool]) -> None:
    for _ in range(6000):  # at most ~60 s
        if condition():
            return
        time.sleep(0.01)


def main(argv: list[str]) -> int:
    project, session_id, run_id, tag = argv[:4]
    events, messages = int(argv[4]), int(argv[5])
    ready, go = Path(argv[6]), Path(argv[7])
    url = argv[8] if len(argv) > 8 else None
    errors: list[str] = []
    written = {"events": 0, "messages": 0}
    every = max(1, events // max(1, messages))
    with create_store(project, database_url=url) as store:
        store.list_run_events(run_id, limit=1)  # connect before the start signal
        ready.touch()
        wait_until(go.exists)

        def other_writer_started() -> bool:
            return any(e.payload["writer"] != tag for e in store.list_run_events(run_id))

        for i in range(events):
            try:
                store.append_run_event(run_id, "tick", {"writer": tag, "i": i})
                written["events"] += 1
                if i == 0:  # make sure the two writers overlap, however they are scheduled
                    wait_until(other_writer_started)
                if i % every == 0 and written["messages"] < messages:
                    store.add_message(session_id, "user", [TextPart(text=f"{tag}-{i}")])
                    written["messages"] += 1
            except Exception as e:  # counted and reported, never raised
                errors.append(f"{type(e).__name__}: {e}")
    print(json.dumps({"tag": tag, "errors": errors[:5], "error_count": len(errors), **written}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
