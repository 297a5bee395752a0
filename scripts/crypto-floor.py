"""The crypto floor of one delivered update on this machine, now: one libsodium sealed box sealed
(the sender) and opened (the recipient), through PyNaCl, on a payload the size of Convoy's
(about 150 bytes of JSON). Prints the median over batches of CPU microseconds per seal + open.

Usage: scripts/.venv/bin/python3 scripts/crypto-floor.py [BATCHES] [PER_BATCH]
"""
import statistics
import sys
import time

from nacl.public import PrivateKey, SealedBox

batches = int(sys.argv[1]) if len(sys.argv) > 1 else 7
per = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
key = PrivateKey.generate()
seal, unseal = SealedBox(key.public_key), SealedBox(key)
payload = (b'{"lat":48.8583701,"lon":2.2944813,"ts":1795920000.123,"acc":12.5,'
           b'"seq":12345,"sent_ns":1795920000123456789,"v":1,"pad":"..............."}')
figures = []
for _ in range(batches):
    start = time.process_time()
    for _ in range(per):
        unseal.decrypt(seal.encrypt(payload))
    figures.append((time.process_time() - start) / per * 1e6)
print(f"{statistics.median(figures):.1f}")
