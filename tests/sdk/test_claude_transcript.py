"""The claude adapter's reading of the SDK's messages, without a CLI.

The messages are real ``claude_agent_sdk`` dataclasses, shaped as claude-agent-sdk 0.2.187's
bundled CLI (2.1.330) sends them against the fake LLM server (one ``AssistantMessage`` per
content block, after the block's stream events; a ``status`` system message carrying the
uuids of the user messages a request answers; a running ``total_cost_usd``). They go through
``ClaudeStream`` (mapping, tool ids, queued messages, state) into a real ``CanonicalHistory``
over a real store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk")  # required in CI: see test_claude_client.py

from claude_agent_sdk import (
    AssistantMessage,
    ContentBlock,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from agi_jupyter.agents import BUILTIN_AGENTS
from agi_jupyter.config import Config
from agi_jupyter.errors import ProviderDisconnected, ProviderError, ProviderHTTPError
from agi_jupyter.records import (
    JSON,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from agi_jupyter.runtime.agent_loop import AttemptResult
from agi_jupyter.runtime.bus import EventBus
from agi_jupyter.runtime.emitter import RunEmitter
from agi_jupyter.runtime.store_thread import StoreThread
from agi_jupyter.sdk.base import (
    AssistantText,
    AssistantThinking,
    HistoryEvent,
    SdkRunParams,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnMeta,
    UserInput,
)
from agi_jupyter.sdk.claude.client import result_error
from agi_jupyter.sdk.claude.stream import ClaudeStream
from agi_jupyter.sdk.claude.tools import ToolNameMap, ToolUseIds
from agi_jupyter.sdk.history import CanonicalHistory
from agi_jupyter.store import open_store
from agi_jupyter.store.sqlite import SqliteStore
from agi_jupyter.tools import Redactor, ToolOutcome

SID = "133f3dd6-01ec-4dc0-9dfe-c567319d0b4b"
MODEL = "claude-haiku-4-5"


# --- the messages, as the CLI sends them ----------------------------------------------------


def init(session_id: str = SID) -> SystemMessage:
    data = {"type": "system", "subtype": "init", "session_id": session_id, "model": MODEL}
    return SystemMessage(subtype="init", data=data)


def status(*uuids: str) -> SystemMessage:
    data: JSON = {"type": "system", "subtype": "status", "status": "requesting"}
    if uuids:
        data["user_message_uuids"] = list(uuids)
    return SystemMessage(subtype="status", data=data)


def se(event: JSON, *, uuids: list[str] | None = None) -> StreamEvent:
    return StreamEvent(uuid="u", session_id=SID, event=event, user_message_uuids=uuids)


def streamed_text(*chunks: str, index: int = 0) -> list[StreamEvent]:
    events = [
        se(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
        )
    ]
    events += [
        se(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": c},
            }
        )
        for c in chunks
    ]
    return events


def assistant(*blocks: ContentBlock, model: str = MODEL, error: Any = None) -> AssistantMessage:
    return AssistantMessage(content=list(blocks), model=model, error=error, session_id=SID)


def result(
    *,
    total: float | None,
    usage: tuple[int, int] = (185, 7),
    is_error: bool = False,
    subtype: str = "success",
    num_turns: int = 1,
    uuids: list[str] | None = None,
    **extra: Any,
) -> ResultMessage:
    return ResultMessage(
        subtype=subtype,
        duration_ms=10,
        duration_api_ms=5,
        is_error=is_error,
        num_turns=num_turns,
        session_id=SID,
        total_cost_usd=total,
        usage={
            "input_tokens": usage[0],
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": usage[1],
        },
        user_message_uuids=uuids,
        **extra,
    )


MESSAGE_START = se({"type": "message_start", "message": {"id": "msg_1", "content": []}})
MESSAGE_END = [
    se({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
    se({"type": "message_stop"}),
]


# --- the harness ----------------------------------------------------------------------------


@dataclass
class Harness:
    store: SqliteStore
    stream: ClaudeStream
    ids: ToolUseIds
    session_id: str
    run_id: str
    history_events: list[HistoryEvent] = field(default_factory=list)
    live: list[dict[str, Any]] = field(default_factory=list)
    states: list[JSON] = field(default_factory=list)
    attempt: Callable[[], Awaitable[AttemptResult]] | None = None
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)

    def feed(self, *messages: object) -> list[bool]:
        """Feed the messages as the client does, on the harness's own loop."""
        return self.loop.run_until_complete(self.afeed(*messages))

    async def afeed(self, *messages: object) -> list[bool]:
        """``feed`` for a test running on its own loop; each message in a turn of the loop of
        its own, as the client reads them (deltas of one turn would go out as one)."""
        done = []
        for message in messages:
            done.append(await self.stream.feed(message))
            await asyncio.sleep(0)
        return done

    def result(self) -> AttemptResult:
        assert self.attempt is not None
        return self.loop.run_until_complete(self.attempt())

    def roles(self) -> list[str]:
        return [m.role for m in self.store.list_messages(self.session_id)]

    def types(self) -> list[str]:
        return [e["type"] for e in self.live]


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Any]:
    stores: list[SqliteStore] = []
    harnesses: list[Harness] = []
    threads = StoreThread()

    def make(state: JSON | None = None, tools: tuple[str, ...] = ("fs.read",)) -> Harness:
        project = tmp_path / f"proj{len(stores)}"
        store = open_store(project)
        stores.append(store)
        session = store.create_session(sdk="claude", provider="anthropic", model=MODEL)
        run = store.create_run(session.id, provider="anthropic", model=MODEL)
        bus = EventBus()
        emitter = RunEmitter(
            store, bus, run_id=run.id, session_id=session.id, persist_deltas=False, last_seq=0
        )
        history = CanonicalHistory(
            store,
            emitter,
            run,
            stored=threads.call,
            sdk="claude",
            redactor=Redactor({}),
            max_iterations=10,
        )
        events: list[HistoryEvent] = []

        async def on_history(event: HistoryEvent) -> None:
            events.append(event)
            await history(event)

        async def save_state(state: JSON) -> None:
            harness.states.append(state)

        async def call_tool(tool_call_id: str, name: str, arguments: JSON) -> ToolOutcome:
            raise AssertionError("the CLI runs the tools in these tests")

        ids = ToolUseIds()
        harness = Harness(store, None, ids, session.id, run.id, events)  # type: ignore[arg-type]
        harnesses.append(harness)
        bus.subscribe_run(run.id, harness.live.append)
        params = SdkRunParams(
            run=run,
            session=session,
            agent=BUILTIN_AGENTS["plan"],
            config=Config(project=project),
            project=project,
            prompt="read a.txt",
            system_prompt="You are a test.",
            tools=[],
            max_turns=10,
            on_history=on_history,
            on_event=emitter.emit,
            call_tool=call_tool,
            state=dict(state or {}),
            save_state=save_state,
            on_handle=lambda handle: None,
            emitter=emitter,
            result=history.result,
        )
        harness.attempt = history.result
        harness.stream = ClaudeStream(params, ToolNameMap(list(tools)), ids)
        return harness

    yield make
    threads.close()
    for harness in harnesses:
        harness.loop.close()
    for store in stores:
        store.close()


# --- tests ----------------------------------------------------------------------------------


def test_claude_plain_answer_streams_once_and_stores_meta(harness: Any) -> None:
    h = harness()
    done = h.feed(
        init(),
        status(),
        MESSAGE_START,
        *streamed_text("Hel", "lo"),
        assistant(TextBlock("Hello")),  # the finished block repeats the streamed text
        *MESSAGE_END,
        result(total=0.0002, usage=(185, 7)),
    )
    assert done == [False] * (len(done) - 1) + [True]
    assert h.history_events == [
        AssistantText(text="Hel"),
        AssistantText(text="lo"),
        TurnMeta(
            provider="anthropic",
            model=MODEL,
            input_tokens=185,
            output_tokens=7,
            cost_usd=0.0002,
            stop_reason="success",
            extra={"claude": {"session_id": SID, "num_turns": 1}},
        ),
        TurnDone(),
    ]
    (message,) = h.store.list_messages(h.session_id)
    assert message.role == "assistant"
    assert message.parts == [TextPart(text="Hello")]
    assert message.meta["provider"] == "anthropic"
    assert message.meta["model"] == MODEL
    assert message.meta["usage"] == {"input_tokens": 185, "output_tokens": 7}
    assert message.meta["cost_usd"] == pytest.approx(0.0002)
    assert message.meta["sdk"] == "claude"
    assert message.meta["claude"] == {"session_id": SID, "num_turns": 1}
    assert h.types() == [
        "iteration",
        "output.text.delta",
        "output.text.delta",
        "usage",
        "output.text.done",
        "message.completed",
    ]
    # The session id is saved when the CLI announces it, and the running cost with the result.
    assert h.states == [
        {"session_id": SID, "total_cost_usd": 0.0},
        {"session_id": SID, "total_cost_usd": 0.0002},
    ]
    result_ = h.result()
    assert (result_.text, result_.usage) == ("Hello", {"input_tokens": 185, "output_tokens": 7})


def test_claude_text_blocks_fill_in_what_the_stream_missed(harness: Any) -> None:
    h = harness()
    h.feed(
        MESSAGE_START,
        *streamed_text("one ", "two "),
        assistant(TextBlock("one two three")),  # deltas lost: only the rest is new
        assistant(TextBlock("Unstreamed.")),  # no stream events at all (partials off)
        result(total=None),
    )
    texts = [e.text for e in h.history_events if isinstance(e, AssistantText)]
    assert texts == ["one ", "two ", "three", "Unstreamed."]
    (message,) = h.store.list_messages(h.session_id)
    assert message.text == "one two threeUnstreamed."
    # Without a total, the cost falls back to the catalogue price of the usage.
    assert message.meta["cost_usd"] is None or message.meta["cost_usd"] > 0


def test_claude_tool_loop_transcript_builds_full_history(harness: Any) -> None:
    h = harness()
    call = ToolUseBlock(id="toolu_1", name="mcp__agi__fs_read", input={"path": "a.txt"})
    h.feed(
        init(),
        MESSAGE_START,
        se({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}}),
        se(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Need "},
            }
        ),
        se(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "the file."},
            }
        ),
        assistant(ThinkingBlock(thinking="Need the file.", signature="sig-1")),
        *streamed_text("Reading.", index=1),
        assistant(TextBlock("Reading.")),
        assistant(call),
        *MESSAGE_END,
        UserMessage(
            content=[
                ToolResultBlock(
                    tool_use_id="toolu_1", content=[{"type": "text", "text": "secret 42"}]
                )
            ]
        ),
        status(),
        MESSAGE_START,
        *streamed_text("It says 42."),
        assistant(TextBlock("It says 42.")),
        *MESSAGE_END,
        result(total=0.0004, usage=(400, 12), num_turns=2, result="It says 42."),
    )
    assert [e for e in h.history_events if isinstance(e, AssistantThinking | ToolCallEvent)] == [
        AssistantThinking(text="Need the file.", signature="sig-1"),
        ToolCallEvent(id="toolu_1", name="fs.read", arguments={"path": "a.txt"}),
    ]
    assert [e for e in h.history_events if isinstance(e, ToolResultEvent)] == [
        ToolResultEvent(id="toolu_1", name="fs.read", output="secret 42")
    ]
    messages = h.store.list_messages(h.session_id)
    assert [m.role for m in messages] == ["assistant", "tool", "assistant"]
    first, tool, final = messages
    assert first.parts == [
        ReasoningPart(text="Need the file.", signature="sig-1"),
        TextPart(text="Reading."),
        ToolCallPart(tool_call_id="toolu_1", name="fs.read", arguments={"path": "a.txt"}),
    ]
    assert tool.parts == [
        ToolResultPart(
            tool_call_id="toolu_1",
            name="fs.read",
            output="secret 42",
            is_error=False,
            status="completed",
        )
    ]
    assert final.text == "It says 42."
    assert final.meta["usage"] == {"input_tokens": 400, "output_tokens": 12}
    (row,) = h.store.list_tool_calls(run_id=h.run_id)
    assert (row.tool_call_id, row.name, row.status, row.message_id) == (
        "toolu_1",
        "fs.read",
        "completed",
        first.id,
    )
    types = h.types()
    assert types.count("reasoning.delta") == 2
    assert types.index("reasoning.delta") < types.index("reasoning.done")
    assert types.index("tool.call.started") < types.index("tool.call.output")
    assert types.count("iteration") == 2
    assert h.result().text == "It says 42."
    assert h.result().iterations == 2


@pytest.mark.asyncio
async def test_claude_tool_use_ids_reach_the_mcp_handler(harness: Any) -> None:
    h = harness(tools=("fs.read", "fs.list"))
    # The handler may be called before the assistant message is read: it waits for it.
    claim = asyncio.ensure_future(h.ids.claim("fs.read", {"path": "b"}))
    await h.afeed(
        assistant(
            ToolUseBlock(id="toolu_a", name="mcp__agi__fs_read", input={"path": "a"}),
            ToolUseBlock(id="toolu_b", name="mcp__agi__fs_read", input={"path": "b"}),
            ToolUseBlock(id="toolu_c", name="mcp__agi__fs_list", input={}),
        )
    )
    assert await claim == "toolu_b"  # same tool, matched by its arguments
    # A call the CLI rejected before calling us is settled by its result and never claimed.
    await h.afeed(
        UserMessage(content=[ToolResultBlock(tool_use_id="toolu_a", content="bad", is_error=True)])
    )
    await h.afeed(
        assistant(ToolUseBlock(id="toolu_d", name="mcp__agi__fs_read", input={"path": "d"}))
    )
    assert await h.ids.claim("fs.read", {"path": "other"}) == "toolu_d"
    assert await h.ids.claim("fs.list", {}) == "toolu_c"
    h.ids.claim_timeout = 0.05
    assert (await h.ids.claim("fs.read", {})).startswith("call_")


def test_claude_queued_message_taken_into_the_running_turn(harness: Any) -> None:
    h = harness()
    prompt_uuid = "00000000-0000-4000-8000-000000000000"
    h.feed(init(), status(prompt_uuid), MESSAGE_START, *streamed_text("Reading."))
    queued = h.stream.queue("also say hi")
    h.feed(
        assistant(TextBlock("Reading.")),
        assistant(ToolUseBlock(id="toolu_1", name="mcp__agi__fs_read", input={"path": "a"})),
        *MESSAGE_END,
        UserMessage(content=[ToolResultBlock(tool_use_id="toolu_1", content="42")]),
    )
    assert not any(isinstance(e, UserInput) for e in h.history_events)
    # The CLI surfaces the message next to the tool result: it says so before the request.
    assert h.feed(status(prompt_uuid, queued.uuid)) == [False]
    assert h.history_events[-1] == UserInput(text="also say hi")
    done = h.feed(
        MESSAGE_START,
        *streamed_text("42, and hi."),
        assistant(TextBlock("42, and hi.")),
        *MESSAGE_END,
        result(total=0.0005, uuids=[prompt_uuid, queued.uuid]),
    )
    assert done[-1] is True
    messages = h.store.list_messages(h.session_id)
    assert [m.role for m in messages] == ["assistant", "tool", "user", "assistant"]
    assert messages[2].text == "also say hi"
    assert messages[3].text == "42, and hi."


def test_claude_queued_message_answered_after_the_current_answer(harness: Any) -> None:
    h = harness()
    h.feed(init(), MESSAGE_START, *streamed_text("First."))
    queued = h.stream.queue("second question")
    first = h.feed(assistant(TextBlock("First.")), *MESSAGE_END, result(total=0.0002))
    assert first[-1] is False  # a queued message is still waiting: the run goes on
    h.feed(init(), status(queued.uuid))
    assert h.history_events[-1] == UserInput(text="second question")
    second = h.feed(
        se({"type": "message_start", "message": {}}, uuids=[queued.uuid]),
        *streamed_text("Second."),
        assistant(TextBlock("Second.")),
        *MESSAGE_END,
        result(total=0.0005, usage=(199, 2), uuids=[queued.uuid]),
    )
    assert second[-1] is True
    messages = h.store.list_messages(h.session_id)
    assert [(m.role, m.text) for m in messages] == [
        ("assistant", "First."),
        ("user", "second question"),
        ("assistant", "Second."),
    ]
    # Each answer costs its share of the running total.
    assert messages[0].meta["cost_usd"] == pytest.approx(0.0002)
    assert messages[2].meta["cost_usd"] == pytest.approx(0.0003)
    assert h.result().cost_usd == pytest.approx(0.0005)
    # After the last answer nothing more can be queued into this run.
    with pytest.raises(RuntimeError):
        h.stream.queue("too late")


def test_claude_queued_message_without_uuids_starts_with_the_next_answer(harness: Any) -> None:
    """A CLI that reports no uuids: the answer after a result answers the next message."""
    h = harness()
    h.stream.queue("second")
    h.feed(assistant(TextBlock("First.")), result(total=None))
    assert not any(isinstance(e, UserInput) for e in h.history_events)
    h.feed(init(), status())  # nothing says which message: wait for the answer itself
    assert not any(isinstance(e, UserInput) for e in h.history_events)
    assert h.feed(MESSAGE_START, assistant(TextBlock("Second.")), result(total=None))[-1]
    assert [(m.role, m.text) for m in h.store.list_messages(h.session_id)] == [
        ("assistant", "First."),
        ("user", "second"),
        ("assistant", "Second."),
    ]


def test_claude_resumed_session_costs_only_the_new_answer(harness: Any) -> None:
    h = harness(state={"session_id": SID, "total_cost_usd": 0.001})
    h.feed(init(SID), assistant(TextBlock("Again.")), result(total=0.0015))
    (message,) = h.store.list_messages(h.session_id)
    assert message.meta["cost_usd"] == pytest.approx(0.0005)
    assert h.states[-1] == {"session_id": SID, "total_cost_usd": 0.0015}
    # A different session (the resumed one was gone): its total starts from zero.
    other = harness(state={"session_id": "gone", "total_cost_usd": 0.001})
    other.feed(init("fresh"), assistant(TextBlock("New.")), result(total=0.0002))
    assert other.store.list_messages(other.session_id)[0].meta["cost_usd"] == pytest.approx(0.0002)
    assert other.states[0] == {"session_id": "fresh", "total_cost_usd": 0.0}


def test_claude_api_error_is_not_an_answer(harness: Any) -> None:
    h = harness()
    done = h.feed(
        init(),
        MESSAGE_START,
        *streamed_text("Partial"),
        assistant(TextBlock("Partial")),
        assistant(
            TextBlock("API Error: Connection to the API was lost (ECONNRESET)."),
            model="<synthetic>",
            error="server_error",
        ),
        result(total=0, usage=(0, 0), is_error=True),
    )
    assert done[-1] is True
    assert h.stream.result is not None
    assert h.stream.result.is_error
    assert h.stream.mapper.error == (
        "server_error",
        "API Error: Connection to the API was lost (ECONNRESET).",
    )
    # What arrived before the error stays; the synthetic error text does not.
    (message,) = h.store.list_messages(h.session_id)
    assert message.text == "Partial"
    assert message.meta["model"] == MODEL
    error = result_error(h.stream.result, h.stream.mapper.error)
    assert isinstance(error, ProviderDisconnected)
    assert error.retryable
    assert "ECONNRESET" in error.message


def test_claude_error_results_map_to_our_errors() -> None:
    http = result_error(
        result(total=0, is_error=True, api_error_status=429), ("rate_limit", "API Error: 429")
    )
    assert isinstance(http, ProviderHTTPError)
    assert (http.status, http.retryable) == (429, False)  # the CLI already retried
    auth = result_error(
        result(total=0, is_error=True), ("authentication_failed", "Failed to authenticate.")
    )
    assert type(auth) is ProviderError
    assert not auth.retryable
    assert "Failed to authenticate." in auth.message
    budget = result_error(result(total=1.0, is_error=True, subtype="error_max_budget_usd"), None)
    assert "max_budget_usd" in budget.message
    during = result_error(
        result(total=0, is_error=True, subtype="error_during_execution", errors=["boom"]), None
    )
    assert during.message == "claude: boom"
