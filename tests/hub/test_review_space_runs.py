"""The staged review Space run as the Hub runs it (issue 54): ``python app.py`` in the staged folder, in the venv of its
requirements.txt, importing the ``lookbench`` it carries, with a Space's settings — Hugging Face login against a
loopback OpenID provider, ``LOOKBENCH_DECISIONS`` a private dataset repo on a loopback Hub. The decisions already in
that repo count at start; a reviewer's accept is committed to it within seconds (``LOOKBENCH_DECISIONS_EVERY``), as
exactly the new event file — never the plan, never an invitation; restarted on a fresh disk the Space reads back what
was committed, and what is left when it is stopped is committed as it exits."""
from __future__ import annotations

import json
import time

import pytest

from lookbench.dataset_builder.decisions import DecisionStore
from lookbench.space.review.hub_space import DECISIONS, EVERY
from lookbench.space.review.identity import HUB_REVIEWERS
from lookbench.space.review.session import open_review

from tests.helpers.annotated_release import write_annotated
from tests.helpers.fake_hub import FakeHub
from tests.helpers.fake_oauth import FakeOpenID, SpaceBrowser
from tests.helpers.hub_space import HubSpace
from tests.helpers.review_app import answer, shown_key
from tests.helpers.venvs import clean_env, space_venv

pytestmark = pytest.mark.slow
REPO = "owner/lookbench-decisions"
EARLIER = "reviews/alice/00000001.json"


def commits_to(hub: FakeHub, repo: str) -> list[dict]:
    return [c for c in hub.commit_log if c["repo"] == f"dataset/{repo}" and c["summary"] != "made before"]


def wait_for_commits(hub: FakeHub, n: int, log, deadline_s: float = 120) -> list[dict]:
    deadline = time.monotonic() + deadline_s
    while len(commits_to(hub, REPO)) < n:
        assert time.monotonic() < deadline, f"no commit {n} to {REPO}:\n" + log.read_text()[-3000:]
        time.sleep(0.2)
    return commits_to(hub, REPO)


def signed_in(space: HubSpace, provider: FakeOpenID):
    """alice's page on the running ``space``, signed in with Hugging Face."""
    alice = SpaceBrowser(space.url)
    assert alice.sign_in(provider, "alice-hf")[-1] == "200"
    return alice.client()


def accept(page, view, truth: dict):
    """The item ``view`` shows accepted with its truth, as the page does it; the next view."""
    form = answer(truth[shown_key(view)])
    if view[4]["value"] != form[0]:
        page.predict(*form, api_name="/category")
    return page.predict(*form, api_name="/accept")


def test_the_review_space_reads_and_commits_its_decisions_on_the_hub(tmp_path, tmp_path_factory):
    from lookbench.upload_scripts.stage import stage

    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=6)
    open_review(raw, overlap=1, shared=0)  # the plan, staged with the Space
    staging = stage(tmp_path / "HUB", only="review", review=raw)
    folder = tmp_path / "HUB" / next(r.folder for r in staging.repos if r.repo_type == "space")
    earlier = sorted(truth)[0]  # alice labelled it on the Space before it restarted
    DecisionStore(tmp_path / "before").add("alice", "label", earlier, category=truth[earlier]["category"],
                                           attributes=truth[earlier]["attributes"])
    seeded = (tmp_path / "before" / EARLIER).read_bytes()

    with FakeHub(known_oids=True) as hub, FakeOpenID() as provider:
        hub.hold(f"dataset/{REPO}", {EARLIER: seeded, "README.md": b"decisions\n"})
        env = {k: v for k, v in clean_env().items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN")}
        # the Hub is the fake one (TRANSFORMERS_OFFLINE would turn huggingface_hub offline too)
        env.update(provider.space_env(), HF_ENDPOINT=hub.url, HF_TOKEN="hf_space_secret", HF_HUB_DISABLE_XET="1",
                   HF_TOKEN_PATH=str(tmp_path / "no-token-file"))
        env.update({HUB_REVIEWERS: "alice-hf=alice", DECISIONS: REPO})
        venv = space_venv(tmp_path_factory, folder)
        space = HubSpace(folder, tmp_path / "first", {**env, EVERY: "0.05"}, venv)  # a commit every 3 s
        carried = space.check("import lookbench; print(lookbench.__file__)")  # what `import lookbench` in app.py finds
        assert carried == str(space.app / "lookbench" / "__init__.py")
        with space.serve(deadline_s=300):
            assert (space.app / "release" / EARLIER).read_bytes() == seeded  # brought in at start
            page = signed_in(space, provider)
            view = page.predict(api_name="/begin")
            assert view[1].startswith("**alice**: 1 labelled, 0 skipped, 5 to go")  # the earlier decision counts
            assert (key := shown_key(view)) not in (None, earlier)
            view = accept(page, view, truth)
            [commit] = wait_for_commits(hub, 1, space.log_path)  # while the Space runs, within seconds
            assert commit["paths"] == ["reviews/alice/00000002.json"]  # the earlier file, unchanged, not again
            event = json.loads(hub.contents[f"dataset/{REPO}"]["reviews/alice/00000002.json"])
            assert (event["reviewer"], event["action"], event["item"]) == ("alice", "label", key)
            assert event["category"] == truth[key]["category"]
        assert space.returncode == 0  # stopped as the Hub stops a Space (SIGTERM), and exited cleanly

        # Restarted on a fresh disk, committing each hour: what alice decided is read back; her next accept waits
        # for the hour, and is committed as the Space stops.
        space = HubSpace(folder, tmp_path / "restarted", {**env, EVERY: "60"}, venv)
        with space.serve(deadline_s=300):
            page = signed_in(space, provider)
            view = page.predict(api_name="/begin")
            assert view[1].startswith("**alice**: 2 labelled, 0 skipped, 4 to go")
            assert shown_key(view) not in (None, earlier, key)
            accept(page, view, truth)
            time.sleep(5)
            assert len(commits_to(hub, REPO)) == 1  # not before the hour
        assert space.returncode == 0
    commits = commits_to(hub, REPO)
    assert [c["paths"] for c in commits] == [["reviews/alice/00000002.json"], ["reviews/alice/00000003.json"]]
    assert sorted(hub.contents[f"dataset/{REPO}"]) == ["README.md", EARLIER, "reviews/alice/00000002.json",
                                                       "reviews/alice/00000003.json"]
    calls = [r for r in hub.requests if REPO in r["path"]]
    assert calls and all(r["authorization"] == "Bearer hf_space_secret" for r in calls)  # the Space's token, always
