"""Headless Chromium for the dashboard's browser tests, the README screenshot and the benchmark.

Debian's ``chromium`` and ``chromium-driver`` driven by selenium (``.ci/run`` installs them).
The machine has no network: Chromium is started with everything that would reach out turned
off; one browser serves a process's tests in turn (:func:`chromium`).
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


def available() -> bool:
    """Whether Chromium, its driver and selenium are installed."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()


@contextmanager
def chromium(width: int = 1400, height: int = 900) -> Iterator[Any]:
    """A selenium WebDriver on headless Chromium, its window ``width`` × ``height`` px.

    One Chromium serves a process's calls in turn (a start is about 1 s of CPU): each call
    gets it at a blank page with no cookies, resized; a call that raises quits it, so the next
    one starts afresh. It quits when the process exits."""
    if _open and not _alive(_open[0]):
        _quit()
    if not _open:
        _open.append(_start())
    driver = _open[0]
    driver.set_window_size(width, height)
    driver.delete_all_cookies()
    driver.get("about:blank")
    try:
        yield driver
    except BaseException:
        _quit()
        raise


_open: list[Any] = []  # the process's Chromium, when one runs


def _start() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.profile = profile
    atexit.register(_quit)
    return driver


def _alive(driver: Any) -> bool:
    try:
        driver.current_url  # noqa: B018 - a round trip to the browser
    except Exception:
        return False
    return True


def _quit() -> None:
    while _open:
        driver = _open.pop()
        with contextlib.suppress(Exception):
            driver.quit()
        shutil.rmtree(driver.profile, ignore_errors=True)


def by_testid(driver: Any, testid: str) -> Any:
    """The element with ``data-testid=testid`` (raises when there is none)."""
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, f'[data-testid="{testid}"]')


def all_by_css(driver: Any, css: str) -> list[Any]:
    """Every element matching ``css``."""
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, css))


def wait_for(driver: Any, condition: Callable[[Any], Any], timeout: float = 15.0) -> Any:
    """Poll ``condition(driver)`` until it is truthy (selenium's WebDriverWait); its value."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    ignored = (NoSuchElementException, StaleElementReferenceException)
    return WebDriverWait(driver, timeout, poll_frequency=0.05, ignored_exceptions=ignored).until(
        condition
    )
