"""Zero-shot or in-distribution (issue 56 item 1): what a model declares it was trained on against where the evaluated
data comes from, recorded in a result's provenance and read back typed; old results read as unknown; `compare` warns
when it puts a zero-shot result beside an in-distribution one."""
from __future__ import annotations

import json

from lookbench.dataset_builder.catalog import SOURCES, data_sources
from lookbench.encoders.registry import REGISTRY
from lookbench.results.comparison import zero_shot_warning
from lookbench.results.provenance import Provenance, ZeroShot
from lookbench.schema import FASHION_MNIST_DATA, LOOKBENCH_DATA, MINI_DATA
from tests.helpers.results import synthetic

MINI, PHOTOS = [MINI_DATA], [FASHION_MNIST_DATA]


def test_gr_lite_mini_is_in_distribution_on_the_mini_and_its_photos_and_zero_shot_on_lookbench():
    trained = REGISTRY["gr-lite-mini"].training_datasets
    assert trained == {MINI_DATA: ("train",), FASHION_MNIST_DATA: ("train",)}
    assert REGISTRY["gr-lite-mini-text"].training_datasets == trained
    on_mini = ZeroShot.judge(trained, MINI)
    assert on_mini == ZeroShot(False, "trained on lookbench-mini (train)")
    assert ZeroShot.judge(trained, PHOTOS) == ZeroShot(False, "trained on fashion-mnist (train)")
    assert ZeroShot.judge(trained, [LOOKBENCH_DATA]).value is True


def test_efficientnet_is_zero_shot_and_a_model_that_declares_nothing_is_unknown():
    assert ZeroShot.judge(REGISTRY["efficientnet-lite0"].training_datasets, MINI) == ZeroShot(
        True, "trained on imagenet-1k; evaluated on lookbench-mini")
    assert ZeroShot.judge(REGISTRY["clip-b32"].training_datasets, [LOOKBENCH_DATA]).value is True
    assert ZeroShot.judge(REGISTRY["raw-pixels"].training_datasets, MINI) == ZeroShot(
        True, "trained on no data; evaluated on lookbench-mini")
    for undeclared in ("gr-lite", "marqo-fashionclip", "category-text"):
        assert ZeroShot.judge(REGISTRY[undeclared].training_datasets, MINI) == ZeroShot(
            None, "the model declares no training data")
    assert ZeroShot.judge(REGISTRY["efficientnet-lite0"].training_datasets, None) == ZeroShot(
        None, "the data's source is not recorded")
    assert ZeroShot(None, "").word == "unknown" and ZeroShot(True, "").word == "yes" and ZeroShot(False, "").word == "no"


def test_a_built_folder_names_where_its_images_come_from():
    assert data_sources(["mini"]) == MINI and data_sources(["fashion-mnist"]) == PHOTOS
    assert data_sources(["upstream"]) == data_sources(["raw", "upstream"]) == [LOOKBENCH_DATA]
    assert data_sources(["mini", "unknown"]) is None and data_sources([]) is None and data_sources([None]) is None
    assert {name: s.data for name, s in SOURCES.items()} == {"raw": LOOKBENCH_DATA, "upstream": LOOKBENCH_DATA,
                                                             "mini": MINI_DATA, "fashion-mnist": FASHION_MNIST_DATA}


def test_the_provenance_reads_the_record_and_an_old_result_as_unknown():
    recorded = Provenance({**ZeroShot(False, "trained on lookbench-mini (train)").to_json(),
                           "dataset": {"sources": MINI}})
    assert recorded.zero_shot == ZeroShot(False, "trained on lookbench-mini (train)")
    assert recorded.dataset.sources == MINI
    old = Provenance({"dataset": {"name": "LookBench-Mini (synthetic)"}})
    assert old.zero_shot.value is None and "not recorded" in old.zero_shot.reason and old.dataset.sources is None
    forged = Provenance({"zero_shot": "yes", "zero_shot_reason": "trust me", "dataset": {"sources": "mini"}})
    assert forged.zero_shot.value is None and forged.dataset.sources is None


def _result(seed: int, zero_shot: ZeroShot | None) -> dict:
    provenance = {"model": {"name": f"model-{seed}"}, "dataset": {"key": "local-x", "revision": "local-x"},
                  "mode": "strict", "distractors": True, "cutoff": None, **(zero_shot.to_json() if zero_shot else {})}
    return synthetic(seed, {"RealStudioFlat": 30}, provenance)


def test_compare_warns_when_a_zero_shot_result_meets_an_in_distribution_one(tmp_path, capsys):
    from lookbench.cli import main

    trained = ZeroShot(False, "trained on lookbench-mini (train)")
    zero = ZeroShot(True, "trained on imagenet-1k; evaluated on lookbench-mini")
    warning = zero_shot_warning(_result(1, trained), _result(2, zero))
    assert warning == ("warning: B is zero-shot, A in-distribution (trained on lookbench-mini (train)): the difference "
                       "mixes what the training data gave with what the models do")
    assert zero_shot_warning(_result(1, zero), _result(2, trained)).startswith("warning: A is zero-shot, B in-")
    assert zero_shot_warning(_result(1, zero), _result(2, zero)) is None
    assert zero_shot_warning(_result(1, trained), _result(2, None)) is None  # unknown: nothing to say
    paths = []
    for seed, claim in ((1, trained), (2, zero)):
        paths.append(tmp_path / f"{seed}.json")
        paths[-1].write_text(json.dumps(_result(seed, claim)))
    assert main(["compare", *map(str, paths), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)[-1]["subset"] == "overall"  # stdout stays the JSON
    assert "B is zero-shot, A in-distribution" in " ".join(captured.err.split())
    assert main(["compare", str(paths[0]), str(paths[0])]) == 0
    assert "zero-shot" not in capsys.readouterr().err
