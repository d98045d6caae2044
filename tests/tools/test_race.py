"""File tools cannot be raced out of the project.

A thread keeps swapping the project folder ``d`` for a symlink to a folder outside the project
(and back) while ``fs.read``, ``fs.write``, ``fs.list``, ``fs.search`` and ``apply_patch`` work on
paths under ``d``, 3,000 times each. A tool that checks a path and lets the kernel walk it again
later reads the outside canary or writes outside now and then (the audit counted 123 writes and 22
reads in 3,000 tries); opening through folder descriptors without following symlinks leaves no
such window, so nothing outside is ever read or written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from pathlib import Path

import pytest

from tests.tools.conftest import Call

TRIES = 3000
CANARY = "OUTSIDE-CANARY-7f3a"


class Swapper:
    """Swaps ``project/d`` between the real folder and a symlink to ``outside``, as fast as it
    can, until stopped; whatever the tools created meanwhile is cleaned up."""

    def __init__(self, project: Path, outside: Path) -> None:
        self.d, self.saved, self.outside = project / "d", project / "d.real", outside
        self.stop = threading.Event()
        self.swaps = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(OSError):
                os.rename(self.d, self.saved)
                os.symlink(self.outside, self.d)
                self.swaps += 1
            self._restore()

    def _restore(self) -> None:
        with contextlib.suppress(OSError):
            if self.d.is_symlink():
                self.d.unlink()
            elif self.d.is_dir() and self.saved.is_dir():
                shutil.rmtree(self.d)  # a tool made a fresh d while it was missing
            if self.saved.is_dir():
                os.rename(self.saved, self.d)

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self._restore()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(f"{CANARY}\n")
    (folder / "patched.txt").write_text("old\n")
    return folder


@pytest.fixture
def swapped(project: Path, outside: Path) -> Path:
    (project / "d").mkdir()
    (project / "d" / "secret.txt").write_text("inside\n")
    (project / "d" / "patched.txt").write_text("old\n")
    return project


def outside_changes(outside: Path) -> list[str]:
    """Files outside that a tool wrote or created."""
    known = ("secret.txt", "patched.txt")
    changed = sorted(p.name for p in outside.iterdir() if p.name not in known)
    if (outside / "patched.txt").read_text() != "old\n":
        changed.append("patched.txt (modified)")
    if (outside / "secret.txt").read_text() != f"{CANARY}\n":
        changed.append("secret.txt (modified)")
    return changed


PATCH = """*** Begin Patch
*** Update File: d/patched.txt
@@
-old
+old
*** Add File: d/added-{i}.txt
+added
*** End Patch"""


@pytest.mark.slow
@pytest.mark.asyncio
async def test_no_tool_escapes_through_a_swapped_folder(
    call: Call, swapped: Path, outside: Path
) -> None:
    leaks: list[str] = []
    with Swapper(swapped, outside) as swapper:
        for i in range(TRIES):
            read = await call("fs.read", {"path": "d/secret.txt"})
            listing = await call("fs.search", {"pattern": CANARY, "path": "d"})
            await call("fs.write", {"path": f"d/written-{i}.txt", "content": "x"})
            await call("apply_patch", {"patch": PATCH.format(i=i)})
            leaks += [f"fs.read {i}"] if CANARY in read.output else []
            leaks += [f"fs.search {i}"] if CANARY in listing.output else []
    assert swapper.swaps > TRIES / 10, "the swapper hardly ran: the test proves nothing"
    assert leaks == []
    assert outside_changes(outside) == []


@pytest.mark.asyncio
async def test_a_symlink_out_of_the_project_is_refused_for_every_tool(
    call: Call, project: Path, outside: Path
) -> None:
    (project / "d").symlink_to(outside, target_is_directory=True)
    for name, args in [
        ("fs.read", {"path": "d/secret.txt"}),
        ("fs.write", {"path": "d/new.txt", "content": "x"}),
        ("fs.list", {"path": "d"}),
        ("fs.search", {"pattern": "x", "path": "d"}),
        ("apply_patch", {"patch": PATCH.format(i=0)}),
    ]:
        outcome = await call(name, args)
        assert outcome.status == "failed", name
        assert "outside the project folder (through a symlink)" in outcome.output, name
    assert outside_changes(outside) == []
