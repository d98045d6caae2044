"""Run by test_lowest_versions.py in a venv holding the lowest supported versions: a
tool-using run per wire API, read by the HTTP reader and by the SDKs, against the fake LLM."""

import tempfile
from pathlib import Path

from agi_jupyter import Agi
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn

MODELS = ("openai:gpt-5-mini", "openai-chat:gpt-4o-mini", "anthropic:claude-haiku-4-5")

with FakeLLMServer() as fake, tempfile.TemporaryDirectory() as tmp:
    project = Path(tmp) / "p"
    project.mkdir()
    env = {
        "HOME": tmp,
        "OPENAI_API_KEY": "sk-lowest-0001",
        "OPENAI_BASE_URL": fake.openai_base_url,
        "ANTHROPIC_API_KEY": "sk-lowest-0002",
        "ANTHROPIC_BASE_URL": fake.anthropic_base_url,
        "AGI_REVIEW_MODE": "auto",
    }
    for wire in ("http", "sdk"):
        agi = Agi(project, env=env, config={"wire": wire})
        for model in MODELS:
            listed = Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})])
            fake.enqueue(listed, Turn(text="all good"))
            session = agi.new_session(model=model, agent="build")
            run = agi.ask("list", session=session.id).run
            assert run.status == "succeeded", (wire, model, run.error)
            assert agi.history(session.id)[-1].text == "all good"
            print(wire, model, "ok")
        agi.close()
