"""Wall time of ``agi "hi"`` against ``llm "hi"``, both answered by the same fake server.

The fake LLM server runs in its own process; ``agi`` uses it as the ``fake`` provider
(``AGI_FAKE_LLM_URL``), ``llm`` as an OpenAI-compatible model declared in
``extra-openai-models.yaml`` (under a temporary ``LLM_USER_PATH``). Both stream the same Chat
Completions answer and log it to their SQLite database. Each round runs both commands from
process start to exit, alternating; the report gives medians and minimums, plus ``--version``
(interpreter start and imports only) as a floor.

``llm`` is not a dependency of this project; install it anywhere, for example
``uv venv /tmp/llm && uv pip install --python /tmp/llm/bin/python llm``, and pass its path:

    .venv/bin/python benchmarks/cli_hi.py --llm /tmp/llm/bin/llm [--rounds 15] [--write]

``--write`` replaces the "CLI" section of benchmarks/README.md with the figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGI = str(Path(sys.executable).with_name("agi"))
README = Path(__file__).with_name("README.md")
SECTION = '## CLI: `agi "hi"` vs `llm "hi"`'
EXPECTED = "(offline fake model) echo: hi"


def start_fake_server() -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "agi_jupyter.testing.fake_llm", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    match = re.match(r"FAKE_LLM_URL=(\S+)", line)
    if not match:
        server.kill()
        raise SystemExit(f"the fake server did not start: {line!r}")
    return server, match.group(1)


def environments(url: str, folder: Path) -> dict[str, dict[str, str]]:
    """Isolated environments: nothing from the real home is read or written."""
    llm_home = folder / "llm"
    llm_home.mkdir()
    (llm_home / "extra-openai-models.yaml").write_text(
        f'- model_id: fake-echo\n  model_name: echo\n  api_base: "{url}/v1"\n  api_key_name: fake\n'
    )
    (llm_home / "keys.json").write_text('{"fake": "fake-key"}\n')
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    base["HOME"] = str(folder / "home")
    return {
        "agi": {**base, "AGI_CONFIG_DIR": str(folder / "agi"), "AGI_FAKE_LLM_URL": url + "/v1"},
        "llm": {**base, "LLM_USER_PATH": str(llm_home)},
    }


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command} failed ({done.returncode}): {done.stderr.strip()}")
    return elapsed, done.stdout.strip()


def measure(llm: str, rounds: int) -> dict[str, list[float]]:
    server, url = start_fake_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            project = folder / "project"
            project.mkdir()
            env = environments(url, folder)
            commands = {
                'agi "hi"': ([AGI, "hi"], env["agi"]),
                'llm "hi"': ([llm, "-m", "fake-echo", "hi"], env["llm"]),
                "agi --version": ([AGI, "--version"], env["agi"]),
                "llm --version": ([llm, "--version"], env["llm"]),
            }
            for name, (command, command_env) in commands.items():  # warm up, check the answer
                _, out = timed(command, command_env, project)
                if '"hi"' in name and out != EXPECTED:
                    raise SystemExit(f"{name} answered {out!r}, expected {EXPECTED!r}")
            times: dict[str, list[float]] = {name: [] for name in commands}
            for _ in range(rounds):
                for name, (command, command_env) in commands.items():
                    times[name].append(timed(command, command_env, project)[0])
            return times
    finally:
        server.terminate()
        server.wait(timeout=10)


def report(times: dict[str, list[float]], llm_version: str) -> str:
    rounds = len(next(iter(times.values())))
    rows = [
        "| command | median | min | max |",
        "|---|---|---|---|",
        *(
            f"| `{name}` | {statistics.median(t) * 1000:.0f} ms | {min(t) * 1000:.0f} ms "
            f"| {max(t) * 1000:.0f} ms |"
            for name, t in times.items()
        ),
    ]
    ratio = statistics.median(times['agi "hi"']) / statistics.median(times['llm "hi"'])
    machine = f"Python {platform.python_version()}, {os.cpu_count()} CPUs"
    return "\n".join(
        [
            SECTION,
            "",
            "`benchmarks/cli_hi.py`: process start to exit, both answered by the same fake server "
            f"(its own process), {rounds} alternating rounds after a warm-up; {machine}; "
            f"{llm_version}.",
            "",
            *rows,
            "",
            f'`agi "hi"` / `llm "hi"` (medians): **{ratio:.2f}x**.',
            "",
            "```sh",
            "uv venv /tmp/llm && uv pip install --python /tmp/llm/bin/python llm   # once",
            ".venv/bin/python benchmarks/cli_hi.py --llm /tmp/llm/bin/llm --write",
            "```",
            "",
            "Both pay for importing the `openai` SDK (about 0.3 s here). `agi --version` is",
            "the floor of every `agi` command (interpreter, click, rich, the config module);",
            "`agi` loads the runtime, the store and the provider only for commands that need",
            "them. `llm` loads its plugins at start, so even `llm --version` costs about as",
            "much as a prompt. Max values move with other jobs on the machine; compare medians.",
            "",
        ]
    )


def write_section(text: str) -> None:
    current = README.read_text() if README.exists() else "# Benchmarks\n"
    start = current.find(SECTION)
    if start < 0:
        updated = current.rstrip("\n") + "\n\n" + text
    else:
        end = current.find("\n## ", start + len(SECTION))
        updated = current[:start] + text + ("" if end < 0 else "\n" + current[end + 1 :])
    README.write_text(updated)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", default=shutil.which("llm"), help="the llm executable")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    args = parser.parse_args()
    if not args.llm:
        raise SystemExit("llm is not installed: pass --llm PATH (see this script's docstring)")
    llm_version = subprocess.run(
        [args.llm, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    text = report(measure(args.llm, args.rounds), llm_version)
    print(text)
    if args.write:
        write_section(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
