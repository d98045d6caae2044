"""The images a cell showed, for the model: PNG, JPEG and SVG outputs as ``ImageDraft``s.

``notebook.run`` and ``notebook.read`` give the images of the cells they ran or read to the
executor, which stores them as ``image`` artifacts; models that read images get them with the
tool result (``runtime.tool_images``). Bounded: at most ``MAX_IMAGES`` per result, each
scaled down (Pillow) to ``MAX_SIDE`` pixels on its longest side, re-encoded when still past
``MAX_BYTES``, and left out (named in the text only) when it cannot be read. An SVG output
(with no PNG or JPEG beside it) is rasterised to PNG by CairoSVG (libcairo), within
``MAX_SIDE`` from the start, so a huge drawing never becomes a huge bitmap; without libcairo
it stays named in the text.
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
SVG = "image/svg+xml"


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
        return _svg_image(cell_id, data)
    try:
        content = base64.b64decode(_text(data[mime]), validate=False)
    except (binascii.Error, ValueError):
        return None
    bounded = bound(content, mime)
    if bounded is None:
        return None
    return ImageDraft(mime=bounded[1], content=bounded[0], title=f"cell {cell_id} output")


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _svg_image(cell_id: str, data: dict[str, Any]) -> ImageDraft | None:
    if SVG not in data:
        return None
    content = rasterised(_text(data[SVG]).encode("utf-8"))
    if content is None:
        return None
    bounded = bound(content, "image/png")
    if bounded is None:
        return None
    title = f"cell {cell_id} output (SVG rasterised)"
    return ImageDraft(mime=bounded[1], content=bounded[0], title=title)


def rasterised(svg: bytes) -> bytes | None:
    """The SVG drawn as a PNG at its own size, scaled down to ``MAX_SIDE`` on its longest
    side; None when it is not an SVG CairoSVG draws (no size, malformed) or libcairo is
    missing. External resources are not fetched (CairoSVG's default)."""
    try:
        import cairocffi
        import cairosvg
        from cairosvg.helpers import node_format
        from cairosvg.parser import Tree
        from cairosvg.surface import PNGSurface
    except (ImportError, OSError):  # OSError: libcairo is not installed
        return None
    try:
        tree = Tree(bytestring=svg)
        probe = PNGSurface(tree, None, 96, output_width=1, output_height=1)  # its size only
        width, height, _ = node_format(probe, tree)
        longest = max(float(width), float(height))
        if longest <= 0:
            return None
        scale = min(1.0, MAX_SIDE / longest)
        png: bytes = cairosvg.svg2png(bytestring=svg, scale=scale)
    except (ValueError, SyntaxError, cairocffi.CairoError):  # SyntaxError: malformed XML
        return None
    return png


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
