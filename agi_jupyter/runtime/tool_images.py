"""The images of a conversation (a tool result's plots, a user's attached images) in what a
model is sent.

A tool result keeps its images as ``image`` artifacts (``ToolResultPart.images``, each an
``ImagePart`` naming its artifact); so does a user message its attached images (top-level
``ImagePart``s naming their artifacts: ``app.attachments``). Before a model call the
session's history gets them ready: for a model that reads images
(``providers.catalog.reads_images``: the catalog's flag, or ``models.<key>.vision`` in config)
the newest ``MAX_SENT_IMAGES`` are read from the store and inlined (base64), older ones
dropped; for any other model they are all dropped (a tool result's text still names them; an
attached image is replaced by a line saying it was not sent). Each wire API then places them
its own way (``providers/*_mapping``).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from dataclasses import replace

from agi_jupyter.errors import AgiError
from agi_jupyter.records import ImagePart, Message, Part, TextPart, ToolResultPart
from agi_jupyter.store import Store

log = logging.getLogger(__name__)
# What becomes of one stored image: the image to send (data inlined), or None (left out).
Sent = Callable[[ImagePart], ImagePart | None]

MAX_SENT_IMAGES = 8
NOT_SENT = "[an attached image ({mime}), not sent: {why}]"


def _stored(part: Part) -> bool:
    """A user's attached image whose bytes are an artifact (not inline, not a URL)."""
    return isinstance(part, ImagePart) and part.artifact_id is not None and not part.data_base64


def has_images(history: list[Message]) -> bool:
    return any(
        (isinstance(p, ToolResultPart) and p.images) or _stored(p) for m in history for p in m.parts
    )


def without_images(history: list[Message]) -> list[Message]:
    return [_with_images(m, lambda _: None, "the model reads no images") for m in history]


def with_image_data(store: Store, history: list[Message]) -> list[Message]:
    """``history`` with the newest ``MAX_SENT_IMAGES`` stored images inlined and older ones
    dropped (store thread: the bytes are read from the artifacts)."""
    budget = MAX_SENT_IMAGES
    keep: set[str] = set()
    for message in reversed(history):
        for part in reversed(message.parts):
            images = part.images if isinstance(part, ToolResultPart) else [part]
            for image in reversed(images):
                if budget > 0 and isinstance(image, ImagePart) and image.artifact_id:
                    keep.add(image.artifact_id)
                    budget -= 1

    def inline(image: ImagePart) -> ImagePart | None:
        if image.artifact_id not in keep:
            return None
        data = _read(store, image.artifact_id or "")
        return None if data is None else replace(image, data_base64=base64.b64encode(data).decode())

    return [_with_images(m, inline, "older than the images sent") for m in history]


def _read(store: Store, artifact_id: str) -> bytes | None:
    try:
        return store.read_artifact(artifact_id)
    except AgiError as e:  # deleted since: the text still names the output
        log.warning("the image artifact %s cannot be read: %s", artifact_id, e)
        return None


def _with_images(message: Message, sent: Sent, why: str) -> Message:
    if not any((isinstance(p, ToolResultPart) and p.images) or _stored(p) for p in message.parts):
        return message
    parts: list[Part] = []
    for p in message.parts:
        if isinstance(p, ToolResultPart) and p.images:
            parts.append(replace(p, images=[i for i in map(sent, p.images) if i is not None]))
        elif isinstance(p, ImagePart) and _stored(p):
            image = sent(p)
            parts.append(image or TextPart(text=NOT_SENT.format(mime=p.mime, why=why)))
        else:
            parts.append(p)
    return replace(message, parts=parts)
