"""``POST /agi/v1/sessions/{id}/compact``: a compaction on demand over REST."""

from __future__ import annotations

from agi_jupyter.testing import FakeLLMServer, Turn
from tests.server.conftest import Fetch


async def test_compact_a_session_over_rest(fetch: Fetch, fake_llm: FakeLLMServer) -> None:
    session = (await fetch("sessions", method="POST", json={})).data["session"]["id"]
    for text in ("one", "two"):
        await fetch("sessions", session, "messages", method="POST", json={"content": text})
    fake_llm.enqueue(Turn(text="Summary: one, then two.", usage=(30, 6)))

    compacted = await fetch("sessions", session, "compact", method="POST", json={})
    nothing = await fetch("sessions", session, "compact", method="POST", json={})
    unknown = await fetch("sessions", "ses_nope", "compact", method="POST", json={})

    assert compacted.status == 200
    record = compacted.data["compaction"]
    assert (record["message_count"], record["summary"]) == (2, "Summary: one, then two.")
    assert (record["input_tokens"], record["output_tokens"]) == (30, 6)
    assert nothing.data == {"compaction": None}
    assert unknown.error["code"] == "SESSION_NOT_FOUND"
    full = await fetch("sessions", session, "history", params={"view": "full"})
    assert len(full.data["messages"]) == 4  # the history is whole
    simple = await fetch("sessions", session, "history", params={"view": "simple"})
    (mark,) = simple.data["compactions"]  # where the simple view marks the folded messages
    assert (mark["id"], mark["message_count"]) == (record["id"], 2)
    assert mark["through_message_id"] == simple.data["messages"][1]["id"]
