#!/usr/bin/env python3
"""What an open dashboard page asks of `convoy run --dashboard`, without a browser (for scripts/bench-dashboard):
/api/state once, the Server-Sent Events stream until its `end` event, and /api/map every two seconds meanwhile (gzip
accepted, as a browser does).
Prints how many events and maps it read, their bytes, and when (wall clock) the run's t = 0 was."""
import json
import sys
import threading
import time
import urllib.request

url = sys.argv[1].rstrip("/")
done = threading.Event()
# t0_wall: the wall-clock time of the run's first arrival (t = 0), from the earliest (arrival − t) of the ticks read.
counts = {"events": 0, "event_bytes": 0, "maps": 0, "map_bytes": 0, "t0_wall": None}


def maps():
    while not done.is_set():
        try:
            # As a browser asks: gzip accepted (the bytes counted are those sent).
            with urllib.request.urlopen(urllib.request.Request(url + "/api/map", headers={"Accept-Encoding": "gzip"}), timeout=10) as r:
                counts["map_bytes"] += len(r.read())
                counts["maps"] += 1
        except OSError:
            pass
        done.wait(2)


urllib.request.urlopen(url + "/api/state", timeout=10).read()
threading.Thread(target=maps, daemon=True).start()
try:
    with urllib.request.urlopen(url + "/api/events", timeout=600) as stream:
        for line in stream:
            counts["event_bytes"] += len(line)
            if line.startswith(b"event: "):
                counts["events"] += 1
                if line.strip() == b"event: end":
                    break
            elif line.startswith(b"data: {"):
                frame = json.loads(line[6:])
                if "t" in frame and "phase" in frame:
                    t0 = time.time() - frame["t"]
                    counts["t0_wall"] = t0 if counts["t0_wall"] is None else min(counts["t0_wall"], t0)
except OSError as e:
    print("stream ended:", e)
done.set()
print(counts)
