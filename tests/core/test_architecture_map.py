"""docs/architecture.md stays a map that is true and short: every path it names exists, and it
takes five minutes to read.

The map names modules and packages as backticked paths from the repository root
(`agi_jupyter/runtime/runs.py`, `agi_jupyter/store/`, `labextension/src/openapi.ts`). A path
exists when the repository holds it as source: a file git tracks (or a new file git does not
ignore), or a folder with such a file. Built output that git ignores (the
`agi_jupyter/labextension/` bundle, `labextension/lib/`) is not source, even when it is on disk.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "docs" / "architecture.md"
MAX_WORDS = 2_500

# The top-level folders a named path can start with.
ROOTS = ("agi_jupyter", "labextension", "tests", "docs", "scripts", "benchmarks", "notebooks")
PATH = re.compile(r"`((?:" + "|".join(ROOTS) + r")/[^`\s]*)`")


def named_paths(text: str) -> list[str]:
    """The repository paths named in `text` (backticked, from the root), in order, once each."""
    return list(dict.fromkeys(PATH.findall(text)))


@cache
def source_files() -> frozenset[str]:
    """The repository's source files: tracked by git, or new and not ignored."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    return frozenset(p for p in out.decode().split("\0") if (ROOT / p).exists())


def exists(path: str) -> bool:
    """Whether `path` (a file, or a folder ending in ``/``) is source of the repository."""
    files = source_files()
    if path.endswith("/"):
        return any(f.startswith(path) for f in files)
    return path in files


def test_named_paths_are_found() -> None:
    text = "`agi_jupyter/store/` and `agi_jupyter/app/agi.py`, `labextension/src/state.ts`,\n"
    text += "not agi_jupyter/records.py bare, nor `Agi.submit`, nor `../shared/DESIGN.md`; "
    text += "again `agi_jupyter/store/`."
    assert named_paths(text) == [
        "agi_jupyter/store/",
        "agi_jupyter/app/agi.py",
        "labextension/src/state.ts",
    ]


def test_ignored_build_output_does_not_count() -> None:
    assert exists("agi_jupyter/store/")
    assert exists("agi_jupyter/events.py")
    assert not exists("agi_jupyter/labextension/")
    assert not exists("agi_jupyter/store/nothing.py")
    assert not exists("agi_jupyter/stor/")


def test_every_named_path_exists() -> None:
    paths = named_paths(MAP.read_text(encoding="utf-8"))
    assert len(paths) > 50
    missing = [p for p in paths if not exists(p)]
    assert not missing, "docs/architecture.md names paths that do not exist:\n" + "\n".join(missing)


def test_the_map_takes_five_minutes() -> None:
    words = len(MAP.read_text(encoding="utf-8").split())
    assert words <= MAX_WORDS, f"docs/architecture.md has {words} words (at most {MAX_WORDS})"
