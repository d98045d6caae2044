"""The notebook document over the nbformat file: hashes, preconditions, receipts, outlines."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nbformat
import pytest

from agi_jupyter.notebook import HeadlessAccess, NotebookError, source_hash
from agi_jupyter.notebook.diff import cell_diff
from agi_jupyter.notebook.document import NotebookDocument
from agi_jupyter.notebook.file import FileBackend
from agi_jupyter.notebook.model import canonical_bytes, cell_views, parse
from agi_jupyter.notebook.outline import MAX_CHARS, outline
from tests.notebook.conftest import write_notebook


def document(project: Path, name: str = "analysis.ipynb") -> NotebookDocument:
    access = HeadlessAccess()
    return asyncio.run(access.open(access.locate(project, name)))


def cells_of(path: Path) -> list[tuple[str, str, str]]:
    book = nbformat.read(path, as_version=4)
    return [(c.id, c.cell_type, c.source) for c in book.cells]


def test_source_hash_is_the_sha256_prefix_of_the_utf8_source() -> None:
    import hashlib

    assert source_hash("x = 1") == hashlib.sha256(b"x = 1").hexdigest()[:16]
    assert source_hash("é") != source_hash("e")
    assert len(source_hash("")) == 16


def test_read_gives_ids_hashes_counts_outputs_and_stale(project: Path, notebook: Path) -> None:
    book = nbformat.read(notebook, as_version=4)
    book.cells[1].execution_count = 1
    book.cells[1].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="loaded\n"),
        nbformat.v4.new_output("display_data", data={"image/png": "iVBO", "text/plain": "<Fig>"}),
    ]
    book.cells[2].execution_count = 2
    nbformat.write(book, notebook)
    state = asyncio.run(document(project).read(history={1: "x = 20\nprint('loaded')", 2: "x+1"}))
    intro, load, total = state.cells
    assert (intro.id, intro.cell_type, intro.stale) == ("intro", "markdown", None)
    assert load.source_hash == source_hash("x = 20\nprint('loaded')")
    assert load.outputs == ["stdout: loaded", "display: [image/png] <Fig>"]
    assert (load.execution_count, load.stale) == (1, False)
    assert total.stale is True, "its source differs from In[2]"
    assert cell_views(state.notebook, None)[1].stale is None, "no kernel history: unknown"
    assert state.backend == "file"
    assert state.content == notebook.read_bytes()


def test_insert_edit_delete_answer_with_receipts(project: Path, notebook: Path) -> None:
    doc = document(project)
    inserted = asyncio.run(doc.insert("code", "y = x * 2", after_cell_id="load"))
    new_id = inserted.receipt.cell_id
    assert inserted.receipt.landed
    assert (inserted.receipt.index, inserted.receipt.source_hash) == (2, source_hash("y = x * 2"))
    edited = asyncio.run(doc.edit("total", source_hash("x + 1"), "x + y"))
    assert edited.receipt.landed
    assert edited.receipt.source_hash == source_hash("x + y")
    deleted = asyncio.run(doc.delete("intro", source_hash("# Analysis")))
    assert deleted.receipt.landed
    assert cells_of(notebook) == [
        ("load", "code", "x = 20\nprint('loaded')"),
        (new_id, "code", "y = x * 2"),
        ("total", "code", "x + y"),
    ]
    assert deleted.after == notebook.read_bytes()
    assert edited.before == inserted.after
    nbformat.validate(nbformat.read(notebook, as_version=4))


def test_a_wrong_hash_is_refused_and_nothing_is_written(project: Path, notebook: Path) -> None:
    before = notebook.read_bytes()
    doc = document(project)
    with pytest.raises(NotebookError) as info:
        asyncio.run(doc.edit("total", source_hash("something else"), "x + 2"))
    assert info.value.code == "HASH_MISMATCH"
    assert source_hash("x + 1") in info.value.message
    with pytest.raises(NotebookError) as missing:
        asyncio.run(doc.delete("nope", source_hash("x")))
    assert missing.value.code == "CELL_NOT_FOUND"
    assert notebook.read_bytes() == before


def test_a_user_edit_between_read_and_write_is_refused(project: Path, notebook: Path) -> None:
    doc = document(project)
    seen = {c.id: c.source_hash for c in asyncio.run(doc.read()).cells}
    write_notebook(
        notebook,
        [
            ("intro", "markdown", "# Analysis"),
            ("load", "code", "x = 21  # the user's fix"),
            ("total", "code", "x + 1"),
        ],
    )
    after_user = notebook.read_bytes()
    with pytest.raises(NotebookError) as info:
        asyncio.run(doc.edit("load", seen["load"], "x = 0"))
    assert info.value.code == "HASH_MISMATCH"
    assert notebook.read_bytes() == after_user
    edited = asyncio.run(doc.edit("total", seen["total"], "x + 100"))
    assert edited.receipt.landed, "the other cell did not change: its edit goes through"
    assert ("load", "code", "x = 21  # the user's fix") in cells_of(notebook)


def test_a_file_changed_on_disk_during_a_change_is_not_written(
    project: Path, notebook: Path
) -> None:
    class RacingFile(FileBackend):
        """The file, with another writer saving the notebook right after each read."""

        def _load(self):  # type: ignore[no-untyped-def]
            loaded = super()._load()
            self.path.write_bytes(self.path.read_bytes().replace(b"# Analysis", b"# Mine"))
            return loaded

    racing = RacingFile(project.resolve(), notebook.resolve(), "analysis.ipynb")
    doc = NotebookDocument(racing, "analysis.ipynb")
    with pytest.raises(NotebookError) as info:
        asyncio.run(doc.insert("code", "print(1)"))
    assert info.value.code == "NOTEBOOK_CHANGED_ON_DISK"
    assert next(c[2] for c in cells_of(notebook)) == "# Mine"
    assert len(cells_of(notebook)) == 3


def test_restore_writes_the_snapshot_byte_for_byte(project: Path, notebook: Path) -> None:
    original = notebook.read_bytes().replace(b'"cells": [', b'"cells":   [')  # odd spacing
    notebook.write_bytes(original)
    doc = document(project)
    asyncio.run(doc.insert("markdown", "added", index=0))
    assert notebook.read_bytes() != original
    restored = asyncio.run(doc.restore(original))
    assert notebook.read_bytes() == original
    assert restored.receipt.landed


def test_old_notebooks_without_ids_get_stable_ids_and_are_upgraded_on_write(
    project: Path,
) -> None:
    book = nbformat.v4.new_notebook()
    book.nbformat_minor = 4
    book.cells = [nbformat.v4.new_code_cell("a = 1"), nbformat.v4.new_code_cell("b = 2")]
    raw = json.loads(nbformat.writes(book))
    for cell in raw["cells"]:
        cell.pop("id", None)
    path = project / "old.ipynb"
    path.write_text(json.dumps(raw))
    doc = document(project, "old.ipynb")
    assert [c.id for c in asyncio.run(doc.read()).cells] == ["cell-0", "cell-1"]
    assert "id" not in path.read_text(), "reading writes nothing"
    asyncio.run(doc.edit("cell-1", source_hash("b = 2"), "b = 3"))
    upgraded = nbformat.read(path, as_version=4)
    assert upgraded.nbformat_minor >= 5
    assert [c.id for c in upgraded.cells] == ["cell-0", "cell-1"]


def test_insert_rejects_a_bad_index_and_a_missing_anchor(project: Path, notebook: Path) -> None:
    doc = document(project)
    with pytest.raises(NotebookError) as bad:
        asyncio.run(doc.insert("code", "x", index=9))
    assert bad.value.code == "INDEX_OUT_OF_RANGE"
    with pytest.raises(NotebookError) as anchor:
        asyncio.run(doc.insert("code", "x", after_cell_id="gone"))
    assert anchor.value.code == "CELL_NOT_FOUND"


def test_paths_outside_the_project_and_non_notebooks_are_refused(project: Path) -> None:
    access = HeadlessAccess()
    with pytest.raises(Exception, match="outside the project"):
        access.locate(project, "../elsewhere.ipynb")
    with pytest.raises(NotebookError, match="not a notebook"):
        access.locate(project, "data.csv")


def test_the_cell_diff_names_cells_and_output_changes(notebook: Path) -> None:
    before = parse(notebook.read_bytes())
    after = parse(notebook.read_bytes())
    after["cells"][2]["source"] = "x + 2"
    after["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "hi\n"}]
    del after["cells"][0]
    patch, counts = cell_diff(before, after, "analysis.ipynb")
    assert counts == {"cells_added": 0, "cells_edited": 1, "cells_deleted": 1, "outputs_changed": 1}
    assert "--- a/analysis.ipynb [cell total code]" in patch
    assert "-x + 1\n+x + 2\n" in patch
    assert "+stdout: hi" in patch


def test_the_outline_is_bounded_and_keeps_the_active_cell(notebook: Path) -> None:
    small = outline("a.ipynb", cell_views(parse(notebook.read_bytes())), "total")
    assert "2 total code: x + 1 [ ] <- active cell" in small
    assert "1 load code: x = 20 [ ]" in small
    many = [(f"c{i}", "code", f"value_{i} = {i}  # " + "x" * 60) for i in range(200)]
    path = notebook.parent / "big.ipynb"
    write_notebook(path, many)
    big = outline("big.ipynb", cell_views(parse(path.read_bytes())), "c150")
    assert len(big) < MAX_CHARS + 400
    assert "c150 code" in big
    assert "cells above not shown" in big
    assert "cells below not shown" in big


def test_canonical_bytes_are_what_nbformat_writes(notebook: Path) -> None:
    assert canonical_bytes(parse(notebook.read_bytes())) == notebook.read_bytes()
