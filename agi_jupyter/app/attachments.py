"""Images attached to a user message: pasted or dropped in the panel's composer, the image
parts of ``POST /sessions/{id}/messages`` and the run bodies' ``images``, ``images=`` of the
Python API.

Before the message is stored each inline image is checked and bounded: at most
``MAX_ATTACHED_IMAGES`` per message (else ``ATTACHMENT_REFUSED``), each at most
``MAX_ATTACHED_BYTES`` as sent (else ``ATTACHMENT_TOO_LARGE``, 413), a PNG, JPEG, GIF or WebP
image by its bytes (else ``ATTACHMENT_REFUSED``); then scaled down like a cell's images
(``notebook.images.bound``: ``MAX_SIDE`` pixels, ``MAX_BYTES``) and stored as an ``image``
artifact of the session. The message keeps an ``ImagePart`` naming the artifact, so the
stored conversation, its history, a replay and a resumed attempt all send the same bytes
(``runtime.tool_images`` inlines them before a model call). An image given by URL is kept as
its URL. Images go only to a model that reads them (``check_vision``): anything else is
refused before a run starts (``MODEL_READS_NO_IMAGES``).
"""

from __future__ import annotations

import base64
import binascii
import io
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from agi_jupyter.errors import AttachmentRefused, AttachmentTooLarge, ModelReadsNoImages
from agi_jupyter.notebook.images import bound
from agi_jupyter.providers.catalog import reads_images
from agi_jupyter.records import (
    MAX_ATTACHED_BASE64,
    MAX_ATTACHED_BYTES,
    MAX_ATTACHED_IMAGES,
    ImagePart,
    Part,
)
from agi_jupyter.store import Store

# Pillow's name of a format -> the MIME type every wire API takes.
MIMES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
TITLE = "image attached to a message"

# What the Python API takes as an image: a file's path, or its bytes.
ImageSource = str | os.PathLike[str] | bytes


def image_parts(images: Iterable[ImageSource]) -> list[ImagePart]:
    """Paths or bytes as inline image parts (their type read from the bytes), to be checked
    and stored with the rest of the message (``stored_images``)."""
    parts = []
    for image in images:
        content = image if isinstance(image, bytes) else Path(image).read_bytes()
        parts.append(
            ImagePart(mime=image_mime(content), data_base64=base64.b64encode(content).decode())
        )
    return parts


def image_mime(content: bytes) -> str:
    """The MIME type of an attached image, read from its bytes (not from what the client
    said); ``AttachmentRefused`` when it is not a PNG, JPEG, GIF or WebP image."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(content)) as image:
            found = image.format
    except (UnidentifiedImageError, OSError, ValueError):
        found = None
    mime = MIMES.get(found or "")
    if mime is None:
        raise AttachmentRefused("an attached image is not a PNG, JPEG, GIF or WebP image")
    return mime


def has_images(parts: Sequence[Part]) -> bool:
    return any(isinstance(p, ImagePart) for p in parts)


def check_vision(provider: str, model: str, overrides: Mapping[str, bool]) -> None:
    """Refuse images for a model that reads none, naming the model."""
    if not reads_images(provider, model, overrides):
        raise ModelReadsNoImages(
            f"{provider}:{model} reads no images: pick a model that does, or set "
            f'"models": {{"{provider}:{model}": {{"vision": true}}}} in .agi/config.json '
            "if it does"
        )


def stored_images(store: Store, session_id: str, parts: Sequence[Part]) -> list[Part]:
    """``parts`` with each inline image checked, bounded and stored as an ``image`` artifact of
    the session (the part then names it); nothing is stored when one of them is refused."""
    count = sum(isinstance(p, ImagePart) for p in parts)
    if count > MAX_ATTACHED_IMAGES:
        raise AttachmentRefused(
            f"a message holds at most {MAX_ATTACHED_IMAGES} images ({count} attached)"
        )
    bounded = {
        i: _bounded(p.data_base64)
        for i, p in enumerate(parts)
        if isinstance(p, ImagePart) and p.data_base64
    }
    out = list(parts)
    for i, (content, mime) in bounded.items():
        artifact = store.create_artifact(
            "image", session_id=session_id, title=TITLE, mime=mime, content=content
        )
        out[i] = ImagePart(mime=mime, artifact_id=artifact.id)
    return out


def _bounded(data_base64: str) -> tuple[bytes, str]:
    if len(data_base64) > MAX_ATTACHED_BASE64:
        raise _too_large()
    try:
        content = base64.b64decode(data_base64, validate=True)
    except (binascii.Error, ValueError):
        raise AttachmentRefused("an attached image is not valid base64") from None
    if len(content) > MAX_ATTACHED_BYTES:
        raise _too_large()
    result = bound(content, image_mime(content))
    if result is None:  # Pillow knows the format but cannot scale this image down
        raise AttachmentRefused("an attached image cannot be read")
    return result


def _too_large() -> AttachmentTooLarge:
    return AttachmentTooLarge(
        f"an attached image is larger than {MAX_ATTACHED_BYTES // 1_000_000} MB"
    )
