"""The example notebooks run top to bottom offline and match their stored outputs (nbval).

They are validated in a copy (with ``notebooks/conftest.py``, which starts the fake LLM server
and makes the kernels' environment offline), so the run never touches ``notebooks/``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_example_notebooks_pass_nbval(tmp_path: Path) -> None:
    books = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert len(books) >= 6
    for path in [*books, NOTEBOOKS / "conftest.py", NOTEBOOKS / "sanitize.cfg"]:
        shutil.copy(path, tmp_path / path.name)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "-q", "-p", "no:cacheprovider",
         "--nbval-cell-timeout=120", "-W", "ignore::pytest.PytestDeprecationWarning", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=280,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert " passed" in done.stdout
    assert "failed" not in done.stdout.splitlines()[-1]
