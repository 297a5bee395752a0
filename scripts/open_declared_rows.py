#!/usr/bin/env python3
"""Opens the rows a declared app's phones wrote, with PyNaCl and the app's own
declaration, nothing of Convoy's: the independent reader of docs/apps.md.

Reads JSON on stdin:
  {"plaintext": <the app file's plaintext: a JSON template of "{{name}}" strings>,
   "encoding": "base64" | "hex",
   "secrets": {user_id: base64 X25519 secret key},
   "rows": [{"recipient": user_id, "box": sealed box as the row holds it}]}
and prints {"opened": N, "values": [{name: value, ...} per row]}: each
placeholder's value read at its place in the plaintext, in the template's units.
Exits 1 naming the row when a box does not open with its recipient's key, is not
JSON, or lacks a field the template declares (optional ones aside).
"""
import base64
import json
import sys

from nacl.public import PrivateKey, SealedBox

OPTIONAL = {"heading", "speed", "battery.percent", "battery.fraction", "seq", "sent_ns"}


def placeholder(t):
    if isinstance(t, str) and t.startswith("{{") and t.endswith("}}"):
        return t[2:-2].strip()
    return None


def collect(template, value, path, out):
    name = placeholder(template)
    if name is not None:
        out[name] = value
    elif isinstance(template, dict):
        if not isinstance(value, dict):
            raise ValueError(f"{path or 'the plaintext'} is not an object")
        for key, sub in template.items():
            if key not in value or value[key] is None:
                if placeholder(sub) in OPTIONAL or not json.dumps(sub).count("{{"):
                    continue
                raise ValueError(f"{path + '.' if path else ''}{key} is missing")
            collect(sub, value[key], f"{path + '.' if path else ''}{key}", out)
    elif isinstance(template, list):
        if not isinstance(value, list):
            raise ValueError(f"{path} is not an array")
        for i, sub in enumerate(template):
            if i < len(value):
                collect(sub, value[i], f"{path}[{i}]", out)


req = json.load(sys.stdin)
decode = bytes.fromhex if req["encoding"] == "hex" else base64.b64decode
boxes = {uid: SealedBox(PrivateKey(base64.b64decode(sk))) for uid, sk in req["secrets"].items()}
values = []
for i, row in enumerate(req["rows"]):
    try:
        plain = json.loads(boxes[row["recipient"]].decrypt(decode(row["box"])))
        found = {}
        collect(req["plaintext"], plain, "", found)
        values.append(found)
    except Exception as e:  # noqa: BLE001 - every failure names its row
        sys.exit(f"row {i} for {row['recipient']}: {type(e).__name__}: {e}")
json.dump({"opened": len(values), "values": values}, sys.stdout)
