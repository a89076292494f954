"""Hugging Face login on the review Space (issue 54), end to end on loopback: the review app served with a Space's
environment (Gradio's real OAuth routes, not its local mock) against a fake Hub OpenID provider; a browser signs in
through `/login/huggingface` → the provider → `/login/callback`, and the page's calls then write decisions as the
reviewer `LOOKBENCH_REVIEWERS` maps that Hub user to. An unmapped Hub user signed in, a browser not signed in, one
signed out, and a login whose id_token the provider's keys do not verify are refused and write nothing."""
from __future__ import annotations

import pytest

from lookbench.dataset_builder.decisions import DecisionStore
from lookbench.space.review.identity import HUB_REVIEWERS, Identity, Reviewer

from tests.helpers.annotated_release import write_annotated
from tests.helpers.fake_oauth import FakeOpenID, SpaceBrowser
from tests.helpers.review_app import answer, serve, shown_key  # noqa: F401  (serve: a fixture)

ENDPOINTS = (("/begin", []), ("/skip", []), ("/undo", []), ("/bulk_accept", ["(all)", "(all)", 0.0]))


@pytest.mark.slow
def test_a_hub_login_on_the_space_writes_as_its_mapped_reviewer_and_nobody_else_writes(tmp_path, monkeypatch, serve):
    from gradio_client.exceptions import AppError

    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=6)
    with FakeOpenID() as provider:
        for name, value in provider.space_env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv(HUB_REVIEWERS, "alice-hf=alice, bob-hf=bob:adjudicator")
        served = serve(raw, "--overlap", "1", "--shared", "0")
        assert "Hub users mapped: 2" in "".join(served.output)

        alice = SpaceBrowser(served.url)
        steps = alice.sign_in(provider, "alice-hf")
        assert steps == ["/login/huggingface", "/oauth/authorize", "/login/callback", "/", "200"]
        assert provider.requests[:2] == ["GET /.well-known/openid-configuration", "GET /oauth/authorize"]
        assert {"POST /oauth/token", "GET /oauth/jwks"} <= set(provider.requests)  # the code traded, the id_token checked
        assert provider.codes == {}  # the code used once
        assert alice.session()["oauth_info"]["userinfo"]["preferred_username"] == "alice-hf"
        store = DecisionStore(raw)
        pages = {"alice": alice.client()}
        bob = SpaceBrowser(served.url)
        assert bob.sign_in(provider, "bob-hf")[-1] == "200"
        pages["bob"] = bob.client()
        decided = {}
        for name, page in pages.items():
            decided[name] = shown_key(page.predict(api_name="/begin"))
            assert decided[name] is not None and f"**{name}**" in page.predict(api_name="/begin")[1]
            page.predict(*answer(truth[decided[name]]), api_name="/accept")
        assert store.reviewers() == ["alice", "bob"]
        for name in pages:
            assert [(e.reviewer, e.action, e.item) for e in store.events(name)] == [(name, "label", decided[name])]
        pages["bob"].predict(api_name="/undo")  # bob takes back his own decision, never alice's
        assert [e.action for e in store.events("bob")] == ["label", "undo"]
        assert [e.action for e in store.events("alice")] == ["label"]

        before = {name: len(store.events(name)) for name in pages}
        mallory = SpaceBrowser(served.url)
        assert mallory.sign_in(provider, "mallory-hf")[-1] == "200"  # the Hub lets her in; the Space's list does not
        nobody = SpaceBrowser(served.url)
        nobody.get("/")
        signed_out = SpaceBrowser(served.url)
        signed_out.sign_in(provider, "alice-hf")
        assert signed_out.get("/logout").status_code in (302, 307) and "oauth_info" not in signed_out.session()
        provider.forge = True  # an id_token signed with a key the provider's JWKS does not serve
        forged = SpaceBrowser(served.url)
        refused_login = forged.sign_in(provider, "alice-hf")
        assert refused_login[:3] == ["/login/huggingface", "/oauth/authorize", "/login/callback"]
        assert refused_login[3] == "500" and "oauth_info" not in forged.session()  # authlib refused the signature
        provider.forge = False
        for browser, why in ((mallory, "'mallory-hf' is not a reviewer"), (nobody, "or sign in with Hugging Face"),
                             (signed_out, "or sign in with Hugging Face"), (forged, "or sign in with Hugging Face")):
            page = browser.client()
            for api, args in (*ENDPOINTS, ("/accept", answer(truth[decided["alice"]]))):
                with pytest.raises(AppError, match=why):
                    page.predict(*args, api_name=api)
        assert {name: len(store.events(name)) for name in pages} == before
        assert store.reviewers() == ["alice", "bob"]  # no folder for anyone refused


def test_the_hub_list_is_read_only_where_gradio_signs_in_with_the_hub(tmp_path, monkeypatch):
    """Off a Space Gradio's login is a mock that signs anyone in as the machine's own Hub account, so ``SPACE_ID`` set
    by hand (without the ``SYSTEM=spaces`` a Space sets) must not turn the Hub list on: tokens only."""

    monkeypatch.setenv(HUB_REVIEWERS, "alice-hf=alice")
    monkeypatch.setenv("SPACE_ID", "owner/lookbench-review")
    monkeypatch.delenv("SYSTEM", raising=False)
    assert Identity.from_environment(tmp_path).hub == {}
    monkeypatch.setenv("SYSTEM", "spaces")
    assert Identity.from_environment(tmp_path).hub == {"alice-hf": Reviewer("alice")}
