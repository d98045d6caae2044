"""``ContextAssembler`` on its own: which messages a request sends, from stored records."""

from __future__ import annotations

import itertools

import pytest

from agi_jupyter.config import Config, ModelSettings
from agi_jupyter.providers.anthropic_mapping import messages_params
from agi_jupyter.providers.base import ProviderRequest, ToolSpec
from agi_jupyter.records import (
    ChatMessage,
    Compaction,
    Message,
    Part,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from agi_jupyter.runtime.context import (
    LARGE_TOOL_OUTPUT,
    ContextAssembler,
    ContextLimits,
    estimate_tokens,
    message_tokens,
)

_ids = itertools.count()


def message(role: Role, *parts: Part) -> Message:
    return Message(id=f"msg_{next(_ids):04d}", session_id="ses", role=role, parts=list(parts))


def turn(i: int, output: str = "ok") -> list[Message]:
    call = ToolCallPart(tool_call_id=f"c{i}", name="fs_read", arguments={"path": f"f{i}"})
    return [
        message("user", TextPart(text=f"question {i}")),
        message("assistant", call),
        message("tool", ToolResultPart(tool_call_id=f"c{i}", name="fs_read", output=output)),
        message("assistant", TextPart(text=f"answer {i}")),
    ]


def texts(messages: list[ChatMessage]) -> list[str]:
    return [p.text if isinstance(p, TextPart) else p.type for m in messages for p in m.parts]


def test_the_message_window_keeps_calls_with_their_results() -> None:
    history = [m for i in range(10) for m in turn(i)]
    assembler = ContextAssembler(ContextLimits(None, 0, max_messages=8))

    context = assembler.assemble(history, None)

    # the note, then whole units only: (call + results) never parted
    assert texts(context.messages) == [
        context.messages[0].parts[0].text,  # type: ignore[union-attr]
        "tool_call",
        "tool_result",
        "answer 8",
        "question 9",
        "tool_call",
        "tool_result",
        "answer 9",
    ]
    assert "33 earlier messages" in texts(context.messages)[0]
    assert (context.history_messages, context.left_out, context.stable) == (7, 33, 4)
    assert [u.message_id for u in context.overflow][-1] == history[32].id


def test_the_current_turn_is_whole_even_over_the_budget() -> None:
    history = [*turn(0), *turn(1, output="y" * 40_000)]
    history[-1:] = []  # the current turn: question 1, its call and its (large) result
    assembler = ContextAssembler(ContextLimits(window=1000, output_reserve=100))

    context = assembler.assemble(history, None)

    assert texts(context.messages)[-3:] == ["question 1", "tool_call", "tool_result"]
    result = context.messages[-1].parts[0]
    assert isinstance(result, ToolResultPart)
    assert result.output == "y" * 40_000  # the current turn's outputs are sent as they are
    assert context.tokens > context.window  # (and the provider will say so)


def test_old_large_tool_outputs_go_by_reference_and_the_history_is_untouched() -> None:
    big = "z" * (LARGE_TOOL_OUTPUT + 1)
    history = [*turn(0, output=big), *turn(1)]
    artifact = ToolResultPart(tool_call_id="c0", name="fs_read", output=big, artifact_id="art_1")
    history[2] = message("tool", artifact)
    context = ContextAssembler(ContextLimits(None, 0)).assemble(history, None)

    sent = context.messages[2].parts[0]
    assert isinstance(sent, ToolResultPart)
    assert "artifact art_1" in sent.output
    assert len(sent.output) < 400
    assert history[2].parts[0] is artifact  # the stored record is not changed
    assert artifact.output == big


def test_a_compaction_stands_in_for_what_it_covers() -> None:
    history = [m for i in range(4) for m in turn(i)]
    compaction = Compaction(
        id="cmp_1",
        session_id="ses",
        first_message_id=history[0].id,
        through_message_id=history[7].id,
        message_count=7,
        summary="two turns about files",
    )
    context = ContextAssembler(ContextLimits(None, 0)).assemble(history, compaction)

    first = texts(context.messages)[0]
    assert "two turns about files" in first
    assert "7 earlier messages" in first
    assert texts(context.messages)[1] == "question 2"
    assert (context.history_messages, context.left_out, context.compaction) == (8, 0, compaction)


def test_a_compaction_whose_messages_are_gone_is_not_used() -> None:
    history = turn(0)
    compaction = Compaction(
        id="cmp_1",
        session_id="ses",
        first_message_id="msg_x",
        through_message_id="msg_gone",
        message_count=3,
        summary="s",
    )
    context = ContextAssembler(ContextLimits(None, 0)).assemble(history, compaction)
    assert context.compaction is None
    assert texts(context.messages)[0] == "question 0"


def test_to_fold_keeps_the_newest_half_and_never_the_current_turn() -> None:
    history = [m for i in range(6) for m in turn(i)]
    assembler = ContextAssembler(ContextLimits(None, 0, max_messages=10))
    folded = assembler.to_fold(history, None, keep=0.5)
    # 20 older messages: the newest that fit in half the message window (5) are kept
    assert sum(len(u.messages) for u in folded) == 15
    everything = assembler.to_fold(history, None, keep=0.0)
    assert everything[-1].message_id == history[19].id  # up to the current turn


def test_limits_from_config_over_the_catalog() -> None:
    from pathlib import Path

    config = Config(
        project=Path("."),
        models={
            "openai-chat:gpt-4o-mini": ModelSettings(context_window=6000),
            "gpt-4o-mini": ModelSettings(max_output_tokens=500),
        },
    )
    limits = ContextLimits.of(config, "openai-chat", "gpt-4o-mini", 128_000)
    assert (limits.window, limits.output_reserve, limits.max_output_tokens) == (6000, 500, 500)
    assert limits.max_messages == 50
    default = ContextLimits.of(Config(project=Path(".")), "openai", "gpt-5", 400_000)
    assert (default.window, default.output_reserve, default.max_output_tokens) == (
        400_000,
        8192,
        None,
    )


@pytest.mark.parametrize("text", ["", "a", "abcd", "abcde"])
def test_the_estimate_is_four_characters_a_token(text: str) -> None:
    assert estimate_tokens(text) == -(-len(text) // 4)
    assert message_tokens(ChatMessage(role="user", parts=[TextPart(text=text)])) == 4 + -(
        -len(text) // 4
    )


def test_anthropic_breakpoints_on_the_system_prompt_the_stable_prefix_and_the_end() -> None:
    chat = [
        ChatMessage(role="user", parts=[TextPart(text="q1")]),
        ChatMessage(role="assistant", parts=[TextPart(text="a1")]),
        ChatMessage(role="user", parts=[TextPart(text="q2")]),
    ]
    tool = ToolSpec(name="t", description="d", parameters={"type": "object"})
    request = ProviderRequest(model="m", messages=chat, system="sys", tools=[tool])
    plain = messages_params(request)
    assert plain["system"] == "sys"
    assert "cache_control" not in str(plain)

    request.cache_breakpoint = 2
    params = messages_params(request)
    assert params["system"] == [
        {"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}
    ]
    marked = [b["text"] for m in params["messages"] for b in m["content"] if "cache_control" in b]
    assert marked == ["a1", "q2"]
    request.system = None
    assert params_tools(messages_params(request))[-1]["cache_control"] == {"type": "ephemeral"}


def params_tools(params: dict[str, object]) -> list[dict[str, object]]:
    tools = params["tools"]
    assert isinstance(tools, list)
    return tools
