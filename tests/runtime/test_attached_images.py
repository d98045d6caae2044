"""Images attached to a prompt through the Python API (``images=``): checked, bounded, stored
as artifacts of the session, and sent to the model in each wire API's own form, on this and
every later request; refused for a model that reads no images before any run starts (on
SQLite and on PostgreSQL, as every runtime test)."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agi_jupyter.errors import AttachmentRefused, ErrorCode, ModelReadsNoImages
from agi_jupyter.notebook.images import MAX_SIDE
from agi_jupyter.records import MAX_ATTACHED_IMAGES, ImagePart, TextPart
from agi_jupyter.testing import FakeLLMServer, Turn
from tests.runtime.conftest import MakeAgi


def png(width: int = 8, height: int = 8, colour: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, format="PNG")
    return out.getvalue()


def _user_blocks(body: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [
        block
        for message in body[key]
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
    ]


def responses_images(body: dict[str, Any]) -> list[str]:
    blocks = _user_blocks(body, "input")
    return [b["image_url"] for b in blocks if b["type"] == "input_image"]


def anthropic_images(body: dict[str, Any]) -> list[str]:
    blocks = _user_blocks(body, "messages")
    return [
        f"data:{b['source']['media_type']};base64,{b['source']['data']}"
        for b in blocks
        if b["type"] == "image"
    ]


def chat_images(body: dict[str, Any]) -> list[str]:
    blocks = _user_blocks(body, "messages")
    return [b["image_url"]["url"] for b in blocks if b["type"] == "image_url"]


WIRES = {
    "openai:gpt-4o": responses_images,
    "anthropic:claude-sonnet-4-6": anthropic_images,
    "openai-chat:gpt-4o-mini": chat_images,
}


def data_url(content: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(content).decode()


@pytest.mark.parametrize("model", list(WIRES))
def test_an_attached_image_reaches_each_wire_api_now_and_in_later_turns(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path, model: str
) -> None:
    agi = make_agi(config={"default_model": model})
    (project / "dot.png").write_bytes(png())
    fake_llm.enqueue(Turn(text="a red dot"), Turn(text="still red"))
    first = agi.ask("what is this?", images=[project / "dot.png"])
    assert first.run.status == "succeeded", first.run.error
    assert WIRES[model](fake_llm.requests[-1].body) == [data_url(png())]

    (user, _) = agi.messages(first.run.session_id)
    text, image = user.parts
    assert text == TextPart(text="what is this?")
    assert isinstance(image, ImagePart)
    assert image.data_base64 is None, "the bytes are an artifact, not in the message"
    assert agi.artifact_content(image.artifact_id or "") == png()
    assert agi.artifact(image.artifact_id or "").session_id == first.run.session_id

    second = agi.ask("and now?", session=first.run.session_id)
    assert second.run.status == "succeeded", second.run.error
    assert WIRES[model](fake_llm.requests[-1].body) == [data_url(png())]


def test_images_are_bounded_scaled_and_refused_before_any_run(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    agi = make_agi(config={"default_model": "openai-chat:gpt-4o-mini"})
    session = agi.new_session()
    with pytest.raises(AttachmentRefused) as many:
        agi.submit("look", session=session, images=[png()] * (MAX_ATTACHED_IMAGES + 1))
    assert many.value.code == ErrorCode.ATTACHMENT_REFUSED
    with pytest.raises(AttachmentRefused, match="not a PNG, JPEG, GIF or WebP"):
        agi.submit("look", session=session, images=[b"GIF? no, plain text"])
    assert agi.runs(session.id).items == []
    assert agi.store.list_artifacts(session_id=session.id) == []

    fake_llm.enqueue(Turn(text="wide"))
    wide = png(4000, 1000, (10, 120, 200))
    result = agi.ask("look", session=session, images=[wide])
    assert result.run.status == "succeeded"
    (sent,) = chat_images(fake_llm.requests[-1].body)
    with Image.open(io.BytesIO(base64.b64decode(sent.split(",", 1)[1]))) as shown:
        assert shown.size == (MAX_SIDE, MAX_SIDE // 4)


def test_a_model_that_reads_no_images_is_refused_naming_it(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    agi = make_agi(config={"default_model": "fake:echo"})
    session = agi.new_session()
    with pytest.raises(ModelReadsNoImages, match="fake:echo reads no images") as refused:
        agi.submit("look", session=session, images=[png()])
    assert refused.value.http_status == 409
    assert agi.runs(session.id).items == []
    assert fake_llm.requests == []

    # Marked as reading images in config, the same model is sent them (its own wire form).
    marked = {"default_model": "fake:echo", "models": {"fake:echo": {"vision": True}}}
    vision = make_agi(config=marked)
    fake_llm.enqueue(Turn(text="seen"))
    result = vision.ask("look", images=[png()])
    assert result.run.status == "succeeded"
    assert base64.b64encode(png()).decode() in str(fake_llm.requests[-1].body)
