"""A cell's image reaches the model's next request, in each wire API's own form (real private
kernels, the real SDK wire shapes recorded by the fake server); models that read no images
get the text only."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.notebook.conftest import MakeAgi, write_notebook

PLOT = "from IPython.display import Image, display\ndisplay(Image(filename='dot.png'))"


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def responses_images(body: dict[str, Any]) -> list[str]:
    outputs = [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]
    return [
        item["image_url"]
        for output in outputs
        if isinstance(output, list)
        for item in output
        if item["type"] == "input_image"
    ]


def anthropic_images(body: dict[str, Any]) -> list[str]:
    found = []
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result" and isinstance(block["content"], list):
                found += [
                    f"data:{b['source']['media_type']};base64,{b['source']['data']}"
                    for b in block["content"]
                    if b["type"] == "image"
                ]
    return found


def chat_images(body: dict[str, Any]) -> list[str]:
    messages = body["messages"]
    tool_at = max(i for i, m in enumerate(messages) if m["role"] == "tool")
    after = messages[tool_at + 1]
    assert after["role"] == "user", "the images follow the tool results as a user message"
    assert after["content"][0]["text"].startswith("Images shown by tool call plot")
    return [p["image_url"]["url"] for p in after["content"] if p["type"] == "image_url"]


WIRES = {
    "openai:gpt-4o": responses_images,
    "anthropic:claude-sonnet-4-6": anthropic_images,
    "openai-chat:gpt-4o-mini": chat_images,
}


@pytest.mark.slow
@pytest.mark.parametrize("model", [*WIRES, "fake:echo"])
def test_a_png_a_cell_displays_reaches_the_next_request_as_an_image(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path, model: str
) -> None:
    (project / "dot.png").write_bytes(png())
    write_notebook(project / "plots.ipynb", [("plot", "code", PLOT)])
    env = {"ANTHROPIC_BASE_URL": fake_llm.anthropic_base_url, "ANTHROPIC_API_KEY": "sk-ant-t"}
    agi = make_agi(env=env, config={"default_model": model})
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.run", {"path": "plots.ipynb", "cell_ids": ["plot"]}, id="plot"
                )
            ]
        ),
        Turn(text="a red dot"),
    )
    result = agi.ask("plot it and look", agent="build")
    assert result.run.status == "succeeded"
    (call,) = agi.store.list_tool_calls(run_id=result.run_id)
    (image_id,) = call.result["image_artifact_ids"]
    assert agi.store.read_artifact(image_id) == png()
    body = fake_llm.requests[-1].body
    expected = "data:image/png;base64," + base64.b64encode(png()).decode()
    if model == "fake:echo":  # the catalog says it reads no images: the text only
        assert base64.b64encode(png()).decode() not in str(body)
        assert "display: [image/png]" in str(body)
    else:
        assert WIRES[model](body) == [expected]


def test_a_large_image_is_scaled_down_within_bounds() -> None:
    from agi_jupyter.notebook.images import MAX_SIDE, images_of

    out = io.BytesIO()
    Image.new("RGB", (4000, 1000), (10, 120, 200)).save(out, format="PNG")
    output = {
        "output_type": "display_data",
        "data": {"image/png": base64.b64encode(out.getvalue()).decode(), "text/plain": "<Fig>"},
        "metadata": {},
    }
    svg = {"output_type": "display_data", "data": {"image/svg+xml": "<svg/>"}, "metadata": {}}
    (image,) = images_of([("c", [output, svg])])
    with Image.open(io.BytesIO(image.content)) as shown:
        assert shown.size == (MAX_SIDE, MAX_SIDE // 4)
    assert image.mime == "image/png"
    assert len(images_of([("c", [output] * 9)])) == 4


MATPLOTLIB = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()"
SVG_FORMAT = "from matplotlib_inline.backend_inline import set_matplotlib_formats\n"
SVG_FORMAT += "set_matplotlib_formats('svg')\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "source"),
    [
        *((model, MATPLOTLIB) for model in WIRES),
        ("openai:gpt-4o", SVG_FORMAT + MATPLOTLIB),  # an SVG figure, rasterised
    ],
    ids=["responses", "anthropic", "chat", "responses-svg"],
)
def test_a_matplotlib_plot_reaches_each_wire_api_as_an_image(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path, model: str, source: str
) -> None:
    write_notebook(project / "plots.ipynb", [("plot", "code", source)])
    env = {"ANTHROPIC_BASE_URL": fake_llm.anthropic_base_url, "ANTHROPIC_API_KEY": "sk-ant-t"}
    agi = make_agi(env=env, config={"default_model": model, "tool_timeout": 120})
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.run",
                    {"path": "plots.ipynb", "cell_ids": ["plot"], "timeout": 90},
                    id="plot",
                )
            ]
        ),
        Turn(text="a rising curve"),
    )
    result = agi.ask("plot it and look", agent="build")
    assert result.run.status == "succeeded"
    (call,) = agi.store.list_tool_calls(run_id=result.run_id)
    shown = "image/svg+xml" if "svg" in source else "image/png"
    assert f"display: [{shown}]" in call.result["output"], call.result["output"]
    (image_id,) = call.result["image_artifact_ids"]
    stored = agi.store.read_artifact(image_id)
    (sent,) = WIRES[model](fake_llm.requests[-1].body)
    assert sent == "data:image/png;base64," + base64.b64encode(stored).decode()
    with Image.open(io.BytesIO(stored)) as plot:
        assert plot.format == "PNG"
        width, height = plot.size
        assert 200 < width <= 1568, plot.size
        assert 200 < height <= 1568, plot.size
        colours = plot.convert("RGB").getcolors(maxcolors=100_000) or []
        assert len(colours) > 2, "a drawn plot: axes and a line, not a blank image"


def test_an_svg_output_is_rasterised_within_bounds_and_a_broken_one_left_out() -> None:
    from agi_jupyter.notebook.images import MAX_SIDE, images_of

    wide = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="6000" height="1500">'
        '<rect width="6000" height="1500" fill="#c83030"/></svg>'
    )
    small = '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20">\n'
    small += '<rect width="40" height="20"/>\n</svg>\n'

    def svg(text: Any) -> dict[str, Any]:
        return {"output_type": "display_data", "data": {"image/svg+xml": text}, "metadata": {}}

    images = images_of(
        [("c", [svg(wide), svg(small.splitlines(keepends=True)), svg("<not svg"), svg("<svg/>")])]
    )
    assert [i.title for i in images] == ["cell c output (SVG rasterised)"] * 2
    sizes = []
    for image in images:
        assert image.mime == "image/png"
        with Image.open(io.BytesIO(image.content)) as shown:
            sizes.append(shown.size)
            red = shown.convert("RGB").getpixel((1, 1))
    assert sizes == [(MAX_SIDE, MAX_SIDE // 4), (40, 20)]
    assert red == (0, 0, 0)  # the small one's black rectangle, drawn
