# Makes ECIESP256Tests' vector with Tink's own hybrid encryption:
#   python3 -m venv /tmp/tink && /tmp/tink/bin/pip install tink cryptography
#   /tmp/tink/bin/python Tests/ConvoyCryptoTests/Vectors/tink-ecies.py
# Tink's ciphertexts are randomised (a fresh ephemeral key each), so each run prints another valid vector.
import tink, base64
from tink import hybrid, cleartext_keyset_handle
from tink.proto import tink_pb2, ecies_aead_hkdf_pb2, common_pb2
from cryptography.hazmat.primitives.asymmetric import ec
hybrid.register()
d = int.from_bytes(bytes(range(1,33)), 'big')
priv = ec.derive_private_key(d, ec.SECP256R1())
nums = priv.public_key().public_numbers()
tmpl = hybrid.hybrid_key_templates.ECIES_P256_HKDF_HMAC_SHA256_AES128_GCM
params = ecies_aead_hkdf_pb2.EciesAeadHkdfKeyFormat.FromString(tmpl.value).params
pub = ecies_aead_hkdf_pb2.EciesAeadHkdfPublicKey(version=0, params=params, x=nums.x.to_bytes(32,'big'), y=nums.y.to_bytes(32,'big'))
pk = ecies_aead_hkdf_pb2.EciesAeadHkdfPrivateKey(version=0, public_key=pub, key_value=d.to_bytes(32,'big'))
print("point_format", params.ec_point_format, "salt", params.kem_params.hkdf_salt, "dem", params.dem_params.aead_dem.type_url)
ks = tink_pb2.Keyset(primary_key_id=42)
k = ks.key.add()
k.key_data.type_url = "type.googleapis.com/google.crypto.tink.EciesAeadHkdfPrivateKey"
k.key_data.value = pk.SerializeToString()
k.key_data.key_material_type = tink_pb2.KeyData.ASYMMETRIC_PRIVATE
k.status = tink_pb2.ENABLED; k.key_id = 42; k.output_prefix_type = tink_pb2.RAW
h = cleartext_keyset_handle.from_keyset(ks)
enc = h.public_keyset_handle().primitive(hybrid.HybridEncrypt)
plain = bytes(range(100,132)); ctx = b"couple1|q1|alice|bob"
ct = enc.encrypt(plain, ctx)
dec = h.primitive(hybrid.HybridDecrypt)
assert dec.decrypt(ct, ctx) == plain
print("ct", ct.hex(), len(ct))
