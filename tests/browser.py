"""Headless Chromium for the dashboard's browser tests, the README screenshot and the benchmark.

Debian's ``chromium`` and ``chromium-driver`` driven by selenium (``.ci/run`` installs them).
The machine has no network: Chromium is started with everything that would reach out turned
off, and a fresh profile each time.
"""

from __future__ import annotations

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
    """A selenium WebDriver on headless Chromium with a fresh profile; quit afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


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
