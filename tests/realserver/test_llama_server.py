"""Against a real llama.cpp ``llama-server`` (SmolLM2-135M-Instruct, greedy; see
``llama_server.py``): what a user of a local model sees is what the server sent.

- the text streamed through ``Agi`` is the server's own (the same request sent raw with httpx2
  gets the same text), and the usage recorded is the server's, its cost unknown (no price);
- an answer cut at ``max_output_tokens`` is marked truncated (the output limit);
- a prompt larger than the context window (``-c``) is one request, refused with a 400 and
  reported as a full context window with its tokens; an answer that fills the window is
  truncated as a full window, not as the output limit;
- the server killed mid-stream (SIGKILL) and started again: the run retries, the stream says
  what it drops (``output.text.reset``), and the answer is stored once;
- tools offered to a model whose chat template has no place for them: one notice per session
  (``/props`` ``chat_template_caps``).
"""

from __future__ import annotations

import re
from typing import Any

import httpx2
import pytest

from agi_jupyter.app import Agi
from agi_jupyter.runtime.agent_loop import TOOLS_UNSUPPORTED
from tests.realserver.conftest import LOCAL, MakeLlamaAgi, stream_beside_raw, view_of
from tests.realserver.llama_server import CONTEXT, LlamaServer, chat

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("llama-server")]


def prompt_tokens(server: LlamaServer, system: str, prompt: str) -> int:
    """The tokens of a request's prompt as the server counts them: its chat template applied
    (``POST /apply-template``), then tokenized (``POST /tokenize``)."""
    templated = httpx2.post(
        f"{server.root}/apply-template", json={"messages": chat(system, prompt)}, timeout=30
    ).json()["prompt"]
    counted = httpx2.post(
        f"{server.root}/tokenize", json={"content": templated, "parse_special": True}, timeout=30
    ).json()
    return len(counted["tokens"])


def prompt_of(server: LlamaServer, system: str, tokens: int) -> str:
    """A user message that makes a prompt of exactly ``tokens`` tokens: a count the model goes
    on with (so an answer is long enough to fill the window), after as many " hello" (one
    token each) as it takes to be exact."""

    def prompt(numbers: int, hellos: int) -> str:
        count = " ".join(str(n) for n in range(1, numbers + 1))
        return "hello " * hellos + f"Count on from the last number, forever: {count}"

    numbers = tokens // 4
    counted = prompt_tokens(server, system, prompt(numbers, 0))
    while counted > tokens - 8:  # a little under: the hellos make up the rest
        numbers = numbers * (tokens - 8) // counted
        counted = prompt_tokens(server, system, prompt(numbers, 0))
    hellos = tokens - counted
    for _ in range(5):
        counted = prompt_tokens(server, system, prompt(numbers, hellos))
        if counted == tokens:
            return prompt(numbers, hellos)
        hellos -= counted - tokens
    raise AssertionError(f"no prompt of {tokens} tokens (last: {counted})")


def system_prompt(agi: Agi) -> str:
    """The system prompt a ``general`` run of this project sends (recorded on the run)."""
    run = agi.ask("Hi.", agent="general", model=LOCAL).run
    assert run.system_prompt is not None
    return run.system_prompt


def test_the_streamed_text_is_the_servers_own(
    llama: LlamaServer, make_llama_agi: MakeLlamaAgi
) -> None:
    run = stream_beside_raw(make_llama_agi(llama), llama)
    events, streamed, result, raw = run.events, run.text, run.result, run.raw
    assert streamed == raw.text  # greedy: the same request gets the same answer
    usage = result.run.usage
    assert (usage["input_tokens"], usage["output_tokens"]) == (
        raw.usage["prompt_tokens"],
        raw.usage["completion_tokens"],
    )
    assert result.run.cost_usd is None  # a local model has no price: unknown, never $0
    assert "cost ?" in view_of(events).footer()


def test_an_answer_cut_at_the_output_limit_is_truncated(
    llama: LlamaServer, make_llama_agi: MakeLlamaAgi
) -> None:
    agi = make_llama_agi(llama, max_output_tokens=5)
    session = agi.new_session(agent="general", model=LOCAL)
    events = list(agi.stream("Write a long story about the sea.", session=session.id))
    result = agi.result(events[-1]["run_id"])
    assert result.run.usage["output_tokens"] == 5
    assert result.run.usage["truncated"] is True
    meta = agi.history(session.id, view="full")[-1].meta
    assert (meta["stop_reason"], meta["truncated"]) == ("length", True)
    assert "context_full" not in meta
    assert "truncated: output token limit" in view_of(events).footer()


def test_a_prompt_larger_than_the_window_is_one_request_reported_as_a_full_window(
    llama: LlamaServer, make_llama_agi: MakeLlamaAgi
) -> None:
    agi = make_llama_agi(llama)
    prompt = prompt_of(llama, system_prompt(agi), CONTEXT + 100)
    refusals_before = llama.log_text().count("exceeds the available context size")
    result = agi.ask(prompt, agent="general", model=LOCAL)
    assert result.run.status == "failed"
    assert result.run.attempt == 1
    error = result.run.error or {}
    assert error["code"] == "PROVIDER_HTTP_ERROR"
    assert "HTTP 400" in error["message"]
    assert "context window is full" in error["message"]
    said = re.search(r"the request has (\d+) tokens, the window (\d+) tokens", error["message"])
    assert said is not None
    assert int(said[1]) > CONTEXT  # as the server counted them
    assert int(said[2]) == CONTEXT
    assert "output" not in error["message"]
    # sent once: not retried by the adapter, by the run, nor by an SDK
    assert llama.log_text().count("exceeds the available context size") == refusals_before + 1


def test_an_answer_that_fills_the_window_is_truncated_as_a_full_window(
    llama: LlamaServer, make_llama_agi: MakeLlamaAgi
) -> None:
    """A prompt 6 tokens short of the window: the server stops the answer when the window is
    full (llama.cpp shifts no context by default), long before the output limit."""
    agi = make_llama_agi(llama, max_output_tokens=400)
    prompt = prompt_of(llama, system_prompt(agi), CONTEXT - 6)
    session = agi.new_session(agent="general", model=LOCAL)
    events = list(agi.stream(prompt, session=session.id))
    result = agi.result(events[-1]["run_id"])
    assert result.run.status == "succeeded"
    usage = result.run.usage
    assert usage["input_tokens"] == CONTEXT - 6
    assert usage["input_tokens"] + usage["output_tokens"] >= CONTEXT - 1
    meta = agi.history(session.id, view="full")[-1].meta
    assert (meta["truncated"], meta["context_full"]) == (True, True)
    assert meta["context_window"] == CONTEXT
    used = meta["context_tokens"]
    assert used == usage["input_tokens"] + usage["output_tokens"]
    footer = view_of(events).footer()
    assert f"truncated: the context window is full ({used} of {CONTEXT} tokens)" in footer


def test_tools_the_template_cannot_take_are_said_once_per_session(
    llama: LlamaServer, make_llama_agi: MakeLlamaAgi
) -> None:
    props = httpx2.get(f"{llama.root}/props", timeout=10).json()
    assert props["chat_template_caps"]["supports_tools"] is False  # SmolLM2's template
    agi = make_llama_agi(llama)
    session = agi.new_session(agent="plan", model=LOCAL)
    first = list(agi.stream("Which files are here?", session=session.id))
    notices = [e for e in first if e["type"] == "notice"]
    assert [n["code"] for n in notices] == [TOOLS_UNSUPPORTED]
    assert "llama-server /props" in notices[0]["message"]
    second = list(agi.stream("And now?", session=session.id))
    assert "notice" not in [e["type"] for e in second]


def test_the_server_killed_mid_stream_and_restarted(
    own_llama: LlamaServer, make_llama_agi: MakeLlamaAgi
) -> None:
    """SIGKILL after the first deltas: the attempt fails as a disconnect, the run is queued
    again and, once the server is back on its port, streams its answer again after an
    ``output.text.reset``; a consumer that drops its text at each reset has the stored
    answer, stored once."""
    agi = make_llama_agi(own_llama, max_output_tokens=200, retry_backoff=[1.0, 2.0, 4.0])
    session = agi.new_session(agent="general", model=LOCAL)
    shown: list[str] = []
    deltas = 0
    resets: list[dict[str, Any]] = []
    killed = restarted = False
    for event in agi.stream("Count from 1 to 100.", session=session.id):
        if event["type"] == "output.text.delta":
            shown.append(event["delta"])
            deltas += 1
            if deltas == 3 and not killed:
                own_llama.kill()
                killed = True
        elif event["type"] == "output.text.reset":
            resets.append(event)
            shown.clear()
        elif event["type"] == "run.status" and event["status"] == "queued" and not restarted:
            own_llama.start()  # the same port, waits for /health
            restarted = True
        run_id = event["run_id"]
    assert killed
    assert restarted
    run = agi.run(run_id)
    assert run.status == "succeeded"
    assert run.attempt >= 2
    assert resets  # the first attempt's text was taken back, once or once per attempt
    assert resets[0]["discarded_chars"] > 0
    answers = [m for m in agi.history(session.id, view="full") if m.role == "assistant"]
    kept = [m for m in answers if not m.meta.get("partial")]
    assert len(kept) == 1  # the answer stored once
    assert "".join(shown) == kept[0].text == agi.result(run_id).text
    assert [m.role for m in agi.history(session.id)].count("user") == 1
