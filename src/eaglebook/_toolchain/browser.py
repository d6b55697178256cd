"""Headless Chromium driven by Selenium, set up for a machine without network access.

Chromium and its driver are system packages (Debian: ``apt-get install chromium chromium-driver``); they are
not Python dependencies, so callers check :func:`find_chromium` first and skip or fail with its message.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DRIVERS = ("chromedriver",)
WIDTH, HEIGHT = 1280, 900
MISSING = "Chromium and chromedriver are not installed (Debian: apt-get install chromium chromium-driver)"


def find_chromium() -> tuple[str, str] | None:
    """(browser, driver) executables, from $CHROMIUM / $CHROMEDRIVER or the PATH; None when either is missing."""
    def pick(var, names):
        if os.environ.get(var):
            return shutil.which(os.environ[var])            # an explicit choice that does not exist: None
        return next(filter(None, map(shutil.which, names)), None)

    browser, driver = pick("CHROMIUM", BROWSERS), pick("CHROMEDRIVER", DRIVERS)
    return (browser, driver) if browser and driver else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def chromium(width: int = WIDTH, height: int = HEIGHT, allow_local_server: bool = False):
    """A headless Chromium (Selenium WebDriver) with a ``width`` x ``height`` CSS-pixel viewport.

    Every host name resolves to nothing (``--host-resolver-rules``), except 127.0.0.1 when
    ``allow_local_server``: a page that needs the network fails here instead of hanging, and the
    performance log (see :func:`network_requests`) shows what it tried.  The profile is a new empty
    folder, removed afterwards, as is the browser.
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    found = find_chromium()
    if found is None:
        raise RuntimeError(MISSING)
    browser, driver_path = found
    profile = tempfile.mkdtemp(prefix="eaglebook-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", "--disable-extensions",
                 f"--user-data-dir={profile}", f"--window-size={width},{height}",
                 "--host-resolver-rules=MAP * ~NOTFOUND" + (", EXCLUDE 127.0.0.1" if allow_local_server else "")):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    service = Service(executable_path=driver_path, log_output=os.path.join(profile, "chromedriver.log"))
    drv = None
    try:
        drv = webdriver.Chrome(service=service, options=opts)
        drv.set_page_load_timeout(60)
        drv.set_script_timeout(60)
        drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        yield drv
    finally:
        if drv is not None:
            drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


def network_requests(drv) -> list[str]:
    """http(s)/ws URLs the browser requested since the last call (reads and empties the performance log)."""
    urls = []
    for entry in drv.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            url = msg["params"]["request"]["url"]
            if url.split(":", 1)[0] in {"http", "https", "ws", "wss"}:
                urls.append(url)
    return urls


def screenshot(drv, path: Path, full_page: bool = True, max_height: int = 12000) -> Path:
    """Save a PNG of the page: the whole document up to ``max_height`` CSS px tall, or the first screen.

    The full page is taken by making the viewport as tall as the document (same width) and restoring it
    afterwards; Chrome's capture-beyond-viewport mode shifts this theme's layout sideways."""
    path.parent.mkdir(parents=True, exist_ok=True)
    size = drv.execute_script("return [window.innerWidth, window.innerHeight, "
                              "document.documentElement.scrollHeight]")
    width, height, doc = size
    tall = full_page and doc > height
    if tall:
        drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": width, "height": min(doc, max_height),
                                                                   "deviceScaleFactor": 1, "mobile": False})
    try:
        data = drv.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})["data"]
    finally:
        if tall:
            drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                                       "deviceScaleFactor": 1, "mobile": False})
    path.write_bytes(base64.b64decode(data))
    return path
