"""Independent remote-attachment crypto (PyPI `cryptography`), for interop tests with XMTPCrypto.

Scheme (libxmtp xmtp_content_types::encryption): key = HKDF-SHA256(salt, ikm=secret, info=b"", 32);
AES-256-GCM with a 12-byte nonce, no AAD, output ciphertext || 16-byte tag; contentDigest = hex(sha256(output)).

  encrypt --in PLAINTEXT --out CIPHERTEXT [--secret HEX --salt HEX --nonce HEX]
      prints the params as JSON (contentDigest, secret, salt, nonce, scheme, contentLength)
  decrypt --in CIPHERTEXT --params JSON|FILE --out PLAINTEXT [--decode-attachment]
      checks the digest first (exit 3 on mismatch), decrypts (exit 4 on a bad tag), writes the plaintext;
      prints JSON {"contentDigest", "length"} and, with --decode-attachment, the attachment decoded by
      libxmtp itself (xmtp_bindings.decode_attachment): filename, mimeType, contentHex.
"""
import argparse
import hashlib
import json
import os
import sys

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def derive_key(secret: bytes, salt: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=b"").derive(secret)


def encrypt(args) -> int:
    plaintext = open(args.input, "rb").read()
    secret = bytes.fromhex(args.secret) if args.secret else os.urandom(32)
    salt = bytes.fromhex(args.salt) if args.salt else os.urandom(32)
    nonce = bytes.fromhex(args.nonce) if args.nonce else os.urandom(12)
    ciphertext = AESGCM(derive_key(secret, salt)).encrypt(nonce, plaintext, None)
    open(args.out, "wb").write(ciphertext)
    print(json.dumps({
        "contentDigest": hashlib.sha256(ciphertext).hexdigest(),
        "secret": secret.hex(), "salt": salt.hex(), "nonce": nonce.hex(),
        "scheme": "https://", "contentLength": len(ciphertext),
    }, sort_keys=True))
    return 0


def decrypt(args) -> int:
    text = args.params.strip()
    params = json.loads(text if text.startswith("{") else open(args.params).read())
    ciphertext = open(args.input, "rb").read()
    digest = hashlib.sha256(ciphertext).hexdigest()
    if digest != params["contentDigest"].lower():
        print(f"digest mismatch: expected {params['contentDigest']}, got {digest}", file=sys.stderr)
        return 3
    key = derive_key(bytes.fromhex(params["secret"]), bytes.fromhex(params["salt"]))
    try:
        plaintext = AESGCM(key).decrypt(bytes.fromhex(params["nonce"]), ciphertext, None)
    except InvalidTag:
        print("authentication failed", file=sys.stderr)
        return 4
    open(args.out, "wb").write(plaintext)
    result = {"contentDigest": digest, "length": len(plaintext)}
    if args.decode_attachment:
        import xmtp_bindings  # libxmtp's own codecs
        attachment = xmtp_bindings.decode_attachment(plaintext)
        result.update(filename=attachment.filename, mimeType=attachment.mime_type, contentHex=bytes(attachment.content).hex())
    print(json.dumps(result, sort_keys=True))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("encrypt")
    e.add_argument("--in", dest="input", required=True)
    e.add_argument("--out", required=True)
    e.add_argument("--secret")
    e.add_argument("--salt")
    e.add_argument("--nonce")
    d = sub.add_parser("decrypt")
    d.add_argument("--in", dest="input", required=True)
    d.add_argument("--params", required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--decode-attachment", action="store_true")
    args = parser.parse_args()
    return encrypt(args) if args.command == "encrypt" else decrypt(args)


if __name__ == "__main__":
    sys.exit(main())
