"""One model, one identity (issue 46 item 5): a model folder holding a registered model's weights is that model —
evaluated, stored and ranked under its name, the folder recorded — so one model never makes two leaderboard rows."""
from __future__ import annotations

import json
import shutil

import pytest

from lookbench.cli import main
from lookbench.encoders.entries import gr_lite_mini_folder
from lookbench.encoders.registry import load_encoder
from lookbench.leaderboard.ranking import leaderboard

from tests.helpers.engine_data import write_folder


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_folder(tmp_path_factory.mktemp("tiny") / "lookbench")


def test_a_folder_with_a_registered_model_s_weights_is_that_model(data, tmp_path, capsys):
    copy = tmp_path / "my-model"
    shutil.copytree(gr_lite_mini_folder(), copy)
    encoder = load_encoder(str(copy))
    assert encoder.name == "gr-lite-mini" and encoder.provenance["loaded_from"] == str(copy.resolve())
    assert encoder.fingerprint == load_encoder("gr-lite-mini").fingerprint

    store = tmp_path / "store"
    args = ["evaluate", "--data", str(data), "--results", str(store), "--quiet", "--mode", "strict",
            "--cache-dir", str(tmp_path / "cache")]
    assert main(args + ["--model", str(copy)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert (f"note: {copy.resolve()} holds the registered model gr-lite-mini (the same weights fingerprint): evaluated, "
            "stored and ranked as gr-lite-mini") in printed
    (stored,) = store.rglob("*.json")
    assert stored.relative_to(store).parts[0] == "gr-lite-mini"
    model = json.loads(stored.read_text())["provenance"]["model"]
    assert model["name"] == "gr-lite-mini" and model["loaded_from"] == str(copy.resolve())
    # the registered name is the same evaluation: answered from the store, and the leaderboard has one row
    assert main(args + ["--model", "gr-lite-mini"]) == 0
    assert "stored result of an identical evaluation" in capsys.readouterr().out
    assert len(list(store.rglob("*.json"))) == 1
    (section,) = leaderboard(results=store, reference=None).sections
    assert [row["model"] for row in section.rows] == ["gr-lite-mini"]


def test_a_folder_that_differs_in_weights_config_or_preprocessing_is_its_own_model(tmp_path):
    config = tmp_path / "other-config"
    shutil.copytree(gr_lite_mini_folder(), config)
    stated = json.loads((config / "config.json").read_text())
    (config / "config.json").write_text(json.dumps({**stated, "note": "retrained"}))
    processor = tmp_path / "other-size"
    shutil.copytree(gr_lite_mini_folder(), processor)
    stated = json.loads((processor / "preprocessor_config.json").read_text())
    (processor / "preprocessor_config.json").write_text(json.dumps({**stated, "size": {"height": 96, "width": 96}}))
    registered = load_encoder("gr-lite-mini")
    for folder in (config, processor):
        encoder = load_encoder(str(folder))
        assert encoder.name == str(folder) and "loaded_from" not in encoder.provenance
    assert load_encoder(str(processor)).fingerprint == registered.fingerprint  # same weights, read another way
    assert load_encoder(str(config)).fingerprint != registered.fingerprint
