"""A maintainer's reproduction key for the tests: an ed25519 key pair (PyCA cryptography), its private key as the PEM
file `reproduce-submission --sign` takes, and a leaderboard card listing its public key under `reproduction_keys`;
and a record signed again after a test edited it (as a careless or hostile maintainer would sign it)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Signer:
    pem: Path  # the private key, PEM
    public: str  # the public key as the card lists it (32 raw bytes, base64)
    card: Path  # a leaderboard card listing it

    @property
    def keys(self) -> dict:
        """The trusted keys, as the board reads them from its card."""
        from lookbench.submissions.signing import card_keys

        return card_keys(self.card)


def new_signer(folder: Path) -> Signer:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    from lookbench.submissions.signing import raw_public

    folder.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    pem = folder / "reproduction.pem"
    pem.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    public = raw_public(key.public_key())
    card = folder / "README.md"
    card.write_text(f"---\ntitle: board\nsdk: gradio\nreproduction_keys:\n- {public}\n---\n\n# board\n")
    return Signer(pem, public, card)


def sign_again(record: Path, signer: Signer, submission_key: str | None = None) -> None:
    """Sign the record folder ``record`` as it is now with ``signer``'s key, for ``submission_key`` (default: the key
    its reproduction.json names)."""
    from lookbench.submissions.reproduction import _hashes, record_digest
    from lookbench.submissions.signing import SIGNATURE, private_key, sign

    made = json.loads((record / "reproduction.json").read_text())
    (record / SIGNATURE).unlink(missing_ok=True)
    signed = sign(private_key(signer.pem), record_digest(_hashes(record)), submission_key or made["submission_key"])
    (record / SIGNATURE).write_bytes(signed)
