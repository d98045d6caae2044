"""Re-execute the example notebooks offline and store their outputs (what nbval compares).

    .venv/bin/python notebooks/regenerate.py [NAME.ipynb ...]

Uses the same offline environment as ``conftest.py`` (a fake LLM server in this process, no
provider keys, a temporary HOME) and an emptied ``notebooks/.agi`` store.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from agi_jupyter.testing import FakeLLMServer  # noqa: E402

from conftest import PROVIDER_KEYS, offline_environment  # noqa: E402


def main(names: list[str]) -> int:
    paths = [HERE / n for n in names] if names else sorted(HERE.glob("*.ipynb"))
    shutil.rmtree(HERE / ".agi", ignore_errors=True)
    shutil.rmtree(HERE / "scratch", ignore_errors=True)
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as home:
        for key in PROVIDER_KEYS:
            os.environ.pop(key, None)
        os.environ.update(offline_environment(Path(home), server.url))
        for path in paths:
            book = nbformat.read(path, as_version=4)
            client = NotebookClient(
                book,
                timeout=120,
                kernel_name="python3",
                record_timing=False,  # no timestamps: a notebook re-run from replays is unchanged
                resources={"metadata": {"path": str(HERE)}},
            )
            client.execute()
            nbformat.write(book, path)
            print(f"executed {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
