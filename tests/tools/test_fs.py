"""fs.read, fs.list, fs.search, fs.write: happy paths and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from agi_jupyter.store import SqliteStore
from tests.tools.conftest import Call, exists, read, write


@pytest.fixture
def tree(project: Path) -> Path:
    write(project / "README.md", "# Demo\nhello world\n")
    write(project / "src" / "app.py", "def main():\n    return 'Hello'\n")
    write(project / "src" / "util.py", "HELLO = 1\n")
    write(project / "src" / "deep" / "x.txt", "nothing\n")
    write(project / ".git" / "config", "hello from git\n")
    write(project / "node_modules" / "m" / "index.js", "hello\n")
    write(project / "src" / "__pycache__" / "app.pyc", "hello\n")
    write(project / ".agi" / "notes.txt", "hello\n")
    (project / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00hello")
    return project


# --- fs.read ---------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_read_a_file(call: Call, project: Path) -> None:
    write(project / "a.txt", "one\ntwo\nthree\n")
    outcome = await call("fs.read", {"path": "a.txt"})
    assert outcome.output == "one\ntwo\nthree\n"
    assert outcome.result["data"] == {"path": "a.txt", "start": 1, "end": 3, "total_lines": 3}


@pytest.mark.asyncio
async def test_read_with_offset_and_limit(call: Call, project: Path) -> None:
    write(project / "n.txt", "".join(f"line {i}\n" for i in range(1, 11)))
    outcome = await call("fs.read", {"path": "n.txt", "offset": 3, "limit": 2})
    assert outcome.output.startswith("line 3\nline 4\n")
    assert "showing lines 3-4 of 10; call fs.read with offset=5" in outcome.output
    past = await call("fs.read", {"path": "n.txt", "offset": 50})
    assert past.status == "failed"
    assert "has 10 lines; offset 50 is past its end" in past.output


@pytest.mark.asyncio
async def test_large_files_are_cut_with_a_note(call: Call, project: Path) -> None:
    write(project / "big.txt", ("x" * 99 + "\n") * 2000)  # 200 000 characters
    outcome = await call("fs.read", {"path": "big.txt"})
    assert outcome.status == "completed"
    assert "call fs.read with offset=" in outcome.output
    assert outcome.result["data"]["end"] < 2000


@pytest.mark.asyncio
@pytest.mark.usefixtures("tree")
@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("image.png", "image.png is a binary file"),
        ("src", "src is a folder, not a file"),
        ("missing.txt", "no such file: missing.txt"),
    ],
)
async def test_read_errors_are_clear(call: Call, path: str, message: str) -> None:
    outcome = await call("fs.read", {"path": path})
    assert outcome.status == "failed"
    assert message in outcome.output


@pytest.mark.asyncio
async def test_read_refuses_non_utf8(call: Call, project: Path) -> None:
    (project / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    outcome = await call("fs.read", {"path": "latin.txt"})
    assert "is not UTF-8 text" in outcome.output


# --- fs.list ---------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.usefixtures("tree")
async def test_list_top_level_skips_noise(call: Call) -> None:
    outcome = await call("fs.list", {})
    assert outcome.output.splitlines() == ["README.md", "image.png", "src/"]


@pytest.mark.asyncio
@pytest.mark.usefixtures("tree")
async def test_list_recursive_with_glob(call: Call) -> None:
    everything = await call("fs.list", {"recursive": True})
    assert everything.output.splitlines() == [
        "README.md",
        "image.png",
        "src/",
        "src/app.py",
        "src/deep/",
        "src/deep/x.txt",
        "src/util.py",
    ]
    python = await call("fs.list", {"path": "src", "glob": "*.py", "recursive": True})
    assert python.output.splitlines() == ["src/app.py", "src/util.py"]
    by_path = await call("fs.list", {"glob": "src/deep/*", "recursive": True})
    assert by_path.output.splitlines() == ["src/deep/x.txt"]


@pytest.mark.asyncio
@pytest.mark.usefixtures("tree")
async def test_list_is_bounded(call: Call) -> None:
    outcome = await call("fs.list", {"recursive": True, "limit": 2})
    assert outcome.output.splitlines()[:2] == ["README.md", "image.png"]
    assert "[5 more entries not shown (limit 2)]" in outcome.output


@pytest.mark.asyncio
@pytest.mark.usefixtures("tree")
async def test_list_errors_and_explicit_skipped_folders(call: Call) -> None:
    assert "is not a folder" in (await call("fs.list", {"path": "README.md"})).output
    explicit = await call("fs.list", {"path": ".agi"})
    assert ".agi/notes.txt" in explicit.output.splitlines()


# --- fs.search -------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.usefixtures("tree")
async def test_search_regex_skips_noise_and_binaries(call: Call) -> None:
    outcome = await call("fs.search", {"pattern": r"hel+o"})
    assert outcome.output.splitlines() == ["README.md:2:hello world"]
    loose = await call("fs.search", {"pattern": "hello", "ignore_case": True})
    assert loose.output.splitlines() == [
        "README.md:2:hello world",
        "src/app.py:2:    return 'Hello'",
        "src/util.py:1:HELLO = 1",
    ]


@pytest.mark.asyncio
@pytest.mark.usefixtures("tree")
async def test_search_literal_glob_and_bounds(call: Call) -> None:
    literal = await call("fs.search", {"pattern": "main()", "literal": True})
    assert literal.output == "src/app.py:1:def main():"
    globbed = await call("fs.search", {"pattern": ".", "glob": "*.txt", "path": "src"})
    assert globbed.output == "src/deep/x.txt:1:nothing"
    bounded = await call("fs.search", {"pattern": ".", "max_matches": 2})
    assert len(bounded.output.splitlines()) == 3
    assert "stopped after 2 matches" in bounded.output
    one_file = await call("fs.search", {"pattern": "def", "path": "src/app.py"})
    assert one_file.output == "src/app.py:1:def main():"
    none = await call("fs.search", {"pattern": "zebra"})
    assert none.output.startswith("no matches")


@pytest.mark.asyncio
async def test_search_errors(call: Call) -> None:
    bad = await call("fs.search", {"pattern": "(unclosed"})
    assert bad.status == "failed"
    assert "invalid regular expression '(unclosed'" in bad.output
    assert "literal=true" in bad.output
    missing = await call("fs.search", {"pattern": "x", "path": "nowhere"})
    assert "no such file or folder: nowhere" in missing.output


# --- fs.write --------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_write_creates_parents_and_a_diff_artifact(
    call: Call, project: Path, store: SqliteStore
) -> None:
    outcome = await call("fs.write", {"path": "new/dir/file.txt", "content": "héllo\n"})
    assert outcome.status == "completed"
    assert read(project / "new" / "dir" / "file.txt") == "héllo\n"
    assert outcome.result["data"] == {"path": "new/dir/file.txt", "bytes": 7, "created": True}
    assert outcome.output.startswith("created new/dir/file.txt: wrote 7 bytes")
    assert outcome.artifact is not None
    artifact = store.get_artifact(outcome.artifact.id)
    assert artifact.kind == "file_diff"
    assert artifact.data is not None
    assert artifact.data["summary"] == {"files": 1, "additions": 1, "deletions": 0}
    assert artifact.data["patch"] == (
        "--- /dev/null\n+++ b/new/dir/file.txt\n@@ -0,0 +1 @@\n+héllo\n"
    )


@pytest.mark.asyncio
async def test_overwrite_reports_the_change(call: Call, project: Path) -> None:
    write(project / "a.txt", "one\ntwo\n")
    outcome = await call("fs.write", {"path": "a.txt", "content": "one\nTWO\nthree\n"})
    assert outcome.output.startswith("updated a.txt")
    assert outcome.artifact is not None
    assert outcome.artifact.data is not None
    assert outcome.artifact.data["summary"] == {"files": 1, "additions": 2, "deletions": 1}
    assert outcome.artifact.data["files"] == [
        {"path": "a.txt", "op": "update", "additions": 2, "deletions": 1}
    ]


@pytest.mark.asyncio
async def test_write_errors(call: Call, project: Path) -> None:
    write(project / "dir" / "x", "")
    folder = await call("fs.write", {"path": "dir", "content": "x"})
    assert folder.status == "failed"
    assert "folder" in folder.output
    store_db = await call("fs.write", {"path": ".agi/agi.sqlite-wal", "content": "x"})
    assert "store database" in store_db.output
    assert not exists(project / ".agi" / "agi.sqlite-wal")
