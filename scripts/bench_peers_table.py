#!/usr/bin/env python3
"""scripts/bench-peers' reading of one run: Convoy beside each k6 script it ran, as a markdown table (table.md) and
each generator's steady state in plain figures (steady.json, what scripts/bench-fit fits).

    bench_peers_table.py OUT DEVICES DURATION CLK_TCK WORK K6SCRIPTS   (K6SCRIPTS: city,lean)

OUT holds what bench-peers wrote: <gen>.time (/usr/bin/time), <gen>-cpu.tsv (per second: the generator's user and
system ticks, the server's ticks, the rows the server has stored), <gen>-server.txt, k6-<script>-summary.json,
convoy/summary.json, floor-before.txt and floor-after.txt; WORK the servers' databases."""
import json
import re
import sqlite3
import sys

out, n, duration, ticks, work, scripts = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6].split(",")


def timefile(path):
    # /usr/bin/time -o writes "Command exited with non-zero status N" first when it did.
    e, u, s, m = open(path).read().split("\n")[-2].split()
    return {"elapsed": float(e), "cpu": float(u) + float(s), "user": float(u), "system": float(s), "hwm_kib": int(m)}


def server(path):
    t, hwm = open(path).read().split()
    return {"cpu": int(t) / ticks, "hwm_kib": int(hwm)}


def seconds(text):
    unit = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "": 1}
    return sum(float(v) * unit[u] for v, u in re.findall(r"([0-9]+)(ms|s|m|h)?", text))


def steady(path, x):
    """The steady state: from 15 s after the last arrival (the first stored row + N / 100 s) to 5 s before the steady
    phase ends, the process's CPU over the rows stored meanwhile, scaled to rows received by the run's own ratio of rows
    received to rows posted (Convoy posts to friends offline too; k6 hardly ever), and to requests by its rows a
    request."""
    lines = [tuple(float(v) for v in l.split()) for l in open(path) if not l.startswith("#")]
    first = next((l[0] for l in lines if l[4] > 0), None)
    if first is None or not x["posted"] or not x["posts"]:
        return
    a0, b0 = first + n / 100 + 15, first + n / 100 + seconds(duration) - 5
    window = [l for l in lines if a0 <= l[0] <= b0]
    if len(window) < 10:
        return
    a, b = window[0], window[-1]
    stored = b[4] - a[4]
    rows = stored * x["rows"] / x["posted"]
    if rows <= 0:
        return
    cpu, user = ((b[1] - a[1]) + (b[2] - a[2])) / ticks, (b[1] - a[1]) / ticks
    x["steady_row"], x["steady_user_row"] = cpu / rows * 1e6, user / rows * 1e6
    x["steady_srv_row"] = (b[3] - a[3]) / ticks / rows * 1e6
    x["steady"] = {"window_s": b[0] - a[0], "cpu_s": cpu, "rows_received": rows, "requests": stored * x["posts"] / x["posted"], "phones": n}


# Convoy.
cv = json.load(open(f"{out}/convoy/summary.json"))
cvp, cvsrv = timefile(f"{out}/convoy.time"), server(f"{out}/convoy-server.txt")
res, counters, lat = cv["resources"], cv["counters"], cv["latency_ms"]
cv_base_kib = res["before_devices"]["max_rss_mib"] * 1024
c = {"name": "Convoy", "posts": counters.get("updates", counters.get("http_requests", 0)), "rows": counters.get("received", 0),
     "posted": counters.get("sent", 0) + counters.get("sent_offline", 0), "http": counters.get("http_requests", 0),
     "p50": lat.get("e2e_latency", {}).get("p50", float("nan")), "p99": lat.get("e2e_latency", {}).get("p99", float("nan")),
     "c50": lat.get("commit_to_receipt", {}).get("p50", float("nan")), "c99": lat.get("commit_to_receipt", {}).get("p99", float("nan")),
     "mem": (cvp["hwm_kib"] - cv_base_kib) / n, "cpu": cvp["cpu"], "user": cvp["user"], "srv": cvsrv["cpu"]}

# Each k6 script.
k6idle = timefile(f"{out}/k6-idle.time")
k6s = []
for script in scripts:
    m = json.load(open(f"{out}/k6-{script}-summary.json"))["metrics"]
    kv = lambda name, stat="count", m=m: m.get(name, {}).get("values", {}).get(stat, 0)
    p, srv = timefile(f"{out}/k6-{script}.time"), server(f"{out}/k6-{script}-server.txt")
    k6s.append({"name": f"k6 {script}.js", "script": script, "posts": kv("posts"), "rows": kv("rows_received"), "posted": kv("rows_posted"),
                "http": kv("http_reqs"), "offline": kv("rows_to_offline"), "subscribed": kv("subscribed"), "failed": kv("posts_failed"),
                "p50": kv("e2e_latency", "med") if "e2e_latency" in m else float("nan"),
                "p99": kv("e2e_latency", "p(99)") if "e2e_latency" in m else float("nan"),
                "c50": kv("commit_to_receipt", "med"), "c99": kv("commit_to_receipt", "p(99)"),
                "mem": (p["hwm_kib"] - k6idle["hwm_kib"]) / n, "cpu": p["cpu"], "user": p["user"], "srv": srv["cpu"], "proc": p})

for x in [c] + k6s:
    x["cpu_req"] = x["cpu"] / x["posts"] * 1e6 if x["posts"] else float("nan")
    x["cpu_row"] = x["cpu"] / x["rows"] * 1e6 if x["rows"] else float("nan")
    x["user_row"] = x["user"] / x["rows"] * 1e6 if x["rows"] else float("nan")
    x["srv_row"] = x["srv"] / x["rows"] * 1e6 if x["rows"] else float("nan")
    for key in ("steady_row", "steady_user_row", "steady_srv_row"):
        x[key] = float("nan")
    tsv = "convoy-cpu.tsv" if x is c else f"k6-{x['script']}-cpu.tsv"
    try:
        steady(f"{out}/{tsv}", x)
    except (OSError, ValueError) as e:
        print(f"bench-peers: no steady state for {x['name']}: {e}")


def ratio(a, b):
    return f"{a / b:.2f}×" if b and a == a and b == b else "–"


def fmt(f, v):
    return f.format(v) if v == v else "–"


rows = [
    ("memory per phone / VU (peak RSS above idle)", "mem", "{:,.1f} KiB"),
    ("load generator CPU per request (bulk insert)", "cpu_req", "{:,.0f} µs"),
    ("load generator CPU per row received", "cpu_row", "{:,.0f} µs"),
    ("… of which user CPU (system: mostly loopback TCP)", "user_row", "{:,.0f} µs"),
    ("load generator CPU per row received, steady state", "steady_row", "{:,.0f} µs"),
    ("… of which user CPU", "steady_user_row", "{:,.0f} µs"),
    ("e2e latency p50 (intended send → received)", "p50", "{:,.2f} ms"),
    ("e2e latency p99", "p99", "{:,.2f} ms"),
    ("commit → receipt p50", "c50", "{:,.2f} ms"),
    ("commit → receipt p99", "c99", "{:,.2f} ms"),
    ("server CPU per row received", "srv_row", "{:,.0f} µs"),
    ("server CPU per row received, steady state", "steady_srv_row", "{:,.0f} µs"),
]
head = f"| {n:,} phones, steady {duration} | Convoy | " + " | ".join(k["name"] for k in k6s) + " | " + " | ".join(f"Convoy/{k['name']}" for k in k6s) + " |"
lines = [head, "|---|---:|" + "---:|" * (2 * len(k6s))]
for label, key, f in rows:
    lines.append(f"| {label} | {fmt(f, c[key])} | " + " | ".join(fmt(f, k[key]) for k in k6s) + " | "
                 + " | ".join(ratio(c[key], k[key]) for k in k6s) + " |")
floors = [float(open(f"{out}/floor-{w}.txt").read()) for w in ("before", "after")]
floor = sum(floors) / 2
for label, key in (("CPU per row received / crypto floor", "cpu_row"), ("… steady state / crypto floor", "steady_row")):
    lines.append(f"| {label} | {ratio(c[key], floor)} | " + " | ".join(ratio(k[key], floor) for k in k6s) + " |" + " |" * len(k6s))
table = "\n".join(lines)

tl = (res["end"]["cpu_user_s"] + res["end"]["cpu_system_s"]) - (res["timeline_start"]["cpu_user_s"] + res["timeline_start"]["cpu_system_s"])
notes = ["", f"- Convoy: {c['posts']:,} bulk inserts; posted {c['posted']:,} rows (sent {counters.get('sent', 0):,} + to friends offline "
         f"{counters.get('sent_offline', 0):,}), delivered {counters.get('delivered', 0):,}, received {c['rows']:,}, lost {counters.get('lost', 0):,}; "
         f"CPU {c['cpu']:.2f} s ({cvp['user']:.2f} user + {cvp['system']:.2f} system), peak RSS {cvp['hwm_kib'] / 1024:.1f} MiB "
         f"(idle baseline {cv_base_kib / 1024:.1f} MiB: summary.json before_devices)"]
for k in k6s:
    online = k["posted"] - k["offline"]
    notes.append(f"- {k['name']}: {k['posts']:,} bulk inserts ({k['http']:,} HTTP requests with sign-up, key and friend look-ups); posted "
                 f"{k['posted']:,} rows (to friends offline {k['offline']:,}), received {k['rows']:,} of {online:,} posted to friends online "
                 f"({100 * k['rows'] / online if online else 0:.1f} %), subscribed {k['subscribed']:,}/{n:,}; CPU {k['cpu']:.2f} s "
                 f"({k['proc']['user']:.2f} user + {k['proc']['system']:.2f} system), peak RSS {k['proc']['hwm_kib'] / 1024:.1f} MiB "
                 f"(idle baseline {k6idle['hwm_kib'] / 1024:.1f} MiB: an empty script, 1 VU)")
notes.append(f"- Convoy's own figures (summary.json): CPU {tl:.2f} s from the first arrival to the end, {res['cpu_per_delivered_us']:.0f} µs per "
             f"delivered update; " + (f"steady part {res['steady']['cpu_per_delivered_us']:.0f} µs per update received; "
                                       if res.get("steady", {}).get("cpu_per_delivered_us") else "no steady part long enough to measure; ")
             + f"{res['memory_per_device_kib']:.1f} KiB per device")
notes.append(f"- crypto floor (scripts/crypto-floor.py: a sealed box sealed and opened with PyNaCl's libsodium, CPU per pair, median of "
             f"7 × 2,000): {floors[0]:.0f} µs before k6, {floors[1]:.0f} µs after Convoy; the ratios use their mean, {floor:.0f} µs")
notes.append("- convoy serve CPU during the load: " + ", ".join(f"with {x['name']} {x['srv']:.2f} s" for x in [c] + k6s))
for x in [c] + k6s:
    if "steady" in x:
        st = x["steady"]
        notes.append(f"- steady state ({x['name']}): {st['window_s']:.0f} s, {st['rows_received'] / st['window_s']:,.0f} rows received/s, "
                     f"{st['requests'] / st['window_s']:,.0f} bulk inserts/s, {st['cpu_s'] / st['window_s'] * 1000:,.0f} ms of CPU a second")
text = table + "\n" + "\n".join(notes) + "\n"
open(f"{out}/table.md", "w").write(text)
json.dump({x["name"]: x.get("steady") for x in [c] + k6s}, open(f"{out}/steady.json", "w"), indent=1)
print(text)
for k in k6s:
    online = k["posted"] - k["offline"]
    if k["rows"] == 0 or k["rows"] < 0.99 * online:
        print(f"bench-peers: warning: {k['name']} received {k['rows']:,} rows of {online:,} posted to friends online")
