"""`lookbench stage --review RAW` (issue 54): the review app staged as a private Space with Hugging Face login — its
card turns OAuth on, it carries its app, the lookbench package and the release (rows, images, taxonomy, the plan),
never a decision or an invitation, and the dataset repo does not take it in."""
from __future__ import annotations

import json

import pytest
import yaml

from lookbench.dataset_builder.decisions import DecisionStore
from lookbench.space.review.identity import invite
from lookbench.upload_scripts.manifest import REVIEW, Staging, files_of
from lookbench.space.review.session import open_review

from tests.helpers.annotated_release import write_annotated
from tests.helpers.staged_hub import staged_files


@pytest.mark.slow
def test_the_review_app_is_staged_as_a_private_space_with_its_release(tmp_path):
    from lookbench.upload_scripts.stage import stage

    raw = tmp_path / "raw"
    write_annotated(raw, n=4)
    review, _ = open_review(raw, overlap=2, shared=2)  # the plan drawn: the Space's reviewers work to it
    DecisionStore(raw).add("ann", "skip", review.items[0].key)
    invite(raw, "ben")
    hub = tmp_path / "HUB"
    with pytest.raises(ValueError, match="give both or neither"):
        stage(hub, only="dataset,review")
    staging = stage(hub, only="dataset,review", review=raw)  # nothing else prepared: no gallery, no model
    assert Staging.load(hub) == staging  # the manifest (a private Space in it) reads back as written
    space = next(r for r in staging.repos if r.repo_id == f"lookbench/{REVIEW}")
    assert (space.repo_type, space.private) == ("space", True)
    files = staged_files(hub, space.folder)
    card = (hub / space.folder / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(card.split("---")[1])
    assert front["hf_oauth"] is True and front["sdk"] == "gradio" and front["app_file"] == "app.py" and front["sdk_version"]
    assert "app.py" in files and "lookbench/space/review/identity.py" in files and "requirements.txt" in files
    release = sorted(f.removeprefix("release/") for f in files if f.startswith("release/"))
    expected = sorted([p.relative_to(raw).as_posix() for p in raw.rglob("*") if p.is_file()
                       and p.relative_to(raw).parts[0] != "reviews"] + ["reviews/plan.json"])
    assert release == expected  # rows, images, taxonomy and the plan; no decision, no invitation
    assert json.loads((hub / space.folder / "release/reviews/plan.json").read_text())["overlap"] == 2
    assert "def main" in (hub / space.folder / "app.py").read_text()
    dataset = next(r for r in staging.repos if r.repo_id == "lookbench/lookbench")
    assert not any(REVIEW in p.as_posix() for p in files_of(hub, dataset))  # nested, yet not the dataset's


def test_a_release_reviewed_with_gold_is_refused_in_one_line(tmp_path):
    """Its plan names the gold file on the maintainer's machine: a Space could not open the review, so none is staged."""
    from lookbench.upload_scripts.stage import stage

    from tests.dataset_builder.test_gold import write_gold

    raw = tmp_path / "raw"
    write_annotated(raw, n=4)
    write_gold(tmp_path / "gold", n=2)
    open_review(raw, overlap=1, shared=0, gold=tmp_path / "gold" / "gold.jsonl")
    with pytest.raises(ValueError) as err:
        stage(tmp_path / "HUB", only="review", review=raw)
    assert str(err.value) == (f"--review {raw}: its review mixes in gold items ({(tmp_path / 'gold' / 'gold.jsonl').resolve()}), "
                              "which a Space cannot read; review this release locally (lookbench review RAW --invite NAME)")
    assert not (tmp_path / "HUB" / "lookbench").exists()


@pytest.mark.parametrize("value, minutes", [(None, 1.0), ("1", 1.0), ("0.05", 0.05), (" 10 ", 10.0)])
def test_the_space_commits_its_decisions_every_minute_unless_its_settings_say_otherwise(value, minutes):
    from lookbench.space.review.hub_space import every

    assert every(value) == minutes


@pytest.mark.parametrize("value", ["0", "-1", "", "soon", "nan", "inf", "1e999"])
def test_an_interval_that_is_not_a_positive_number_of_minutes_is_refused_in_one_line(value):
    from lookbench.space.review.hub_space import every

    with pytest.raises(SystemExit) as stop:
        every(value)
    assert str(stop.value) == (f"LOOKBENCH_DECISIONS_EVERY={value!r}: not a positive number of minutes between two "
                               "commits of the decisions")
