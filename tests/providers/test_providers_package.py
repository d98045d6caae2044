"""The package surface: ``__all__`` and no SDK import at package import."""

from __future__ import annotations

import subprocess
import sys

import pytest

import agi_jupyter.providers as providers


def test_all_names_exist() -> None:
    assert sorted(providers.__all__) == providers.__all__
    for name in providers.__all__:
        assert hasattr(providers, name), name


@pytest.mark.slow
def test_import_does_not_import_an_sdk() -> None:
    code = (
        "import sys, agi_jupyter.providers, agi_jupyter.providers.registry;"
        "loaded = [m for m in ('openai', 'anthropic', 'httpx2', 'agi_jupyter.testing') "
        "if m in sys.modules];"
        "print(','.join(loaded))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == ""
