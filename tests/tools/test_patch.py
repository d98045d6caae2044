"""apply_patch: the envelope and unified diffs, multi-file, all or nothing, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from agi_jupyter.store import SqliteStore
from agi_jupyter.tools.patch import apply_hunks
from agi_jupyter.tools.patch_parse import PatchError, parse_patch
from tests.tools.conftest import Call, Emitted, exists, read, snapshot, write

APP = """\
import os


def greet(name):
    return "hello " + name


def main():
    print(greet("world"))
"""


@pytest.fixture
def app(project: Path) -> Path:
    return write(project / "src" / "app.py", APP)


# --- envelope --------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_envelope_update_with_anchor(
    call: Call, project: Path, app: Path, store: SqliteStore, emitted: Emitted
) -> None:
    patch = """*** Begin Patch
*** Update File: src/app.py
@@ def greet(name):
-    return "hello " + name
+    return f"hello {name}!"
*** End Patch
"""
    outcome = await call("apply_patch", {"patch": patch})
    assert outcome.status == "completed", outcome.output
    assert read(app) == APP.replace('"hello " + name', 'f"hello {name}!"')
    assert outcome.output == ("applied the patch: 1 file(s), +1 -1\nM src/app.py (+1 -1)")
    assert outcome.result["data"]["changes"] == [
        {"path": "src/app.py", "op": "update", "additions": 1, "deletions": 1}
    ]
    assert outcome.artifact is not None
    artifact = store.get_artifact(outcome.artifact.id)
    assert artifact.kind == "file_diff"
    assert artifact.data is not None
    assert artifact.data["patch_format"] == "unified"
    assert artifact.data["input_format"] == "envelope"
    assert artifact.data["summary"] == {"files": 1, "additions": 1, "deletions": 1}
    assert artifact.data["patch"].startswith("--- a/src/app.py\n+++ b/src/app.py\n@@ ")
    assert '+    return f"hello {name}!"\n' in artifact.data["patch"]
    assert emitted.text("patch") == artifact.data["patch"]


@pytest.mark.asyncio
async def test_envelope_add_delete_move_in_one_patch(call: Call, project: Path, app: Path) -> None:
    write(project / "old.txt", "bye\n")
    write(project / "notes.md", "a\nb\nc\n")
    patch = """*** Begin Patch
*** Add File: docs/new.md
+# New
+
+text
*** Delete File: old.txt
*** Update File: notes.md
*** Move to: docs/notes.md
@@
 a
-b
+B
 c
*** End Patch"""
    outcome = await call("apply_patch", {"patch": patch})
    assert outcome.status == "completed", outcome.output
    assert read(project / "docs" / "new.md") == "# New\n\ntext\n"
    assert not exists(project / "old.txt")
    assert not exists(project / "notes.md")
    assert read(project / "docs" / "notes.md") == "a\nB\nc\n"
    assert outcome.result["data"]["files"] == 3
    assert outcome.result["data"]["additions"] == 4
    assert outcome.result["data"]["deletions"] == 2
    assert outcome.output.splitlines()[1:] == [
        "A docs/new.md (+3 -0)",
        "D old.txt (+0 -1)",
        "M notes.md -> docs/notes.md (+1 -1)",
    ]


@pytest.mark.asyncio
async def test_envelope_several_hunks_and_end_of_file(call: Call, app: Path) -> None:
    patch = """*** Begin Patch
*** Update File: src/app.py
@@
-import os
+import os
+import sys
@@ def main():
-    print(greet("world"))
+    print(greet(sys.argv[1]))
+    return 0
*** End of File
*** End Patch"""
    outcome = await call("apply_patch", {"patch": patch})
    assert outcome.status == "completed", outcome.output
    assert read(app).startswith("import os\nimport sys\n")
    assert read(app).endswith("    print(greet(sys.argv[1]))\n    return 0\n")


@pytest.mark.asyncio
async def test_whitespace_and_typography_differences_are_forgiven(
    call: Call, project: Path
) -> None:
    write(project / "t.py", "x = 1   \nmsg = \u201chi\u201d\ny = 2\n")
    patch = '*** Begin Patch\n*** Update File: t.py\n@@\n x = 1\n-msg = "hi"\n+msg = "hey"\n'
    outcome = await call("apply_patch", {"patch": patch})
    assert outcome.status == "completed", outcome.output
    assert read(project / "t.py") == 'x = 1   \nmsg = "hey"\ny = 2\n'


@pytest.mark.asyncio
async def test_crlf_files_keep_their_line_endings(call: Call, project: Path) -> None:
    (project / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    patch = "*** Begin Patch\r\n*** Update File: w.txt\r\n-two\r\n+2\r\n*** End Patch\r\n"
    outcome = await call("apply_patch", {"patch": patch})
    assert outcome.status == "completed", outcome.output
    assert (project / "w.txt").read_bytes() == b"one\r\n2\r\n"


# --- unified diffs ---------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_unified_diff_multi_file(call: Call, project: Path, app: Path) -> None:
    write(project / "b.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")
    patch = """diff --git a/src/app.py b/src/app.py
index 1111111..2222222 100644
--- a/src/app.py
+++ b/src/app.py
@@ -4,2 +4,3 @@ import os
 def greet(name):
-    return "hello " + name
+    greeting = "hello"
+    return greeting + " " + name
--- a/b.txt\t2024-01-01 00:00:00
+++ b/b.txt\t2024-01-01 00:00:00
@@ -2,3 +2,3 @@
 2
-3
+three
 4
@@ -8,3 +8,2 @@
 8
-9
 10
--- /dev/null
+++ b/c.txt
@@ -0,0 +1,2 @@
+new
+file
"""
    outcome = await call("apply_patch", {"patch": patch})
    assert outcome.status == "completed", outcome.output
    assert '    greeting = "hello"\n' in read(app)
    assert read(project / "b.txt") == "1\n2\nthree\n4\n5\n6\n7\n8\n10\n"
    assert read(project / "c.txt") == "new\nfile\n"
    assert outcome.result["data"]["files"] == 3
    assert outcome.result["data"]["additions"] == 5
    assert outcome.result["data"]["deletions"] == 3
    assert outcome.artifact is not None
    assert outcome.artifact.data is not None
    assert outcome.artifact.data["input_format"] == "unified"


@pytest.mark.asyncio
async def test_unified_hunk_is_found_when_line_numbers_drifted(call: Call, project: Path) -> None:
    write(project / "d.txt", "extra\nextra\nalpha\nbeta\ngamma\n")
    patch = "--- a/d.txt\n+++ b/d.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n"
    outcome = await call("apply_patch", {"patch": patch})
    assert outcome.status == "completed", outcome.output
    assert read(project / "d.txt") == "extra\nextra\nalpha\nBETA\ngamma\n"


@pytest.mark.asyncio
async def test_unified_delete_rename_and_fences(call: Call, project: Path) -> None:
    write(project / "gone.txt", "x\ny\n")
    write(project / "old_name.txt", "same\n")
    patch = """```diff
--- a/gone.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-x
-y
diff --git a/old_name.txt b/new_name.txt
similarity index 100%
rename from old_name.txt
rename to new_name.txt
```"""
    outcome = await call("apply_patch", {"patch": patch})
    assert outcome.status == "completed", outcome.output
    assert not exists(project / "gone.txt")
    assert not exists(project / "old_name.txt")
    assert read(project / "new_name.txt") == "same\n"


@pytest.mark.asyncio
async def test_no_newline_at_end_of_file(call: Call, project: Path) -> None:
    write(project / "n.txt", "a\nb")
    patch = "--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"
    outcome = await call("apply_patch", {"patch": patch})
    assert outcome.status == "completed", outcome.output
    assert read(project / "n.txt") == "a\nc\n"
    back = "--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-c\n+d\n\\ No newline at end of file\n"
    assert (await call("apply_patch", {"patch": back})).ok
    assert read(project / "n.txt") == "a\nd"


# --- all or nothing --------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_failing_hunk_leaves_every_file_untouched(
    call: Call, project: Path, app: Path
) -> None:
    write(project / "b.txt", "one\ntwo\n")
    before = snapshot(project)
    patch = """*** Begin Patch
*** Add File: added.txt
+new
*** Update File: b.txt
-one
+ONE
*** Delete File: src/app.py
*** Update File: b.txt
@@
-this line is not there
+x
*** End Patch"""
    outcome = await call("apply_patch", {"patch": patch})
    assert outcome.status == "failed"
    assert outcome.output.startswith("b.txt: hunk 1 of 1 did not apply")
    assert "    this line is not there" in outcome.output
    assert "Nothing was changed" in outcome.output
    assert outcome.error is not None
    assert outcome.error["code"] == "PATCH_FAILED"
    assert snapshot(project) == before
    assert outcome.artifact is None


@pytest.mark.asyncio
async def test_unified_failure_names_the_hunk(call: Call, project: Path, app: Path) -> None:
    write(project / "b.txt", "1\n2\n3\n")
    before = snapshot(project)
    patch = (
        "--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n 1\n-2\n+two\n"
        "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,1 +1,1 @@\n-import sys\n+import re\n"
    )
    outcome = await call("apply_patch", {"patch": patch})
    assert outcome.output.startswith("src/app.py: hunk 1 (@@ -1,1 +1,1 @@) of 1 did not apply")
    assert snapshot(project) == before


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("just some text", "unrecognised patch"),
        ("*** Begin Patch\n*** End Patch", "no file changes"),
        ("*** Begin Patch\n*** Frobnicate File: x\n", "patch line 2: expected '*** Add File:'"),
        ("*** Begin Patch\n*** Add File: x\nno plus\n", "must start with '+'"),
        ("*** Begin Patch\n*** Update File: x\n?odd\n", "hunk lines must start with"),
        ("*** Begin Patch\n*** Update File: x\n*** End Patch", "has no changes"),
        ("--- a/x\n+++ b/x\n@@ bad @@\n", "malformed hunk header"),
        ("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n", "is truncated"),
        ("diff --git a/x b/x\nBinary files a/x and b/x differ\n", "binary changes"),
    ],
)
def test_parse_errors_are_clear(patch: str, message: str) -> None:
    with pytest.raises(PatchError, match=message.replace("*", r"\*").replace("+", r"\+")):
        parse_patch(patch)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("*** Begin Patch\n*** Add File: src/app.py\n+x\n", "cannot add src/app.py: it already"),
        ("*** Begin Patch\n*** Delete File: nope.txt\n", "cannot delete nope.txt: no such file"),
        ("*** Begin Patch\n*** Update File: nope.txt\n-a\n+b\n", "cannot update nope.txt"),
        (
            "*** Begin Patch\n*** Update File: src/app.py\n*** Move to: src/app.py.bak\n"
            "*** Update File: src/app.py\n-import os\n+import re\n",
            "cannot update src/app.py: no such file",
        ),
        (
            "*** Begin Patch\n*** Update File: src/app.py\n@@ def nowhere():\n-x\n+y\n",
            "the context line '@@ def nowhere():' was not found",
        ),
    ],
)
async def test_file_level_errors(
    call: Call, project: Path, app: Path, patch: str, message: str
) -> None:
    before = snapshot(project)
    outcome = await call("apply_patch", {"patch": patch})
    assert outcome.status == "failed"
    assert message in outcome.output
    assert snapshot(project) == before


@pytest.mark.asyncio
async def test_move_onto_an_existing_file_is_refused(call: Call, project: Path, app: Path) -> None:
    write(project / "other.py", "x\n")
    patch = "*** Begin Patch\n*** Update File: src/app.py\n*** Move to: other.py\n"
    outcome = await call("apply_patch", {"patch": patch})
    assert "cannot move src/app.py to other.py: it already exists" in outcome.output


@pytest.mark.asyncio
async def test_input_is_accepted_as_an_alias(call: Call, project: Path) -> None:
    outcome = await call("apply_patch", {"input": "*** Begin Patch\n*** Add File: a.txt\n+a\n"})
    assert outcome.status == "completed", outcome.output
    assert read(project / "a.txt") == "a\n"


def test_apply_hunks_prefers_the_match_nearest_the_line_number() -> None:
    text = "x\nsame\nx\nx\nsame\nx\n"
    parsed = parse_patch("--- a/f\n+++ b/f\n@@ -5,1 +5,1 @@\n-same\n+other\n")
    assert apply_hunks(text, parsed.ops[0].hunks, "f") == "x\nsame\nx\nx\nother\nx\n"


def test_apply_hunks_to_an_empty_file() -> None:
    parsed = parse_patch("--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n")
    assert apply_hunks("", parsed.ops[0].hunks, "f") == "a\nb\n"
