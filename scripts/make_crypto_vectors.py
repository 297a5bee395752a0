#!/usr/bin/env python3
"""Makes Convoy's crypto test vectors with PyNaCl, an implementation independent
of Convoy's Swift code (it binds libsodium through cffi, with its own encoding,
JSON and envelope assembly).

    scripts/.venv/bin/python3 scripts/make_crypto_vectors.py \
        > Tests/ConvoyCryptoTests/Vectors/pynacl-vectors.json

Keys come from fixed seeds so they are stable; sealed boxes and nonces are
random, so each run writes different ciphertexts that must all open.
"""
import base64
import hashlib
import json
import sys

import nacl
from nacl import bindings
from nacl.public import PrivateKey, SealedBox
from nacl.signing import SigningKey

b64 = lambda b: base64.b64encode(b).decode()


def seed(label: str) -> bytes:
    return hashlib.sha256(("convoy-vector:" + label).encode()).digest()


alice = PrivateKey(seed("alice-box"))      # recipient
mallory = PrivateKey(seed("mallory-box"))  # somebody else
sender_sign = SigningKey(seed("bob-sign"))


def seal(obj_or_text, to=alice):
    text = obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text, separators=(",", ":"))
    return b64(SealedBox(to.public_key).encrypt(text.encode()))


def flip(b64text: str, index: int) -> str:
    raw = bytearray(base64.b64decode(b64text))
    raw[index] ^= 0x01
    return b64(bytes(raw))


greenbox_ok = [
    {"name": "prd example", "plain": {"lat": 34.052, "lon": -118.243, "ts": 1678886400, "acc": 5.0}},
    {"name": "convoy extensions", "plain": {"lat": 45.77216, "lon": 14.35765, "ts": 1767600000, "acc": 12.5,
                                             "seq": 42, "sent_ns": 1767600000123456789}},
    {"name": "unknown fields ignored", "plain": {"lat": -33.9, "lon": 151.2, "ts": 1700000000.25, "acc": 0,
                                                  "battery": 0.8, "note": "hello"}},
    {"name": "extreme values", "plain": {"lat": -90, "lon": 180, "ts": 0, "acc": 1e6}},
]
for case in greenbox_ok:
    case["payload"] = seal(case["plain"])

good = seal({"lat": 1.5, "lon": 2.5, "ts": 1700000000, "acc": 3})
greenbox_bad = [
    {"name": "bad base64", "payload": "not base64!!", "error": "bad_base64"},
    {"name": "truncated", "payload": b64(base64.b64decode(good)[:40]), "error": "truncated"},
    {"name": "tampered byte", "payload": flip(good, 60), "error": "cannot_open"},
    {"name": "sealed to another key", "payload": seal({"lat": 1, "lon": 2, "ts": 3, "acc": 4}, to=mallory),
     "error": "cannot_open"},
    {"name": "not json", "payload": seal("lat=1,lon=2"), "error": "bad_json"},
    {"name": "json array", "payload": seal("[1,2,3]"), "error": "bad_json"},
    {"name": "missing acc", "payload": seal({"lat": 1, "lon": 2, "ts": 3}), "error": "bad_json", "key": "acc"},
    {"name": "lat is a string", "payload": seal({"lat": "1", "lon": 2, "ts": 3, "acc": 4}), "error": "bad_json",
     "key": "lat"},
    {"name": "lat out of range", "payload": seal({"lat": 90.5, "lon": 2, "ts": 3, "acc": 4}), "error": "out_of_range",
     "key": "lat"},
    {"name": "lon out of range", "payload": seal({"lat": 1, "lon": -180.01, "ts": 3, "acc": 4}),
     "error": "out_of_range", "key": "lon"},
    {"name": "negative accuracy", "payload": seal({"lat": 1, "lon": 2, "ts": 3, "acc": -1}), "error": "out_of_range",
     "key": "acc"},
]

# QuickPic: version | sealed key | nonce | XChaCha20-Poly1305(content, AD = version|sealed key) | Ed25519 sig.
def quickpic(content: bytes, to=alice, signer=sender_sign, corrupt_cipher=False):
    key = nacl.utils.random(32)
    header = bytes([1]) + SealedBox(to.public_key).encrypt(key)
    nonce = nacl.utils.random(24)
    cipher = bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(content, header, nonce, key)
    if corrupt_cipher:
        cipher = bytes([cipher[0] ^ 1]) + cipher[1:]
    body = header + nonce + cipher
    return b64(body + signer.sign(body).signature)


import nacl.utils  # noqa: E402

quickpic_ok = [
    {"name": "text message", "content": b"hello from PyNaCl"},
    {"name": "empty content", "content": b""},
    {"name": "binary 4 KiB", "content": bytes(range(256)) * 16},
]
for case in quickpic_ok:
    case["blob"] = quickpic(case["content"])
    case["content"] = b64(case["content"])

one = quickpic(b"payload")
raw = base64.b64decode(one)
quickpic_bad = [
    {"name": "truncated", "blob": b64(raw[:100]), "error": "truncated"},
    {"name": "bit flipped in transit", "blob": flip(one, 120), "error": "bad_signature"},
    {"name": "signed by someone else", "blob": quickpic(b"x", signer=SigningKey(seed("eve-sign"))),
     "error": "bad_signature"},
    {"name": "sealed to another recipient", "blob": quickpic(b"x", to=mallory), "error": "wrong_key"},
    {"name": "sender signed a corrupt ciphertext", "blob": quickpic(b"x", corrupt_cipher=True), "error": "tampered"},
    {"name": "unknown version", "blob": b64(bytes([2]) + raw[1:-64] + sender_sign.sign(bytes([2]) + raw[1:-64]).signature),
     "error": "unsupported_version"},
]

# QuickPic's data model: encrypted_content (the blob's body), content_type, and signature (Ed25519 over
# encrypted_content), apart.
def message(content: bytes, content_type="text", **kw):
    raw = base64.b64decode(quickpic(content, **kw))
    return {"encrypted_content": b64(raw[:-64]), "content_type": content_type, "signature": b64(raw[-64:])}


message_ok = [
    {"name": "text message", "content": b"hello from PyNaCl", "content_type": "text"},
    {"name": "gzipped image", "content": bytes.fromhex("1f8b0800000000000003") + bytes(range(200)), "content_type": "image"},
    {"name": "empty content", "content": b"", "content_type": "text"},
]
for case in message_ok:
    case.update(message(case["content"], case["content_type"]))
    case["content"] = b64(case["content"])

first, second = message(b"first"), message(b"second")
message_bad = [
    {"name": "signature of another message", "encrypted_content": first["encrypted_content"],
     "signature": second["signature"], "error": "bad_signature"},
    {"name": "signature cut short", "encrypted_content": first["encrypted_content"],
     "signature": b64(base64.b64decode(first["signature"])[:32]), "error": "bad_signature"},
    {"name": "content changed in transit", "encrypted_content": flip(first["encrypted_content"], 100),
     "signature": first["signature"], "error": "bad_signature"},
    {"name": "signed by someone else", **message(b"x", signer=SigningKey(seed("eve-sign"))), "error": "bad_signature"},
    {"name": "sealed to another recipient", **message(b"x", to=mallory), "error": "wrong_key"},
    {"name": "sender signed a corrupt ciphertext", **message(b"x", corrupt_cipher=True), "error": "tampered"},
    {"name": "encrypted_content too short", "encrypted_content": b64(base64.b64decode(first["encrypted_content"])[:50]),
     "signature": first["signature"], "error": "truncated"},
]

json.dump({
    "generator": f"scripts/make_crypto_vectors.py with PyNaCl {nacl.__version__} (libsodium {bindings.sodium_version_string() if hasattr(bindings, 'sodium_version_string') else 'bundled'})",
    "keys": {
        "recipient_secret": b64(bytes(alice)), "recipient_public": b64(bytes(alice.public_key)),
        "other_secret": b64(bytes(mallory)), "other_public": b64(bytes(mallory.public_key)),
        "sender_sign_seed": b64(bytes(sender_sign)), "sender_sign_public": b64(bytes(sender_sign.verify_key)),
    },
    "greenbox": {"open": greenbox_ok, "reject": greenbox_bad},
    "quickpic": {"open": quickpic_ok, "reject": quickpic_bad},
    "quickpic_message": {"open": message_ok, "reject": message_bad},
}, sys.stdout, indent=2)
sys.stdout.write("\n")
