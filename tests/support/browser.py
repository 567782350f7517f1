"""A headless Chromium driven by Selenium, for the tests (and the benchmark) that open proctor's HTML pages."""

from __future__ import annotations

import shutil
import tempfile

import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


def browser():
    """A new headless Chromium (the test is skipped without selenium, Chromium or chromedriver); the caller quits it."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (pip install selenium)")
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    if not binary or not driver:
        pytest.skip("needs a Chromium browser and chromedriver (Debian: apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={tempfile.mkdtemp(prefix='proctor-chromium-')}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


def open_page(driver, url: str) -> None:
    """Load ``url`` as a new document. A URL that differs from the open page's only in its fragment would be a
    same-document navigation: WebDriver returns before the page's hashchange handler has drawn anything."""
    driver.get("about:blank")
    driver.get(url)


def wait_until(driver, condition, timeout: float = 30):
    """Wait for ``condition(driver)`` to be truthy (what a hashchange or a fetch draws comes after the action)."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def index_drawn(driver) -> None:
    """Wait until the viewer's runs index is drawn: only its drawIndex() sets ``#run-count[data-shown]``."""
    from selenium.webdriver.common.by import By

    wait_until(driver, lambda d: d.find_element(By.ID, "run-count").get_attribute("data-shown"))
