"""Fixtures of the notebook tests: a project with a notebook, an ``Agi`` on the fake server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer

MakeAgi = Callable[..., Agi]
CELLS = [
    ("intro", "markdown", "# Analysis"),
    ("load", "code", "x = 20\nprint('loaded')"),
    ("total", "code", "x + 1"),
]


def write_notebook(path: Path, cells: list[tuple[str, str, str]] = CELLS) -> bytes:
    """A notebook with fixed cell ids, written by nbformat; returns its bytes."""
    book = nbformat.v4.new_notebook()
    makers = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}
    book.cells = [makers[kind](source, id=cell_id) for cell_id, kind, source in cells]
    book.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(book, path)
    return path.read_bytes()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    (folder / ".agi").mkdir(parents=True)
    return folder


@pytest.fixture
def notebook(project: Path) -> Path:
    path = project / "analysis.ipynb"
    write_notebook(path)
    return path


@pytest.fixture
def make_agi(project: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> Iterator[MakeAgi]:
    env = {
        "HOME": str(tmp_path / "home"),
        "OPENAI_API_KEY": "sk-test-openai-secret-0001",
        "OPENAI_BASE_URL": fake_llm.openai_base_url,
        "AGI_FAKE_LLM_URL": fake_llm.openai_base_url,
        "AGI_REVIEW_MODE": "auto",  # (see tests/conftest.py)
    }
    made: list[Agi] = []

    def make(**kwargs: Any) -> Agi:
        config = {"retry_backoff": [0.01], "default_model": "fake:echo", **kwargs.pop("config", {})}
        agi = Agi(project, env={**env, **kwargs.pop("env", {})}, config=config, **kwargs)
        made.append(agi)
        return agi

    yield make
    for agi in made:
        agi.close()
