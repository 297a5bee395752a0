#!/usr/bin/env python3
"""Opens `convoy run --dashboard`'s page in headless Chromium as a person would and reports what it shows.

    dashboard_check.py URL [--timeout S] [--screenshot PNG] [--pause-pid PID]

Waits (no fixed sleeps) for live data (the page says "live" and phones are online), reads the live figures,
then waits for the run's end and reads the final ones: exit code, sent/delivered/lost, each threshold's
state, the groups' rows; then follows the page's link to report.html. Live and at the end it checks the layout at
1280, 1440 and 1920 px (scripts/browser/layout.py: no two boxes overlap, no figure wraps, no legend on a plot) and
collects the console's errors (a script that threw, a file that did not load). Prints one JSON object; exit 0 when
every wait was met, 1 with the reason otherwise. The caller compares the figures with summary.json.
With --pause-pid, once live it stops that process (SIGSTOP) until the page no longer says "live" (what it says
instead is reported), then lets it go on (SIGCONT) and waits for "live" again.
"""
import argparse
import json
import os
import signal
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chromium import browser, browser_errors, fit_viewport  # noqa: E402
from layout import layout_problems  # noqa: E402
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def number(text):
    text = (text or "").strip().strip(" /").replace(",", "")
    return None if text in ("", "–") else float(text) if "." in text else int(text)


# What the page shows, read in one turn of its script (the tables are redrawn every second, so reading
# them element by element from here could straddle a redraw).
READ = """
const t = (id) => (document.getElementById(id) || {}).textContent || "";
const rows = (sel, attr) => Object.fromEntries([...document.querySelectorAll(sel)].map(
  (r) => [r.getAttribute(attr), { cells: [...r.cells].map((c) => c.textContent), state: r.dataset.state || null }]));
return { ids: Object.fromEntries(arguments[0].map((id) => [id, t(id)])),
         end_shown: !document.getElementById("end").hidden,
         groups: rows("#groups tbody tr[data-group]", "data-group"),
         thresholds: rows("#thresholds tbody tr[data-threshold]", "data-threshold"),
         threshold_order: [...document.querySelectorAll("#thresholds tbody tr[data-threshold]")].map((r) => r.dataset.threshold),
         failing: document.getElementById("failing").hidden ? null : [...document.querySelectorAll("#failing-list li")].map(
           (li) => [li.dataset.threshold, li.querySelector(".figure").textContent]),
         operations: rows("#operations tbody tr[data-operation]", "data-operation"),
         operation_order: [...document.querySelectorAll("#operations tbody tr[data-operation]")].map((r) => r.dataset.operation),
         legends: [...document.querySelectorAll(".chart-legend")].map((l) => l.textContent),
         stop_shown: !document.getElementById("stop").hidden,
         processes: rows("#processes tbody tr[data-process]", "data-process"),
         chart_paths: document.querySelectorAll("#chart-phones path").length,
         map: { markers: document.querySelectorAll("#map circle.phone").length,
                clusters: document.querySelectorAll("#map g.cluster").length,
                drawn_for: Number(document.getElementById("map").dataset.phones || 0),
                online_in_data: mapView.data ? mapView.data.phones.filter((p) => p.online && p.lat != null).length : null,
                placed_in_data: mapView.data ? mapView.data.phones.filter((p) => p.lat != null).length : null,
                scale_bar: !!document.querySelector("#map #scale-bar") } };
"""
IDS = ["connection", "phase", "online", "devices", "subtitle", "sent", "received", "exit-code", "end-sent", "end-delivered",
       "end-lost", "verdict", "end-why-list", "end-p50", "end-p99", "p50", "p99", "run-p90", "run-p99", "run-p999", "latency-label",
       "run-latency-label"]
WIDTHS = (1440, 1920, 1280)


def layouts(driver):
    """The layout's problems at each width, by width (the page is left at 1280 px)."""
    return {str(w): layout_problems(driver, w) for w in WIDTHS}


def read(driver):
    return driver.execute_script(READ, IDS)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--screenshot", help="a PNG of the page once live data shows")
    ap.add_argument("--pause-pid", type=int, help="the run's process, stopped for a while once the page is live")
    a = ap.parse_args()
    result = {}
    with browser() as driver:
        driver.get(a.url)
        fit_viewport(driver, 1280, 900)
        try:
            WebDriverWait(driver, a.timeout).until(
                lambda d: (lambda p: p["ids"]["connection"] == "live" and (number(p["ids"]["online"]) or 0) > 0)(read(d)))
        except TimeoutException:
            print(json.dumps({"error": "no live data", "page": read(driver)}))
            return 1
        page = read(driver)
        result["live"] = {
            "failing": page["failing"], "threshold_order": page["threshold_order"], "legends": page["legends"], "stop_shown": page["stop_shown"],
            "processes": {k: v["cells"] for k, v in page["processes"].items()},
            "operations": {k: v["cells"] for k, v in page["operations"].items()}, "operation_order": page["operation_order"],
            "latency_label": page["ids"]["latency-label"], "run_latency_label": page["ids"]["run-latency-label"],
            "phase": page["ids"]["phase"], "online": number(page["ids"]["online"]), "devices": number(page["ids"]["devices"]),
            "groups": {k: v["cells"] for k, v in page["groups"].items()}, "chart_paths": page["chart_paths"],
            "thresholds": {k: v["state"] for k, v in page["thresholds"].items()},
        }
        if a.pause_pid:
            # A run that stops sending: the page must stop saying "live", and say it again once seconds arrive.
            os.kill(a.pause_pid, signal.SIGSTOP)
            try:
                WebDriverWait(driver, 15).until(lambda d: read(d)["ids"]["connection"] != "live")
                result["paused"] = {"said": read(driver)["ids"]["connection"],
                                    "state": driver.execute_script("return document.getElementById('connection').dataset.state || ''")}
            except TimeoutException:
                result["paused"] = {"said": "live", "state": ""}
            finally:
                os.kill(a.pause_pid, signal.SIGCONT)
            WebDriverWait(driver, a.timeout).until(lambda d: read(d)["ids"]["connection"] == "live")
            result["resumed"] = read(driver)["ids"]["connection"]
        # The map: one marker per online phone, as the map's own data has them.
        WebDriverWait(driver, a.timeout).until(lambda d: read(d)["map"]["markers"] > 0)
        m = read(driver)["map"]
        result["live"]["map"] = m
        result["layout"] = {"live": layouts(driver)}
        # A click on a phone: its friends and the last updates each received from it.
        driver.execute_script("selectPhone(Number(document.querySelector('#map circle.phone').dataset.i))")
        WebDriverWait(driver, 30).until(lambda d: d.execute_script(
            "return document.querySelectorAll('#phone-friends tbody tr').length > 0"))
        WebDriverWait(driver, a.timeout).until(lambda d: d.execute_script(
            "return [...document.querySelectorAll('#phone-friends tbody tr')].some((r) => r.textContent.includes(' ms'))"))
        result["live"]["clicked"] = driver.execute_script(
            "return { title: document.querySelector('#phone-panel h3').textContent,"
            " rows: [...document.querySelectorAll('#phone-friends tbody tr')].map((r) => [...r.cells].map((c) => c.textContent)),"
            " received_drawn: document.querySelectorAll('#map circle.received').length }")
        if a.screenshot:
            # A picture worth looking at: the steady part, with some of it charted.
            WebDriverWait(driver, a.timeout).until(lambda d: read(d)["ids"]["phase"] in ("steady", "ramp-down", "draining", "ended"))
            WebDriverWait(driver, a.timeout).until(lambda d: d.execute_script("return view.points.length") >= 12)
            driver.save_screenshot(a.screenshot)
        try:
            WebDriverWait(driver, a.timeout).until(lambda d: read(d)["end_shown"])
        except TimeoutException:
            print(json.dumps({"error": "the run's end never showed", **result}))
            return 1
        # After the end the map shows every phone where it last was.
        WebDriverWait(driver, 30).until(lambda d: (lambda m: m["placed_in_data"] and m["markers"] == m["placed_in_data"])(read(d)["map"]))
        result["layout"]["end"] = layouts(driver)
        # The end box's downloads, fetched as the browser would follow them: their text.
        result["downloads"] = {}
        for link in ("summary-link", "csv-link"):
            href = driver.execute_script("return document.getElementById(arguments[0]).href", link)
            with urllib.request.urlopen(href, timeout=30) as r:
                result["downloads"][link] = {"href": href, "status": r.status, "text": r.read().decode("utf-8")}
        page = read(driver)
        ids = page["ids"]
        result["end"] = {
            "run_p90": ids["run-p90"], "run_p99": ids["run-p99"], "run_p999": ids["run-p999"], "failing": page["failing"],
            "exit_code": number(ids["exit-code"]), "sent": number(ids["end-sent"]), "delivered": number(ids["end-delivered"]),
            "lost": number(ids["end-lost"]), "verdict": ids["verdict"], "received": number(ids["received"]),
            "thresholds": {k: v["state"] for k, v in page["thresholds"].items()},
            "map": page["map"],
            "why": ids["end-why-list"], "p50": ids["end-p50"], "p99": ids["end-p99"], "tile_p50": ids["p50"], "tile_p99": ids["p99"],
        }
        driver.find_element(By.ID, "report-link").click()
        WebDriverWait(driver, 30).until(lambda d: "report" in d.current_url and d.execute_script("return document.readyState") == "complete")
        result["report"] = {"url": driver.current_url, "title": driver.title,
                            "map_markers": len(driver.find_elements(By.CSS_SELECTOR, "svg.fleet-map circle.phone")),
                            "map_scale_bar": len(driver.find_elements(By.CSS_SELECTOR, "svg.fleet-map g.scale-bar"))}
        result["console_errors"] = browser_errors(driver)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
