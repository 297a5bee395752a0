"""Debian's headless Chromium under Selenium, offline and tidy, for Convoy's browser tests and screenshots.

Selenium never runs Selenium Manager (the driver's path is given), Chromium resolves no name but
localhost (it looks up Google's hosts at start-up otherwise), and everything it writes (profile, crash
database, dconf cache, singleton folder) goes to a scratch folder removed on quit.
"""
import contextlib
import os
import shutil
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@contextlib.contextmanager
def browser(width=1280, height=900):
    """A headless Chromium whose page area is width × height; quit and cleaned up on exit."""
    scratch = tempfile.mkdtemp(prefix="convoy-chromium-")
    env = dict(os.environ, TMPDIR=scratch, XDG_CONFIG_HOME=os.path.join(scratch, "config"),
               XDG_CACHE_HOME=os.path.join(scratch, "cache"))
    opts = Options()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={width},{height}", "--hide-scrollbars", "--no-first-run",
                "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-extensions", "--mute-audio", "--force-device-scale-factor=1",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"):
        opts.add_argument(arg)
    # The console's messages, for browser_errors().
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=CHROMEDRIVER, log_output=os.devnull, env=env)
    driver = webdriver.Chrome(options=opts, service=service)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(scratch, ignore_errors=True)


def fit_viewport(driver, width, height):
    """Headless Chromium takes the window's size for the browser's frame too: grow the window until the page
    area (and so a screenshot) is width × height."""
    iw, ih = driver.execute_script("return [innerWidth, innerHeight]")
    if (iw, ih) != (width, height):
        size = driver.get_window_size()
        driver.set_window_size(size["width"] + width - iw, size["height"] + height - ih)


def browser_errors(driver):
    """The page's console errors so far (a script that threw, a resource that failed to load), as text."""
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
