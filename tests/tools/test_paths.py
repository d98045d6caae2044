"""The descriptor-relative path helpers of ``tools.paths`` (what file tools open through)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from agi_jupyter.errors import PathOutsideProject, ToolError
from agi_jupyter.tools.paths import (
    MissingPath,
    delete_in_project,
    locate,
    project_relpath,
    read_bytes_in_project,
    walk_dir_in_project,
    write_bytes_in_project,
)


def test_write_creates_folders_and_keeps_an_existing_mode(project: Path) -> None:
    assert write_bytes_in_project(project, "a/b/c.txt", b"one") == "a/b/c.txt"
    target = project / "a" / "b" / "c.txt"
    target.chmod(0o750)
    write_bytes_in_project(project, str(target), b"two")  # an absolute path inside works too
    assert target.read_bytes() == b"two"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert sorted(p.name for p in target.parent.iterdir()) == ["c.txt"]  # no temporary left


def test_symlinks_inside_the_project_are_followed_inside(project: Path) -> None:
    (project / "real").mkdir()
    (project / "real" / "f.txt").write_text("hello")
    (project / "rel").symlink_to("real", target_is_directory=True)
    (project / "abs").symlink_to(project / "real", target_is_directory=True)
    (project / "alias.txt").symlink_to("real/f.txt")
    for path in ("rel/f.txt", "abs/f.txt", "alias.txt", "real/../alias.txt"):
        assert read_bytes_in_project(project, path) == (b"hello", "real/f.txt")
    write_bytes_in_project(project, "alias.txt", b"changed")
    assert (project / "alias.txt").is_symlink()
    assert (project / "real" / "f.txt").read_bytes() == b"changed"


def test_escapes_loops_and_the_store_are_refused(project: Path, tmp_path: Path) -> None:
    (project / "up").symlink_to("..", target_is_directory=True)
    (project / "loop").symlink_to("loop")
    (project / "db").symlink_to(".agi/agi.sqlite")
    with pytest.raises(PathOutsideProject, match="through a symlink"):
        read_bytes_in_project(project, "up/proj/x")
    with pytest.raises(PathOutsideProject, match="outside the project folder;"):
        locate(project, ".agi/../../x")
    with pytest.raises(PathOutsideProject):
        locate(project, str(tmp_path / "elsewhere.txt"))
    with pytest.raises(ToolError, match="too many levels"):
        locate(project, "loop")
    with pytest.raises(PathOutsideProject, match="store database"):
        write_bytes_in_project(project, "db", b"x")


def test_missing_paths_and_non_files(project: Path) -> None:
    with pytest.raises(MissingPath, match=r"no such file: nope\.txt"):
        read_bytes_in_project(project, "nope.txt")
    with pytest.raises(MissingPath, match="no such folder: no"):
        read_bytes_in_project(project, "no/such.txt")
    os.mkfifo(project / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        read_bytes_in_project(project, "pipe")  # returns at once: no wait for a writer
    (project / "f.txt").write_text("x")
    with pytest.raises(ToolError, match="is a file, not a folder"):
        read_bytes_in_project(project, "f.txt/inner")


def test_relpath_plans_below_missing_folders(project: Path) -> None:
    (project / "link").symlink_to(project / ".agi", target_is_directory=True)
    assert project_relpath(project, "new/dir/../f.txt") == "new/f.txt"
    assert project_relpath(project, "link/notes.md") == ".agi/notes.md"
    with pytest.raises(PathOutsideProject):
        project_relpath(project, "new/../../x")
    with pytest.raises(PathOutsideProject, match="store database"):
        project_relpath(project, "link/agi.sqlite-wal", for_write=True)


def test_delete_and_walk(project: Path) -> None:
    write_bytes_in_project(project, "t/a.txt", b"a")
    write_bytes_in_project(project, "t/skip/b.txt", b"b")
    write_bytes_in_project(project, "t/sub/c.txt", b"c")
    (project / "t" / "out").symlink_to("/", target_is_directory=True)
    walked = [
        (e.rel, e.is_dir)
        for e in walk_dir_in_project(project, "t", recursive=True, skip=frozenset({"skip"}))
    ]
    assert walked == [("t/a.txt", False), ("t/out", True), ("t/sub", True), ("t/sub/c.txt", False)]
    delete_in_project(project, "t/a.txt")
    delete_in_project(project, "t/a.txt")  # already gone: fine
    assert not (project / "t" / "a.txt").exists()
    with pytest.raises(ToolError, match="is a folder"):
        delete_in_project(project, "t/sub")
