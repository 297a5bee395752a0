#!/usr/bin/env python3
"""A third party's check of QuickPic messages as the server stored them: reads
every row of the `messages` table of a `convoy serve --app quickpic` SQLite
database, and, with a run's roster (`convoy run --keep-roster`), verifies each
signature with the sender's Ed25519 key (derived from its X25519 secret key as
Convoy's phones derive it: seed = HMAC-SHA-256(key = secret key, message =
"QuickPic Ed25519 signing key v1"), checked against the `signing_key` the user
published), then opens it with the recipient's secret key (PyNaCl), and checks
what it decrypts against its `content_type`: Convoy's text, or a gzipped PNG
carrying Convoy's tEXt chunk.

Usage: open_quickpic_db.py ROSTER DATABASE
Prints {"messages": n, "text": n, "image": n, "bytes": n}; exits 1 naming the
first message that does not verify, open or read back.
"""
import base64
import gzip
import hashlib
import hmac
import json
import sqlite3
import sys

from nacl import bindings
from nacl.public import PrivateKey, SealedBox
from nacl.signing import SigningKey, VerifyKey

CONTEXT = b"QuickPic Ed25519 signing key v1"


def raw(value):
    """A blob column, or base64 text (the spec stores the signature as base64)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return base64.b64decode(value)


def open_envelope(body, sig, recipient, verify_key):
    verify_key.verify(body, sig)
    if body[0] != 1:
        raise ValueError("unknown envelope version %d" % body[0])
    header, nonce, cipher = body[:81], body[81:105], body[105:]
    key = SealedBox(recipient).decrypt(header[1:])
    return bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(cipher, header, nonce, key)


def png_text(png):
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    at, text = 8, {}
    while at + 12 <= len(png):
        length = int.from_bytes(png[at:at + 4], "big")
        kind, data = png[at + 4:at + 8], png[at + 8:at + 8 + length]
        if kind == b"tEXt":
            key, _, value = data.partition(b"\0")
            text[key.decode()] = value.decode()
        if kind == b"IEND":
            return text
        at += 12 + length
    raise ValueError("a PNG without IEND")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    roster = json.load(open(sys.argv[1]))
    secrets = {d["user_id"]: base64.b64decode(d["secret_key"]) for d in roster["devices"]}
    db = sqlite3.connect(sys.argv[2])
    published = {row[0]: row[1] for row in db.execute("SELECT id, signing_key FROM users")}
    counts = {"messages": 0, "text": 0, "image": 0, "bytes": 0}
    for mid, sender, recipient, content, kind, sig in db.execute(
            "SELECT id, from_user_id, to_user_id, encrypted_content, content_type, signature FROM messages"):
        try:
            seed = hmac.new(secrets[sender], CONTEXT, hashlib.sha256).digest()
            derived = SigningKey(seed).verify_key
            if published.get(sender) and raw(published[sender]) != bytes(derived):
                raise ValueError("the sender's published signing_key is not the one derived from its secret key")
            plain = open_envelope(raw(content), raw(sig), PrivateKey(secrets[recipient]), VerifyKey(bytes(derived)))
            if kind == "text":
                if not plain.startswith(b"[convoy seq="):
                    raise ValueError("a text that is not Convoy's")
            elif kind == "image":
                if "Convoy" not in png_text(gzip.decompress(plain)):
                    raise ValueError("a photo without Convoy's tEXt chunk")
            else:
                raise ValueError("content_type %r" % kind)
        except Exception as e:  # noqa: BLE001 — any failure is the message's
            sys.exit("message %s (%s → %s): %s: %s" % (mid, sender, recipient, type(e).__name__, e))
        counts["messages"] += 1
        counts[kind] += 1
        counts["bytes"] += len(plain)
    json.dump(counts, sys.stdout)


main()
