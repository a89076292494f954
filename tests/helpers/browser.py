"""Headless Chromium for the suite's browser tests: Debian's chromium (.ci/run installs it), driven by playwright."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
# In CI (.ci/run installs it) a browser test must run; elsewhere one without Debian's chromium says why it skipped.
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists() and os.environ.get("CI") != "true",
                                    reason="Debian's chromium (/usr/bin/chromium) is not installed; .ci/run installs it")


@contextlib.contextmanager
def chromium_page(profile: Path, width: int, height: int, **options):
    """A page of a fresh Chromium profile at ``profile`` with a ``width`` × ``height`` viewport; every wait up to
    120 s (a busy machine draws slowly); the browser closed afterwards, whatever happened."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(str(profile), executable_path=str(CHROMIUM), args=ARGS,
                                                       headless=True, viewport={"width": width, "height": height},
                                                       **options)
        try:
            page = browser.new_page()
            page.set_default_timeout(120_000)
            expect.set_options(timeout=120_000)
            yield page
        finally:
            browser.close()
