"""Who is calling the review app: a reviewer named by an invitation's secret token, or a Hugging Face user mapped to
a reviewer on a private Space. Every handler asks ``Identity.reviewer_of(request)``; no request names its reviewer.

Invitations live in ``<RAW>/reviews/.invites.json`` (mode 0600): each reviewer's name, whether they adjudicate, and
only the SHA-256 of their token, so the file never lets anyone in. Its name starts with a dot, which no reviewer name
may (``decisions.check_reviewer``), so it never collides with a reviewer's folder. It is read at every call: a
revoked link stops working on a running server. A Space maps Hub users through ``LOOKBENCH_REVIEWERS``
(``hubuser=reviewer,other=name2:adjudicator``), a variable of the Space's settings.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from lookbench.dataset_builder.decisions import REVIEWS, ReviewError, check_reviewer
from lookbench.errors import shown
from lookbench.files import folder_lock, read_regular, replacing

INVITES = ".invites.json"
FORMAT = 1
TOKEN_PARAM = "token"  # the page link's query parameter: http://HOST:PORT/?token=…
TOKEN_HEADER = "x-lookbench-token"  # the same for an API client (gradio_client's ``headers=``)
HUB_REVIEWERS = "LOOKBENCH_REVIEWERS"


class IdentityError(ReviewError):
    """A call the app refuses: no token, a token no reviewer holds, a Hub user who is not a reviewer."""


@dataclass(frozen=True)
class Reviewer:
    name: str
    adjudicator: bool = False


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def invites_path(raw) -> Path:
    return Path(raw) / REVIEWS / INVITES


def read_invites(raw) -> dict[str, dict]:
    """Name -> ``{"sha256", "adjudicator"}``; refused in one line when the file is not one this module wrote."""
    path = invites_path(raw)
    if not path.exists():
        return {}
    try:
        data = json.loads(read_regular(path, 1 << 20).decode("utf-8"))
        assert data["format"] == FORMAT and isinstance(data["reviewers"], dict)
        return {check_reviewer(n): {"sha256": str(e["sha256"]), "adjudicator": bool(e.get("adjudicator"))}
                for n, e in data["reviewers"].items()}
    except (ValueError, KeyError, TypeError, AssertionError, UnicodeDecodeError) as err:
        raise ReviewError(f"{path}: not an invitation list ({shown(err)}); revoke and invite again") from None


def _change(raw, change) -> None:
    """Apply ``change`` to the invitation list under a lock and write it whole, readable by its owner only."""
    path = invites_path(raw)
    path.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(path, wait=True):
        reviewers = read_invites(raw)
        change(reviewers)
        with replacing(path) as tmp:
            os.chmod(tmp, 0o600)
            tmp.write_text(json.dumps({"format": FORMAT, "reviewers": reviewers}, indent=1, sort_keys=True) + "\n")


def invite(raw, name: str, adjudicator: bool = False) -> str:
    """A new secret token for ``name`` (replacing any earlier one, whose link stops working); only its hash is kept."""
    check_reviewer(name)
    token = secrets.token_urlsafe(24)
    _change(raw, lambda reviewers: reviewers.__setitem__(name, {"sha256": _digest(token), "adjudicator": adjudicator}))
    return token


def revoke(raw, name: str) -> None:
    def drop(reviewers):
        if reviewers.pop(check_reviewer(name), None) is None:
            raise ReviewError(f"{name!r} holds no invitation to {raw}")
    _change(raw, drop)


def link(host: str, port: int, token: str) -> str:
    return f"http://{host}:{port}/?{TOKEN_PARAM}={token}"


def hub_reviewers(text: str | None) -> dict[str, Reviewer]:
    """``LOOKBENCH_REVIEWERS`` read: Hub user -> reviewer; refused in one line naming the entry it cannot read."""
    mapped = {}
    for entry in filter(None, (part.strip() for part in (text or "").split(","))):
        user, _, rest = entry.partition("=")
        name, _, role = rest.partition(":")
        if not user.strip() or role not in ("", "adjudicator"):
            raise ReviewError(f"{HUB_REVIEWERS}: {shown(entry)} is not hubuser=reviewer[:adjudicator]")
        mapped[user.strip()] = Reviewer(check_reviewer(name.strip()), role == "adjudicator")
    return mapped


def hub_user(request) -> str | None:
    """The Hub user signed in through Gradio's OAuth on this request's session (``gr.LoginButton``), if any; an
    expired login is none, as ``gr.OAuthProfile`` treats it."""
    underlying = getattr(request, "request", None) or request
    scope = getattr(underlying, "scope", None)
    session = scope.get("session", {}) if isinstance(scope, dict) else getattr(underlying, "session", None) or {}
    info = session.get("oauth_info") if hasattr(session, "get") else None
    if not isinstance(info, dict) or (info.get("expires_at") or float("inf")) < time.time():
        return None
    user = (info.get("userinfo") or {}).get("preferred_username")
    return user if isinstance(user, str) and user else None


def _token(request) -> str | None:
    for source, key in (("query_params", TOKEN_PARAM), ("headers", TOKEN_HEADER)):
        try:
            value = dict(getattr(request, source) or {}).get(key)
        except (AttributeError, TypeError):
            value = None
        if isinstance(value, str) and value:
            return value
    return None


class Identity:
    """Who may call the app on ``raw``: the invited reviewers (read at every call), reviewers of this server's run
    only (``session``: the maintainer's own ``--reviewer``), and on a Space the mapped Hub users."""

    def __init__(self, raw, hub: dict[str, Reviewer] | None = None):
        self.raw = Path(raw)
        self.hub = hub or {}
        self.session: dict[str, Reviewer] = {}  # token digest -> reviewer, forgotten when the server stops

    @classmethod
    def from_environment(cls, raw) -> "Identity":
        """On a Space (``SYSTEM=spaces`` and ``SPACE_ID``: where Gradio's OAuth signs users in, ``gradio.utils.get_space``)
        the Hub users ``LOOKBENCH_REVIEWERS`` maps; elsewhere tokens only (a local Gradio's login is a mock that signs
        anyone in as the machine's own Hub account)."""
        on_space = os.environ.get("SYSTEM") == "spaces" and os.environ.get("SPACE_ID")
        return cls(raw, hub_reviewers(os.environ.get(HUB_REVIEWERS)) if on_space else {})

    def for_this_run(self, name: str, adjudicator: bool = False) -> str:
        """A token for ``name`` valid until this server stops; recorded nowhere."""
        token = secrets.token_urlsafe(24)
        self.session[_digest(token)] = Reviewer(check_reviewer(name), adjudicator)
        return token

    def _holder(self, token: str) -> Reviewer | None:
        digest = _digest(token)
        for known, reviewer in self.session.items():
            if hmac.compare_digest(known, digest):
                return reviewer
        for name, entry in read_invites(self.raw).items():
            if hmac.compare_digest(entry["sha256"], digest):
                return Reviewer(name, entry["adjudicator"])
        return None

    def who(self, request) -> Reviewer:
        token = _token(request)
        if token is not None:
            if (reviewer := self._holder(token)) is None:
                raise IdentityError("this link's token is not valid (revoked, replaced or mistyped); ask the maintainer "
                                    "for a new link")
            return reviewer
        user = hub_user(request)
        if user is not None and self.hub:
            if user not in self.hub:
                raise IdentityError(f"Hugging Face user {user!r} is not a reviewer of this release; ask the maintainer to "
                                    f"add you to {HUB_REVIEWERS}")
            return self.hub[user]
        raise IdentityError("no reviewer token: open the link `lookbench review RAW --invite NAME` printed"
                            + (", or sign in with Hugging Face" if self.hub else ""))

    def reviewer_of(self, request) -> str:
        """The calling reviewer's name; ``IdentityError`` (one line, never the token) for anyone else."""
        return self.who(request).name

    def is_adjudicator(self, request) -> bool:
        return self.who(request).adjudicator
