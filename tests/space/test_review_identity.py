"""Reviewers with names (issue 54): invited by `lookbench review RAW --invite NAME`, each call of the served app acts
only as its token's reviewer; an uninvited, mistyped or revoked token is refused on page load and on every endpoint;
on a Space a Hub login maps to a reviewer through LOOKBENCH_REVIEWERS, an unmapped one is refused."""
from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
import time

import pytest

from lookbench.dataset_builder.decisions import DecisionStore, ReviewError
from lookbench.space.review.identity import (HUB_REVIEWERS, Identity, IdentityError, hub_reviewers, invite, invites_path,
                                             read_invites)

from tests.helpers.annotated_release import write_annotated
from tests.helpers.review_app import answer, serve, shown_key  # noqa: F401  (serve: a fixture)


def run_review(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lookbench", "review", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.slow
def test_three_invited_reviewers_each_write_and_undo_only_as_themselves(tmp_path, serve):
    from gradio_client.exceptions import AppError

    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=9)
    made = run_review(raw, "--invite", "ann", "--invite", "ben", "--invite", "cy", "--port", "7999")
    assert made.returncode == 0, made.stderr
    links = dict(re.findall(r"^(\w+): (http://127\.0\.0\.1:7999/\?token=\S+)$", made.stdout, re.M))
    assert sorted(links) == ["ann", "ben", "cy"] and len(set(links.values())) == 3
    tokens = {name: url.split("token=")[1] for name, url in links.items()}
    kept = invites_path(raw)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert not any(token in kept.read_text() for token in tokens.values())  # only hashes are kept
    assert set(read_invites(raw)) == {"ann", "ben", "cy"}

    served = serve(raw, "--overlap", "1", "--shared", "0")
    assert not any(token in "".join(served.output) for token in tokens.values())
    clients = {name: served.client(token) for name, token in tokens.items()}
    decided = {}
    for name, client in clients.items():
        view = client.predict(api_name="/begin")
        decided[name] = shown_key(view)
        client.predict(*answer(truth[decided[name]]), api_name="/accept")
    store = DecisionStore(raw)
    assert store.reviewers() == ["ann", "ben", "cy"]
    for name in clients:
        assert [(e.reviewer, e.item) for e in store.events(name)] == [(name, decided[name])]
    # ben's undo takes back ben's decision; ann's stays, whatever ben's page holds
    clients["ben"].predict(api_name="/undo")
    assert [e.action for e in store.events("ben")] == ["label", "undo"]
    assert [e.action for e in store.events("ann")] == ["label"]
    with pytest.raises(AppError, match="nothing to undo"):
        clients["ben"].predict(api_name="/undo")  # ben has nothing left; ann's label is not his to take
    assert [e.action for e in store.events("ann")] == ["label"]

    # uninvited: no token, a wrong one, a revoked one — refused on page load and on an endpoint, nothing written
    revoked = run_review(raw, "--revoke", "cy")
    assert revoked.returncode == 0 and "revoked cy" in revoked.stdout and set(read_invites(raw)) == {"ann", "ben"}
    before = {name: len(store.events(name)) for name in clients}
    for client, why in ((served.client(), "no reviewer token"), (served.client("x" * 32), "not valid"),
                        (clients["cy"], "not valid")):
        for api, args in (("/begin", []), ("/accept", answer(truth[decided["ann"]])), ("/skip", []), ("/undo", []),
                          ("/bulk_accept", ["(all)", "(all)", 0.0])):
            with pytest.raises(AppError, match=why):
                client.predict(*args, api_name=api)
    assert {name: len(store.events(name)) for name in clients} == before
    again = run_review(raw, "--invite", "ann")  # a new link for ann: her old one stops working
    assert again.returncode == 0
    with pytest.raises(AppError, match="not valid"):
        clients["ann"].predict(api_name="/begin")


def test_invitations_refuse_a_bad_name_and_an_unknown_revocation(tmp_path):
    raw = tmp_path / "raw"
    write_annotated(raw, n=2)
    bad = run_review(raw, "--invite", "../etc")
    assert bad.returncode != 0 and bad.stderr.strip().count("\n") == 0 and "reviewer name" in bad.stderr
    unknown = run_review(raw, "--revoke", "zed")
    assert unknown.returncode != 0 and "holds no invitation" in unknown.stderr
    assert not (raw / "reviews" / "plan.json").exists()  # inviting draws no plan: the first review still chooses it


class Session:
    """What Gradio's OAuth leaves on a request's session after a Hub login (the mocked login's shape)."""

    def __init__(self, user, expires_at=None):
        self.session = {"oauth_info": {"access_token": "mock", "expires_at": expires_at or time.time() + 3600,
                                       "userinfo": {"preferred_username": user, "name": user, "profile": "",
                                                    "picture": ""}}}
        self.query_params, self.headers = {}, {}


def test_a_mapped_hub_user_reviews_as_their_reviewer_and_an_unmapped_one_is_refused(tmp_path, monkeypatch):
    import gradio as gr

    monkeypatch.setenv(HUB_REVIEWERS, "alice-hf=alice, bob-hf=bob:adjudicator")
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert Identity.from_environment(tmp_path).hub == {}  # off a Space: tokens only
    monkeypatch.setenv("SPACE_ID", "owner/lookbench-review")
    monkeypatch.setenv("SYSTEM", "spaces")  # a Space sets both (gradio.utils.get_space)
    identity = Identity.from_environment(tmp_path)
    assert identity.reviewer_of(Session("alice-hf")) == "alice" and not identity.is_adjudicator(Session("alice-hf"))
    assert identity.reviewer_of(Session("bob-hf")) == "bob" and identity.is_adjudicator(Session("bob-hf"))
    profile = gr.OAuthProfile(Session("alice-hf").session["oauth_info"]["userinfo"])
    assert profile.username == "alice-hf"  # the user Gradio would hand a handler is the one mapped
    from starlette.requests import Request

    signed_in = gr.Request(Request({"type": "http", "method": "GET", "path": "/", "headers": [], "query_string": b"",
                                    "session": Session("alice-hf").session}))  # as a handler gets it behind OAuth
    assert identity.reviewer_of(signed_in) == "alice"
    with pytest.raises(IdentityError, match="'mallory' is not a reviewer"):
        identity.reviewer_of(Session("mallory"))
    with pytest.raises(IdentityError, match="no reviewer token"):
        identity.reviewer_of(Session("alice-hf", expires_at=time.time() - 1))  # an expired login is no login
    with pytest.raises(ReviewError, match="hubuser=reviewer"):
        hub_reviewers("alice-hf=alice:owner")
    with pytest.raises(ReviewError, match="reviewer name"):
        hub_reviewers("alice-hf=../x")


def test_a_token_names_its_reviewer_and_a_revoked_one_nobody(tmp_path):
    class Asked:
        def __init__(self, token):
            self.query_params, self.headers = {"token": token}, {}

    raw = tmp_path / "raw"
    token = invite(raw, "dee", adjudicator=True)
    identity = Identity(raw)
    assert identity.reviewer_of(Asked(token)) == "dee" and identity.is_adjudicator(Asked(token))
    own = identity.for_this_run("eve")
    assert identity.reviewer_of(Asked(own)) == "eve" and "eve" not in read_invites(raw)
    assert not identity.is_adjudicator(Asked(own))
    assert identity.is_adjudicator(Asked(identity.for_this_run("fin", adjudicator=True)))  # --reviewer fin --adjudicator
    with pytest.raises(IdentityError) as refused:
        identity.reviewer_of(Asked(token[:-1] + "x"))
    assert token[:-1] not in str(refused.value)  # the refusal never repeats a token
    assert json.loads(invites_path(raw).read_text())["reviewers"]["dee"]["adjudicator"] is True
