"""Every result records whether it is zero-shot (issue 56 item 1): the data's sources from its card's build history,
the model's declared training data, ``zero_shot`` and its reason in the provenance; `evaluate` says so in one line
when the model was trained on the data's source, and `compare` warns when it meets a zero-shot result."""
from __future__ import annotations

import json

import pytest
import yaml

from lookbench.engine import evaluate
from lookbench.schema import MINI_DATA
from tests.helpers.engine_data import write_folder

IN_DISTRIBUTION = "in-distribution, not zero-shot"


def built_from(folder, source: str):
    """``folder``'s card as `lookbench build --source <source>` records its history."""
    card = folder / "README.md"
    _, front, body = card.read_text().split("---\n", 2)
    meta = yaml.safe_load(front)
    meta["lookbench_history"] = [{"releases": ["v20250101"], "source": source, "command": "lookbench build",
                                  "report": None, "changes": "built"}]
    card.write_text("---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n" + body)
    return folder


@pytest.fixture(scope="module")
def mini_like(tmp_path_factory):
    return built_from(write_folder(tmp_path_factory.mktemp("mini-like") / "data"), "mini")


class Declares:
    """A user's encoder object that declares what it was trained on (or, ``None``, nothing)."""

    def __init__(self, trained):
        self.name, self.revision = "declares", "1"
        if trained is not None:
            self.training_datasets = trained

    def encode(self, images):
        import numpy as np

        return np.stack([np.asarray(i.convert("RGB").resize((4, 4)), dtype="float32").ravel() + 1 for i in images])


def test_the_result_records_the_datas_sources_and_the_models_claim(mini_like):
    trained = evaluate(Declares({MINI_DATA: ["train"]}), data=mini_like, quiet=True, use_cache=False).to_dict()
    p = trained["provenance"]
    assert p["dataset"]["sources"] == [MINI_DATA] and p["model"]["training_datasets"] == {MINI_DATA: ["train"]}
    assert (p["zero_shot"], p["zero_shot_reason"]) == (False, "trained on lookbench-mini (train)")
    other = evaluate(Declares({"imagenet-1k": ["train"]}), data=mini_like, quiet=True, use_cache=False)
    assert other.meta.zero_shot.value is True and other.to_dict()["provenance"]["zero_shot"] is True
    silent = evaluate(Declares(None), data=mini_like, quiet=True, use_cache=False).meta.zero_shot
    assert (silent.value, silent.reason) == (None, "the model declares no training data")


def test_data_without_a_build_history_is_unknown(data):
    unknown = evaluate("raw-pixels", data=data, quiet=True, use_cache=False).meta
    assert unknown.dataset.sources is None and unknown.zero_shot.value is None
    assert unknown.zero_shot.reason == "the data's source is not recorded"


@pytest.mark.slow
def test_evaluate_says_gr_lite_mini_is_in_distribution_and_compare_warns_beside_efficientnet(mini_like, tmp_path, capsys):
    from lookbench.cli import main

    common = ["--data", str(mini_like), "--quiet", "--no-cache", "--no-save"]
    assert main(["evaluate", "--model", "gr-lite-mini", "--output", str(tmp_path / "mini"), *common]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"trained on this data's source (lookbench-mini (train)): {IN_DISTRIBUTION}" in out
    stored = json.loads((tmp_path / "mini" / "results.json").read_text())["provenance"]
    assert stored["zero_shot"] is False and stored["model"]["training_datasets"]["fashion-mnist"] == ["train"]
    assert main(["evaluate", "--model", "efficientnet-lite0", "--output", str(tmp_path / "effnet"), *common]) == 0
    assert IN_DISTRIBUTION not in capsys.readouterr().out
    effnet = json.loads((tmp_path / "effnet" / "results.json").read_text())["provenance"]
    assert effnet["zero_shot"] is True and effnet["zero_shot_reason"] == "trained on imagenet-1k; evaluated on lookbench-mini"
    assert main(["compare", str(tmp_path / "mini"), str(tmp_path / "effnet")]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "warning: B is zero-shot, A in-distribution (trained on lookbench-mini (train))" in err
