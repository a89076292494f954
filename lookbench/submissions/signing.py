"""Who vouches for a reproduction record: an ed25519 signature (PyCA ``cryptography``) by a maintainer's key over the
record's digest (``lookbench.files.digest`` of its files, the signature's own file left out) and the submission's key,
checked against the public keys the leaderboard Space's card lists (``reproduction_keys``). A record anyone can add
by pull request counts only when such a key signed exactly these files for exactly that submission
(docs/submitting.md, "Signing a reproduction record").

A key pair is made with ``openssl genpkey -algorithm ed25519 -out reproduction.pem`` (the private key, PEM, stays on the
maintainer's machine); the card lists the public key as the 32 raw bytes in base64 (what ``--sign`` prints, or
``openssl pkey -in reproduction.pem -pubout -outform DER | tail -c 32 | base64``) or as the PEM block
``openssl pkey -in reproduction.pem -pubout`` writes.
"""
from __future__ import annotations

import base64
import binascii
import json
import logging
from pathlib import Path

from lookbench.files import contained_file, read_regular

SIGNATURE = "signature.json"  # beside reproduction.json in a record; the one file its digest leaves out
CARD_KEY = "reproduction_keys"  # the leaderboard Space card's list of trusted public keys
SIGNATURE_FORMAT = 1
MAX_SIGNATURE_BYTES = 4096
MAX_KEY_BYTES = 16 * 1024
_CONTEXT = b"lookbench reproduction record\n"  # a signature over a record never passes for one over anything else
log = logging.getLogger("lookbench.submissions")


def _message(record_digest: str, submission_key: str) -> bytes:
    return _CONTEXT + f"{record_digest}\n{submission_key}\n".encode()


def raw_public(key) -> str:
    """An ed25519 public key as the card lists it: its 32 raw bytes in base64."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return base64.b64encode(key.public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()


def private_key(path):
    """The ed25519 private key in the PEM file ``path`` (unencrypted PKCS#8, as ``openssl genpkey`` writes it); anything
    else is a one-line ValueError."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    hint = "make one with: openssl genpkey -algorithm ed25519 -out FILE"
    content = read_regular(Path(path), MAX_KEY_BYTES, f"--sign {path}")
    try:
        key = load_pem_private_key(content, password=None)
    except (TypeError, ValueError) as err:  # TypeError: a key that wants a password
        raise ValueError(f"--sign {path} is not an unencrypted PEM private key ({type(err).__name__}); {hint}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"--sign {path} is a {type(key).__name__.removeprefix('_')}, not an ed25519 key; {hint}")
    return key


def sign(key, record_digest: str, submission_key: str) -> bytes:
    """The signature file of a record whose files hash to ``record_digest``, made for the submission ``submission_key``
    (the digest and key are written for a reader; the board recomputes both and never reads them)."""
    signature = key.sign(_message(record_digest, submission_key))
    return json.dumps({"signature_format": SIGNATURE_FORMAT, "public_key": raw_public(key.public_key()),
                       "signature": base64.b64encode(signature).decode(), "record_digest": record_digest,
                       "submission_key": submission_key}, indent=2).encode()


def public_key(entry):
    """One entry of the card's list as a key: a PEM public key block, or the 32 raw bytes in base64; ``None`` for
    anything else."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    if not isinstance(entry, str) or len(entry) > MAX_KEY_BYTES:
        return None
    try:
        if "-----BEGIN PUBLIC KEY-----" in entry:
            key = load_pem_public_key(entry.strip().encode())
            return key if isinstance(key, Ed25519PublicKey) else None
        raw = base64.b64decode(entry.strip(), validate=True)
        return Ed25519PublicKey.from_public_bytes(raw) if len(raw) == 32 else None
    except (ValueError, TypeError, binascii.Error):
        return None


def trusted_keys(entries) -> dict:
    """The card's list as {raw base64: key}; an entry that is no ed25519 public key is left out and logged."""
    keys = {}
    for entry in entries or ():
        key = public_key(entry)
        if key is None:
            log.warning("%s lists %r, which is no ed25519 public key (PEM, or 32 bytes in base64): ignored", CARD_KEY,
                        str(entry)[:60])
            continue
        keys[raw_public(key)] = key
    return keys


def card_keys(card) -> dict:
    """The trusted keys the Space card ``card`` lists under ``reproduction_keys`` (none when it cannot be read)."""
    from huggingface_hub import SpaceCard

    try:
        listed = SpaceCard.load(card).data.to_dict().get(CARD_KEY)
    except (OSError, ValueError) as err:
        log.warning("cannot read %s from %s (%s): no reproduction record is trusted", CARD_KEY, card, err)
        return {}
    return trusted_keys(listed if isinstance(listed, list) else ())


def unsigned_reason(record: Path, record_digest: str, submission_key: str, keys: dict) -> str | None:
    """Why the record in ``record`` is not vouched for by one of ``keys`` (``trusted_keys``) for these files and this
    submission — unsigned, signed by a key the card does not list, or a signature that does not match —; ``None``
    when it is."""
    from cryptography.exceptions import InvalidSignature

    try:
        signed = json.loads(read_regular(contained_file(record, SIGNATURE), MAX_SIGNATURE_BYTES, SIGNATURE))
    except ValueError:
        return f"not signed (no readable {SIGNATURE}: a maintainer signs a record with reproduce-submission --sign)"
    if not isinstance(signed, dict) or not isinstance(signed.get("signature"), str):
        return f"its {SIGNATURE} holds no signature"
    key = keys.get(signed.get("public_key")) if isinstance(signed.get("public_key"), str) else None
    if key is None:
        return "signed by a key the leaderboard's card does not list (reproduction_keys)"
    try:
        key.verify(base64.b64decode(signed["signature"], validate=True), _message(record_digest, submission_key))
    except (InvalidSignature, ValueError, binascii.Error):
        return "its signature does not match its files and this submission (changed since it was signed)"
    return None
