"""The scripting types and the default rule, without a server."""

from __future__ import annotations

import pytest

from agi_jupyter.testing import FakeToolCall, Fault, Turn, default_rule
from agi_jupyter.testing.plan import split_even
from agi_jupyter.testing.script import split_words, turn_from_dict, turn_to_dict


@pytest.mark.parametrize("text", ["", "one", "  lead and trail  ", "a\n\nb\tc", "   "])
def test_split_words_keeps_whitespace(text: str) -> None:
    chunks = split_words(text)
    assert "".join(chunks) == text
    assert all(chunks)


def test_split_even() -> None:
    assert split_even('{"a":1}', 3) == ['{"a', '":1', "}"]
    assert split_even("{}", 5) == ["{", "}"]
    assert split_even("", 3) == [""]


def test_turn_chunks() -> None:
    assert Turn(text="hello big world").text_chunks() == ["hello ", "big ", "world"]
    assert Turn(chunks=["a", "b"]).text == "ab"
    with pytest.raises(ValueError, match="join"):
        Turn(text="x", chunks=["y"])


def test_turn_json_round_trip() -> None:
    turn = Turn(
        text="t",
        reasoning="r",
        tool_calls=[FakeToolCall("f", {"a": [1]}, id="c1", chunks=2), FakeToolCall("g", "{bad")],
        usage=(1, 2),
        fault=Fault(status=429, headers={"retry-after": "1"}, stall_between_events=0.1),
        citations=[("https://x", "X")],
        background_delay=3.0,
        response_id="resp_1",
    )
    assert turn_from_dict(turn_to_dict(turn)) == turn


def test_turn_from_dict_rejects_unknown_fields() -> None:
    with pytest.raises(ValueError, match="oops"):
        turn_from_dict({"text": "x", "fault": {"oops": 1}})


def test_default_rule_echo_and_tools() -> None:
    body = {"messages": [{"role": "user", "content": "hi"}]}
    assert default_rule("chat", body).text == "(offline fake model) echo: hi"
    assert default_rule("responses", {"input": "yo"}).text == "(offline fake model) echo: yo"
    tools = default_rule("anthropic", {"messages": [{"role": "user", "content": "/tool a {}"}]})
    assert (tools.text, [c.name for c in tools.tool_calls]) == ("", ["a"])
    assert default_rule("chat", {}).text == "(offline fake model) echo: "


def test_default_rule_several_tool_results() -> None:
    body = {
        "input": [
            {"type": "function_call", "call_id": "1", "name": "a", "arguments": "{}"},
            {"type": "function_call", "call_id": "2", "name": "b", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "1", "output": "one"},
            {"type": "function_call_output", "call_id": "2", "output": "two"},
        ]
    }
    assert default_rule("responses", body).text == (
        "(offline fake model) tool a returned: one\n(offline fake model) tool b returned: two"
    )
