#!/usr/bin/env python3
"""Stops a run from its dashboard's page as a person would, with `convoy run --dashboard-control`.

    dashboard_stop.py URL [--timeout S]

URL is the link convoy printed (the page, with #token=… when the token is to come from it; without it the page asks,
and this answers the prompt with nothing, so the stop is not sent). Waits for live data, checks the Stop button shows,
clicks it, accepts the confirmation, and waits for the run's end on the page. Prints one JSON object: what the page
said after the click, the end's verdict, and whether the button was hidden at the end; exit 0 when every wait was met.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chromium import browser, browser_errors  # noqa: E402
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def text(driver, id):
    return driver.execute_script("return (document.getElementById(arguments[0]) || {}).textContent || ''", id)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    result = {}
    with browser() as driver:
        driver.get(a.url)
        try:
            WebDriverWait(driver, a.timeout).until(lambda d: text(d, "connection") == "live")
            result["button_shown"] = driver.execute_script("return !document.getElementById('stop').hidden")
            driver.execute_script("document.getElementById('stop').click()")
            if "#token=" not in a.url:
                WebDriverWait(driver, 10).until(lambda d: d.switch_to.alert)
                driver.switch_to.alert.dismiss()  # the prompt for the token: nothing given
            WebDriverWait(driver, 10).until(lambda d: d.switch_to.alert)
            result["confirm"] = driver.switch_to.alert.text
            driver.switch_to.alert.accept()
            WebDriverWait(driver, 10).until(lambda d: text(d, "connection") != "live")
            result["said"] = text(driver, "connection")
            WebDriverWait(driver, a.timeout).until(lambda d: d.execute_script("return !document.getElementById('end').hidden"))
        except TimeoutException as e:
            result["error"] = f"a wait was not met: {e.msg or 'timeout'}"
            result["connection"] = text(driver, "connection")
            print(json.dumps(result))
            return 1
        result["verdict"] = text(driver, "verdict")
        result["button_hidden_at_end"] = driver.execute_script("return document.getElementById('stop').hidden")
        result["console_errors"] = browser_errors(driver)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
