"""README.md's CLI section is the real ``--help`` output, and its main job is an ``agi`` command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_cli_section_matches_the_help_output() -> None:
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "cli_reference.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert check.returncode == 0, check.stderr


def test_the_check_fails_when_the_readme_drifts(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    text = (ROOT / "README.md").read_text().replace("Show a session and its conversation.", "old")
    readme.write_text(text)

    check = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "cli_reference.py"),
            "--check",
            "--readme",
            str(readme),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert check.returncode == 1
    assert "differs from `agi --help`" in check.stderr


def test_quickstart_runs_the_agi_command() -> None:
    script = (ROOT / "scripts" / "quickstart.sh").read_text()
    readme = (ROOT / "README.md").read_text()

    assert 'exec .venv/bin/agi "${@:-What can you do?}"' in script
    assert 'bash scripts/quickstart.sh "What can you do?"   # install, then run: agi' in readme
