"""Images attached in the panel's composer, in a real JupyterLab (Debian's chromium): an image
pasted into the message box (a ClipboardEvent holding a PNG ``File``, as a screenshot's paste
is) shows as a chip with its thumbnail, goes with the message, reaches the model in its wire
API's form (the fake LLM server records the request) and shows in the transcript; files dragged
from JupyterLab's file browser onto the composer become an ``@`` mention (a notebook) or an
attached image (a PNG), and a model that reads no images is refused with its name."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from browser_lab import LabServer, write_notebook
from panel_page import PANEL_TAB, open_lab, open_panel, run_lab_command, shoot
from PIL import Image
from playwright.sync_api import expect

from agi_jupyter.testing import FakeLLMServer

pytestmark = pytest.mark.usefixtures("no_kernels_left")

PASTE = """([data, name]) => {
  const bytes = Uint8Array.from(atob(data), c => c.charCodeAt(0));
  const clipboard = new DataTransfer();
  clipboard.items.add(new File([bytes], name, { type: 'image/png' }));
  const box = document.querySelector('.jp-AgiPrompt');
  box.focus();
  return box.dispatchEvent(
    new ClipboardEvent('paste', { clipboardData: clipboard, bubbles: true, cancelable: true })
  );
}"""


def png(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (24, 16), colour).save(out, format="PNG")
    return out.getvalue()


def test_a_pasted_image_is_attached_sent_to_the_model_and_shown(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    # A project whose model reads images: its own folder and config.
    (lab.root / "vision" / ".agi").mkdir(parents=True, exist_ok=True)
    config = {
        "default_model": "fake:echo",
        "default_agent": "build",
        "models": {"fake:echo": {"vision": True}},
    }
    (lab.root / "vision" / ".agi" / "config.json").write_text(json.dumps(config))
    write_notebook(lab.root, "vision/look.ipynb", [("c1", "markdown", "# pictures")])
    open_lab(page, lab)
    run_lab_command(page, "docmanager:open", {"path": "vision/look.ipynb", "factory": "Notebook"})
    panel = open_panel(page)
    expect(panel.locator(".jp-AgiProject-path")).to_have_text("vision/")

    prompt = page.locator(".jp-AgiPrompt")
    prompt.click()
    page.keyboard.type("what colour is this?")
    red = png((200, 30, 30))
    taken = page.evaluate(PASTE, [base64.b64encode(red).decode(), "image.png"])
    assert taken is False, "the paste is handled (the image attached, no text pasted)"
    chip = page.locator(".jp-AgiComposer .jp-AgiImageChip")
    expect(chip).to_have_count(1)
    expect(chip.locator("img")).to_have_attribute(
        "src", "data:image/png;base64," + base64.b64encode(red).decode()
    )
    expect(prompt).to_have_value("what colour is this?")
    shoot(page, "attachments-01-pasted-image-chip")
    page.keyboard.press("Enter")

    user = page.locator(".jp-AgiMessage-user").last
    expect(user.locator("img.jp-AgiImage")).to_be_visible(timeout=60_000)
    expect(page.locator(".jp-AgiMessage-assistant").last).to_contain_text("echo", timeout=60_000)
    expect(page.locator(".jp-AgiComposer .jp-AgiImageChip")).to_have_count(0)
    body = fake.requests[-1].body
    (last_user,) = [m for m in body["messages"] if m["role"] == "user"][-1:]
    sent = [b["image_url"]["url"] for b in last_user["content"] if b["type"] == "image_url"]
    assert sent == ["data:image/png;base64," + base64.b64encode(red).decode()]
    shown = user.locator("img.jp-AgiImage").evaluate("img => img.naturalWidth")
    assert shown == 24, "the thumbnail is the stored image"
    shoot(page, "attachments-02-sent-and-shown")


def test_files_dropped_from_the_file_browser_become_a_mention_and_an_image(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    write_notebook(lab.root, "dropped.ipynb", [("c1", "code", "x = 1")])
    (lab.root / "blue.png").write_bytes(png((0, 90, 200)))
    open_lab(page, lab)
    # The panel to the right sidebar (as a person would), the file browser on the left.
    page.locator(PANEL_TAB).click(button="right")
    page.locator(".lm-Menu-item", has_text="Switch Sidebar Side").click()
    panel = open_panel(page)
    run_lab_command(page, "filebrowser:activate")
    run_lab_command(page, "filebrowser:refresh")
    composer = panel.locator(".jp-AgiComposer")

    listing = page.locator(".jp-DirListing-item")
    listing.filter(has_text="dropped.ipynb").drag_to(composer)
    expect(composer.locator('.jp-AgiMentionChip[data-kind="notebook"]')).to_contain_text(
        "@dropped.ipynb"
    )
    expect(page.locator(".jp-AgiPrompt")).to_have_value("@dropped.ipynb ")

    listing.filter(has_text="blue.png").drag_to(composer)
    chip = composer.locator(".jp-AgiImageChip")
    expect(chip).to_contain_text("blue.png")
    expect(chip.locator("img")).to_have_attribute(
        "src", "data:image/png;base64," + base64.b64encode(png((0, 90, 200))).decode()
    )
    shoot(page, "attachments-03-dropped-from-the-file-browser")

    # The root project's model reads no images: refused before a run, the message kept.
    requests = len(fake.requests)
    page.locator(".jp-AgiPrompt").focus()
    page.keyboard.press("End")
    page.keyboard.type("describe")
    page.keyboard.press("Enter")
    expect(page.locator(".jp-AgiError")).to_contain_text("fake:echo reads no images")
    expect(page.locator(".jp-AgiError")).to_contain_text("MODEL_READS_NO_IMAGES")
    expect(composer.locator(".jp-AgiImageChip")).to_have_count(1)
    expect(page.locator(".jp-AgiPrompt")).to_have_value("@dropped.ipynb describe")
    assert len(fake.requests) == requests
