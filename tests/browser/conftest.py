"""Fixtures of the browser tests: one JupyterLab per worker, Debian's chromium via Playwright.

Playwright never downloads a browser here: it drives ``/usr/bin/chromium`` (or
``AGI_CHROMIUM``). Screenshots go to ``test-artifacts/browser/`` (or ``AGI_TEST_ARTIFACTS``),
which is git-ignored and kept as a CI artifact.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from browser_lab import LabServer, end_kernel_sessions, start_lab
from panel_page import shoot
from playwright.sync_api import expect

if TYPE_CHECKING:
    from agi_jupyter.testing import FakeLLMServer

CHROMIUM = os.environ.get("AGI_CHROMIUM", "/usr/bin/chromium")
# Generous waits: CI runs these beside the rest of the suite on 2 cores.
expect.set_options(timeout=20_000)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test on a JupyterLab runs on a SQLite store; those marked ``both_backends`` also
    on one whose server (and its kernels) keep the store in PostgreSQL."""
    if "lab" in metafunc.fixturenames:
        both = metafunc.definition.get_closest_marker("both_backends") is not None
        backends = ["sqlite", "postgres"] if both else ["sqlite"]
        metafunc.parametrize("lab_backend", backends, indirect=True, scope="session")


@pytest.fixture(scope="session")
def lab_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def lab(
    tmp_path_factory: pytest.TempPathFactory,
    fake_llm_session: FakeLLMServer,
    lab_backend: str,
    request: pytest.FixtureRequest,
) -> Iterator[LabServer]:
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        pytest.fail(f"no chromium at {CHROMIUM}: scripts/install.sh installs Debian's chromium")
    database_url = request.getfixturevalue("postgres_url") if lab_backend == "postgres" else None
    server = start_lab(
        tmp_path_factory.mktemp(f"lab-{lab_backend}"),
        fake_llm_session.url,
        database_url=database_url,
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def browser() -> Iterator[Any]:
    """Chromium for one test. Not session-scoped: Playwright's sync API marks an asyncio loop
    as running in this thread while it is started, which would break the asyncio tests that
    xdist runs after it in the same worker."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
            headless=True,
            args=[
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
            ],
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def fake(fake_llm_session: FakeLLMServer) -> Iterator[FakeLLMServer]:
    fake_llm_session.reset()
    yield fake_llm_session
    fake_llm_session.reset()


@pytest.fixture
def page(browser: Any, lab: LabServer, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh browser context (empty localStorage) with JupyterLab open; a screenshot of the
    last state is saved whatever the outcome, and the Lab log is printed on failure."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page
    finally:
        name = re.sub(r"[^\w.-]+", "_", request.node.name)
        with contextlib.suppress(Exception):  # the page may be gone: best effort
            shoot(page, f"{name}-last")
        context.close()
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print(f"--- JupyterLab log ---\n{lab.log_tail(80)}")
            print(f"--- page errors ---\n{errors}")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture
def no_kernels_left(lab: LabServer) -> Iterator[None]:
    """The notebooks' kernel sessions end with the test (the Lab server is shared): use it with
    ``pytestmark = pytest.mark.usefixtures("no_kernels_left")``."""
    yield
    end_kernel_sessions(lab)
