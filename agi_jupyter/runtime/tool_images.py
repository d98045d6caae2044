"""The images of tool results (a cell's plots) in what a model is sent.

A tool result keeps its images as ``image`` artifacts (``ToolResultPart.images``, each an
``ImagePart`` naming its artifact). Before a model call the session's history gets them ready:
for a model that reads images (``providers.catalog.reads_images``: the catalog's flag, or
``models.<key>.vision`` in config) the newest ``MAX_SENT_IMAGES`` are read from the store and
inlined (base64), older ones dropped; for any other model they are all dropped (the result's
text still names them). Each wire API then places them its own way (``providers/*_mapping``).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from dataclasses import replace

from agi_jupyter.errors import AgiError
from agi_jupyter.records import ImagePart, Message, ToolResultPart
from agi_jupyter.store import Store

log = logging.getLogger(__name__)
Images = Callable[[ToolResultPart, list[ImagePart]], list[ImagePart]]

MAX_SENT_IMAGES = 8


def has_images(history: list[Message]) -> bool:
    return any(isinstance(p, ToolResultPart) and p.images for m in history for p in m.parts)


def without_images(history: list[Message]) -> list[Message]:
    return [_with_parts(m, lambda part, _: []) for m in history]


def with_image_data(store: Store, history: list[Message]) -> list[Message]:
    """``history`` with the newest ``MAX_SENT_IMAGES`` tool-result images inlined and older
    ones dropped (store thread: the bytes are read from the artifacts)."""
    budget = MAX_SENT_IMAGES
    keep: set[str] = set()
    for message in reversed(history):
        for part in reversed(message.parts):
            if not isinstance(part, ToolResultPart):
                continue
            for image in reversed(part.images):
                if budget > 0 and image.artifact_id:
                    keep.add(image.artifact_id)
                    budget -= 1

    def inline(part: ToolResultPart, images: list[ImagePart]) -> list[ImagePart]:
        sent = []
        for image in images:
            if image.artifact_id in keep:
                data = _read(store, image.artifact_id or "")
                if data is not None:
                    sent.append(replace(image, data_base64=base64.b64encode(data).decode()))
        return sent

    return [_with_parts(m, inline) for m in history]


def _read(store: Store, artifact_id: str) -> bytes | None:
    try:
        return store.read_artifact(artifact_id)
    except AgiError as e:  # deleted since: the text still names the output
        log.warning("the image artifact %s cannot be read: %s", artifact_id, e)
        return None


def _with_parts(message: Message, images_of: Images) -> Message:
    if not any(isinstance(p, ToolResultPart) and p.images for p in message.parts):
        return message
    parts = [
        replace(p, images=images_of(p, p.images))
        if isinstance(p, ToolResultPart) and p.images
        else p
        for p in message.parts
    ]
    return replace(message, parts=parts)
