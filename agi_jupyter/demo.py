"""``python -m agi_jupyter.demo "question"``: ask one question and stream the answer.

The quickest look at the runtime: it opens (or creates on first write) the store of the current
folder's project, starts a session with the configured default model — the offline fake model
when no provider key is set, which it says — and streams the answer to stdout as it arrives.
"""

from __future__ import annotations

import sys

from agi_jupyter.app import Agi
from agi_jupyter.errors import AgiError


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    prompt = " ".join(args).strip() or "What can you do?"
    try:
        with Agi() as agi:
            if agi.config.default_model_is_fallback:
                print(
                    "[no provider key set: using the offline fake model; set OPENAI_API_KEY or "
                    "ANTHROPIC_API_KEY for a real one]",
                    file=sys.stderr,
                )
            return _stream(agi, prompt)
    except AgiError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 1


def _stream(agi: Agi, prompt: str) -> int:
    final: dict[str, object] = {}
    for event in agi.stream(prompt):
        kind = event["type"]
        if kind == "run.meta":
            print(f"[{event['provider']}:{event['model']}]", file=sys.stderr)
        elif kind == "output.text.delta":
            print(event["delta"], end="", flush=True)
        elif kind == "tool.call.started":
            print(f"\n[tool {event['name']}]", file=sys.stderr)
        elif kind == "run.final":
            final = event["run"]
    print()
    status = final.get("status")
    if status != "succeeded":
        error = final.get("error") or {}
        message = error.get("message") if isinstance(error, dict) else error
        print(f"run {status}: {message}", file=sys.stderr)
        return 1
    usage = final.get("usage") or {}
    print(f"[run {final.get('id')} · {usage}]", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
