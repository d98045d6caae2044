"""Images attached to a posted message or a run body: stored as artifacts the message names,
shown in the history, sent to the model now and in later turns, bounded, and refused for a
model that reads none before a run starts (on SQLite and on PostgreSQL, as every server
test)."""

from __future__ import annotations

import base64
import io
import json
import random
from typing import Any

import pytest
from PIL import Image

from agi_jupyter.records import MAX_ATTACHED_BYTES, MAX_ATTACHED_IMAGES
from agi_jupyter.testing import FakeLLMServer, Turn
from tests.runtime.test_attached_images import chat_images, data_url, png, responses_images
from tests.server.conftest import Fetch


def image_part(content: bytes, mime: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "mime": mime, "data_base64": base64.b64encode(content).decode()}


async def _session(fetch: Fetch) -> str:
    created = await fetch("sessions", method="POST", json={})
    sid: str = created.data["session"]["id"]
    return sid


async def test_an_attached_image_is_stored_shown_and_sent_again(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    sid = await _session(fetch)
    fake_llm.enqueue(Turn(text="a red dot"), Turn(text="still a red dot"))
    content = [{"type": "text", "text": "what is this?"}, image_part(png())]
    first = await fetch(
        "sessions", sid, "messages", method="POST",
        json={"content": content, "model": "openai:gpt-4o"},
    )  # fmt: skip
    assert first.data["run"]["status"] == "succeeded", first
    assert responses_images(fake_llm.requests[-1].body) == [data_url(png())]

    for view in ("simple", "full"):
        history = await fetch("sessions", sid, "history", params={"view": view})
        user = history.data["messages"][0]
        text, image = user["parts"]
        assert text["text"] == "what is this?"
        assert image["type"] == "image"
        assert image["mime"] == "image/png"
        assert image["data_base64"] is None  # the bytes are an artifact
    shown = await fetch("artifacts", image["artifact_id"], "content")
    assert shown.status == 200
    assert shown.body == png()
    assert shown.headers["Content-Type"] == "image/png"

    again = await fetch(
        "sessions", sid, "messages", method="POST",
        json={"content": "and now?", "model": "openai:gpt-4o"},
    )  # fmt: skip
    assert again.data["run"]["status"] == "succeeded", again
    assert responses_images(fake_llm.requests[-1].body) == [data_url(png())]


async def test_a_run_body_takes_images_with_its_input(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    sid = await _session(fetch)
    fake_llm.enqueue(Turn(text="two dots"))
    body = {
        "input": "compare them",
        "images": [image_part(png()), image_part(png(colour=(0, 90, 200)))],
        "model": "openai-chat:gpt-4o-mini",
    }
    streamed = await fetch("sessions", sid, "runs:stream", method="POST", json=body)
    assert streamed.status == 200, streamed
    final = json.loads(streamed.body.decode().strip().splitlines()[-1])
    assert final["type"] == "run.final"
    assert final["run"]["status"] == "succeeded", final
    sent = chat_images(fake_llm.requests[-1].body)
    assert sent == [data_url(png()), data_url(png(colour=(0, 90, 200)))]

    alone = await fetch(
        "sessions", sid, "runs", method="POST", json={"images": [image_part(png())]}
    )
    assert alone.status == 400
    assert alone.error["code"] == "VALIDATION_ERROR"  # images go with an input


async def test_attached_images_are_bounded_and_nothing_is_kept_of_a_refused_message(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    sid = await _session(fetch)

    async def post(images: list[dict[str, Any]], model: str = "openai:gpt-4o") -> Any:
        content = [{"type": "text", "text": "look"}, *images]
        return await fetch(
            "sessions", sid, "messages", method="POST", json={"content": content, "model": model}
        )

    # Well formed, not taken (422): too many images, bytes that are not an image, base64's
    # alphabet of a wrong length.
    many = await post([image_part(png())] * (MAX_ATTACHED_IMAGES + 1))
    assert (many.status, many.error["code"]) == (422, "ATTACHMENT_REFUSED")
    text = await post([image_part(b"plain text, said to be a PNG")])
    assert (text.status, text.error["code"]) == (422, "ATTACHMENT_REFUSED")
    assert "not a PNG, JPEG, GIF or WebP" in text.error["message"]
    cut = await post([{"type": "image", "mime": "image/png", "data_base64": "iVBORw0"}])
    assert (cut.status, cut.error["code"]) == (422, "ATTACHMENT_REFUSED")
    assert "not valid base64" in cut.error["message"]
    # Not well formed (its schema says so): over the bound, not base64's alphabet.
    huge = await post([image_part(b"\x89PNG" + b"\0" * MAX_ATTACHED_BYTES)])
    assert (huge.status, huge.error["code"]) == (400, "VALIDATION_ERROR")
    assert "data_base64" in huge.error["message"]
    broken = await post([{"type": "image", "mime": "image/png", "data_base64": "not base64!"}])
    assert (broken.status, broken.error["code"]) == (400, "VALIDATION_ERROR")

    blind = await post([image_part(png())], model="fake:echo")
    assert (blind.status, blind.error["code"]) == (409, "MODEL_READS_NO_IMAGES")
    assert "fake:echo reads no images" in blind.error["message"]

    runs = await fetch("sessions", sid, "runs")
    assert runs.data["runs"] == []
    messages = await fetch("sessions", sid, "messages")
    assert messages.data["messages"] == []
    assert fake_llm.requests == []


class TestBodyLimit:
    """``max_body_size`` bounds a body besides its images' base64 (bounded on their own)."""

    @pytest.fixture
    def agi_config(self) -> dict[str, Any]:
        return {"max_body_size": 2000}

    async def test_images_do_not_count_against_the_body_limit(
        self, fetch: Fetch, fake_llm: FakeLLMServer
    ) -> None:
        sid = await _session(fetch)
        pixels = random.Random(7).randbytes(64 * 64 * 3)  # noise: a PNG that stays large
        image = Image.frombytes("RGB", (64, 64), pixels)
        out = io.BytesIO()
        image.save(out, format="PNG")
        noise = out.getvalue()
        assert len(base64.b64encode(noise)) > 2000
        fake_llm.enqueue(Turn(text="noise"))
        content = [{"type": "text", "text": "what is it?"}, image_part(noise)]
        body = {"content": content, "model": "openai:gpt-4o"}
        taken = await fetch("sessions", sid, "messages", method="POST", json=body)
        assert taken.status == 200, taken
        assert responses_images(fake_llm.requests[-1].body) == [data_url(noise)]

        content[0]["text"] = "x" * 5000
        refused = await fetch("sessions", sid, "messages", method="POST", json=body)
        assert (refused.status, refused.error["code"]) == (413, "PAYLOAD_TOO_LARGE")
        assert "besides its images" in refused.error["message"]
