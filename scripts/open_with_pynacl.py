#!/usr/bin/env python3
"""Opens ciphertexts that Convoy made, with PyNaCl: the other half of the
interop proof. Reads JSON on stdin:
  {"recipient_secret": b64, "sender_sign_public": b64,
   "greenbox": [b64 payload…], "quickpic": [b64 blob…],
   "quickpic_message": [{"encrypted_content": b64, "signature": b64}…]}
and prints {"greenbox": [plaintext JSON objects], "quickpic": [b64 content],
"quickpic_message": [b64 content]}.
Exits 1 with a message if anything fails to open or verify.
"""
import base64
import json
import sys

from nacl import bindings
from nacl.public import PrivateKey, SealedBox
from nacl.signing import VerifyKey

req = json.load(sys.stdin)
sk = PrivateKey(base64.b64decode(req["recipient_secret"]))
vk = VerifyKey(base64.b64decode(req["sender_sign_public"]))
out = {"greenbox": [], "quickpic": [], "quickpic_message": []}
for payload in req.get("greenbox", []):
    out["greenbox"].append(json.loads(SealedBox(sk).decrypt(base64.b64decode(payload))))


def quickpic(body, sig):
    vk.verify(body, sig)
    if body[0] != 1:
        sys.exit("unknown version")
    header, nonce, cipher = body[:81], body[81:105], body[105:]
    key = SealedBox(sk).decrypt(header[1:])
    return bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(cipher, header, nonce, key)


for blob in req.get("quickpic", []):
    raw = base64.b64decode(blob)
    out["quickpic"].append(base64.b64encode(quickpic(raw[:-64], raw[-64:])).decode())
for m in req.get("quickpic_message", []):
    content = quickpic(base64.b64decode(m["encrypted_content"]), base64.b64decode(m["signature"]))
    out["quickpic_message"].append(base64.b64encode(content).decode())
json.dump(out, sys.stdout)
