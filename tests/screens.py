"""Screenshot tests: an element's screenshot against a stored reference, with a tolerance.

The browser tests render the side panel, the chat widget and a ``%%agi`` output in Debian's
chromium (same fonts, fixed viewport, animations stopped, caret hidden, changing texts such as
times and run ids masked), so a screenshot is stable from run to run; a visual regression
shows as pixels that differ. References live in ``tests/browser/screens/``; the latest
screenshot of every check (and, on a failure, a diff image) goes to
``test-artifacts/screens/``. ``AGI_UPDATE_SCREENSHOTS=1`` writes the references instead of
comparing (review them before committing).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
REFERENCES = REPO / "tests" / "browser" / "screens"
ARTIFACTS = Path(os.environ.get("AGI_TEST_ARTIFACTS", REPO / "test-artifacts")) / "screens"
# A pixel differs when a channel moves by more than this (antialiasing noise stays below)...
CHANNEL_TOLERANCE = 48
# ...and a screenshot fails when more than this share of its pixels differ.
MAX_DIFFERENT = 0.004


def check_screenshot(target: Any, name: str, *, mask: list[Any] | None = None) -> Path:
    """Screenshot ``target`` (a Playwright locator) and compare it with the reference ``name``."""
    from PIL import Image, ImageChops, ImageStat

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    actual = ARTIFACTS / f"{name}.png"
    target.screenshot(
        path=str(actual), animations="disabled", caret="hide", mask=mask or [], scale="css"
    )
    reference = REFERENCES / f"{name}.png"
    if os.environ.get("AGI_UPDATE_SCREENSHOTS") == "1":
        REFERENCES.mkdir(parents=True, exist_ok=True)
        reference.write_bytes(actual.read_bytes())
        return actual
    assert reference.is_file(), (
        f"no reference screenshot {reference.relative_to(REPO)}: look at {actual} and, if it is "
        "right, run the test with AGI_UPDATE_SCREENSHOTS=1"
    )
    with Image.open(actual) as shot, Image.open(reference) as ref:
        assert shot.size == ref.size, f"{name}: {shot.size} now, {ref.size} in the reference"
        diff = ImageChops.difference(shot.convert("RGB"), ref.convert("RGB"))
        changed = diff.point(lambda value: 255 if value > CHANNEL_TOLERANCE else 0).convert("L")
        # the share of pixels that differ: the mean of a 0/255 mask, over 255
        share = ImageStat.Stat(changed.point(lambda v: 255 if v else 0)).mean[0] / 255
        if share > MAX_DIFFERENT:
            changed.save(ARTIFACTS / f"{name}.diff.png")
        assert share <= MAX_DIFFERENT, (
            f"{name}: {share:.2%} of the pixels differ from the reference (more than "
            f"{MAX_DIFFERENT:.2%}); see {ARTIFACTS / name}.png and .diff.png"
        )
    return actual
