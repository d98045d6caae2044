"""The images a cell showed, for the model: PNG and JPEG outputs as ``ImageDraft``s.

``notebook.run`` and ``notebook.read`` give the images of the cells they ran or read to the
executor, which stores them as ``image`` artifacts; models that read images get them with the
tool result (``runtime.tool_images``). Bounded: at most ``MAX_IMAGES`` per result, each
scaled down (Pillow) to ``MAX_SIDE`` pixels on its longest side, re-encoded when still past
``MAX_BYTES``, and left out (named in the text only) when it cannot be read. SVG outputs are
not rasterised (no SVG renderer among the dependencies): they stay named in the text.
"""

from __future__ import annotations

import base64
import binascii
import io
from collections.abc import Iterable
from typing import Any

from agi_jupyter.tools.base import ImageDraft

MAX_IMAGES = 4
MAX_SIDE = 1568  # Anthropic's advice: past it images are scaled down anyway
MAX_BYTES = 1_000_000
SENT_MIMES = ("image/png", "image/jpeg")


def images_of(cells: Iterable[tuple[str, list[dict[str, Any]]]]) -> list[ImageDraft]:
    """The PNG/JPEG images among ``(cell id, outputs)``, in order, at most ``MAX_IMAGES``."""
    images: list[ImageDraft] = []
    for cell_id, outputs in cells:
        for output in outputs:
            if len(images) >= MAX_IMAGES:
                return images
            image = _image(cell_id, output)
            if image is not None:
                images.append(image)
    return images


def _image(cell_id: str, output: dict[str, Any]) -> ImageDraft | None:
    if output.get("output_type") not in ("display_data", "execute_result"):
        return None
    data = output.get("data") or {}
    mime = next((m for m in SENT_MIMES if m in data), None)
    if mime is None:
        return None
    raw = data[mime]
    text = "".join(raw) if isinstance(raw, list) else str(raw)
    try:
        content = base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        return None
    bounded = bound(content, mime)
    if bounded is None:
        return None
    return ImageDraft(mime=bounded[1], content=bounded[0], title=f"cell {cell_id} output")


def bound(content: bytes, mime: str) -> tuple[bytes, str] | None:
    """The image within ``MAX_SIDE`` and ``MAX_BYTES`` (scaled, else re-encoded as JPEG), or
    None when it is not an image Pillow reads."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(content)) as image:
            if max(image.size) <= MAX_SIDE and len(content) <= MAX_BYTES:
                return content, mime
            image.thumbnail((MAX_SIDE, MAX_SIDE))
            out = io.BytesIO()
            if mime == "image/png":
                image.save(out, format="PNG", optimize=True)
                if out.tell() <= MAX_BYTES:
                    return out.getvalue(), mime
                out = io.BytesIO()
            image.convert("RGB").save(out, format="JPEG", quality=80)
    except (UnidentifiedImageError, OSError, ValueError):
        return None
    return (out.getvalue(), "image/jpeg") if out.tell() <= MAX_BYTES else None
