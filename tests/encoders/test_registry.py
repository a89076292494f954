"""The published leaderboard's open models by name: registry entries, a fake hub cache at their pinned commits,
the published harness's preprocessing, conversions of the open_clip and GR-Lite layouts, pinned Hub ids, remote
code only on request, and `lookbench reproduce`."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from lookbench.results import stats
import torch
import torch.nn.functional as F
from tests.helpers.engine_data import write_folder
from tests.helpers.hub_cache import (TEST_HEAD, cache_family, open_clip_siglip_state, open_clip_vit_state, put_snapshot,
                               tiny_clip, tiny_marqo_clip, tiny_marqo_siglip, with_processor)
from tests.helpers.raw_release import write_upstream
from PIL import Image

from lookbench.cli import main
from lookbench.encoders.base import EncoderError
from lookbench.leaderboard.board import load_reference
from lookbench.encoders.registry import REGISTRY, load_encoder

CLOSED = {"GR-Pro", "Tianmu-MERE"}
# The upstream harness's get_transform constants, typed from look-bench models/{clip,siglip,dinov2}_model.py.
HARNESS_NORMALISATION = {
    "clip": ([0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]),
    "siglip": ([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]),
    "dinov2": ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
}
# The width of each tiny model's embedding (tests/helpers/hub_cache.py): the projection where the entry takes it.
TINY_WIDTH = {"clip-b32": 8, "marqo-fashionclip": 8, "siglip2-b16": 16, "marqo-fashionsiglip": 48, "dinov2-vitl": 16,
              "dinov3-vitl": 16, "dinov3-convnext-l": 16, "gr-lite": 16}
FAMILY_OF = {"clip-b32": "clip", "marqo-fashionclip": "clip", "siglip2-b16": "siglip", "marqo-fashionsiglip": "siglip",
             "dinov2-vitl": "dinov2", "dinov3-vitl": "dinov2", "dinov3-convnext-l": "dinov2", "gr-lite": "dinov2"}


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """An empty hub cache and LookBench home of this test's own (huggingface_hub reads both at call time)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HOME", str(tmp_path / "home"))
    return tmp_path / "hub"


def models_json(capsys, *args) -> list[dict]:
    assert main(["models", "--format", "json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def harness_transform(image: Image.Image, size: int, family: str) -> np.ndarray:
    """What torchvision's Resize((s, s)) + ToTensor + Normalize give for a PIL image, in torch."""
    mean, std = HARNESS_NORMALISATION[family]
    x = torch.from_numpy(np.array(image.convert("RGB").resize((size, size), Image.BILINEAR))).permute(2, 0, 1).float() / 255
    return ((x - torch.tensor(mean)[:, None, None]) / torch.tensor(std)[:, None, None]).numpy()


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
                      "DINOv3-ViT-L", "DINOv3-ViT-7B"}
    assert all(open_models[n]["revision"] == "unpinned" for n in set(open_models) - pinned)
    # an empty cache, offline: every Hub model says what to download
    assert by_published["CLIP-L/14"]["available"] is False
    assert all(isinstance(r["params"], (int, type(None))) and isinstance(r["input"], (int, type(None))) for r in rows)
    assert by_published["CLIP-L/14"]["needs"].endswith("hf download openai/clip-vit-large-patch14 --revision "
                                                      "32bd64288804d66eefd0ccbe215aa642df71cc41")
    assert "timm" in by_published["InternViT-6B"]["needs"]


def test_models_shows_the_cache_and_suggests_close_names(capsys, hub, tmp_path):
    cache_family(hub, "clip-b32", tmp_path)
    (row,) = models_json(capsys, "CLIP-B/32")  # a published name finds its entry
    assert (row["name"], row["available"], row["needs"]) == ("clip-b32", True, "in local cache")
    assert main(["models", "clip-b23"]) == 2
    assert "Did you mean 'clip-b32'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["clip-b32", "siglip2-b16", "dinov2-vitl", "dinov3-vitl", "dinov3-convnext-l",
                                  "marqo-fashionclip", "marqo-fashionsiglip", "gr-lite"])
def test_each_family_resolves_offline_at_its_pin_encodes_and_preprocesses_as_the_harness(name, hub, tmp_path):
    commit = cache_family(hub, name, tmp_path)
    encoder = load_encoder(name)
    assert encoder.provenance["revision"] == commit and encoder.provenance["model"] == REGISTRY[name].hub_id
    assert encoder.provenance["published_name"] == REGISTRY[name].published_name
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (37, 61, 3), dtype=np.uint8))  # not square
    x = encoder.preprocess(image)
    size = REGISTRY[name].image_size
    np.testing.assert_allclose(x, harness_transform(image, size, FAMILY_OF[name]), atol=1e-6)
    vectors = encoder.encode_batch([x, encoder.preprocess(image.rotate(90, expand=True))])
    assert vectors.shape == (2, TINY_WIDTH[name]) and np.isfinite(vectors).all() and not np.allclose(vectors[0], vectors[1])


def test_a_pinned_model_missing_from_the_cache_is_one_line_naming_what_to_download(capsys, hub, tmp_path):
    put_snapshot(hub, "openai/clip-vit-base-patch32", "f" * 40, tiny_clip(tmp_path / "other"))  # another commit only
    data = write_folder(tmp_path / "data")
    capsys.readouterr()
    assert main(["evaluate", "--model", "clip-b32", "--data", str(data), "--no-save", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "clip-b32" in err
    assert err.endswith("hf download openai/clip-vit-base-patch32 --revision 3d74acf9a28c67741b2f4f2ea7635f0aaf6f0268")


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


def test_converted_checkpoints_are_cached_per_commit(hub, tmp_path):
    cache_family(hub, "gr-lite", tmp_path)
    first = load_encoder("gr-lite")
    converted = first.folder
    assert converted.parent.name == "srpone--gr-lite" and converted.name == TEST_HEAD
    stamp = (converted / "model.safetensors").stat().st_mtime_ns
    again = load_encoder("gr-lite")
    assert again.folder == converted and (converted / "model.safetensors").stat().st_mtime_ns == stamp
    assert again.fingerprint == first.fingerprint
    # the embedding is the published DINOv3 backbone's L2-normalised CLS on the harness's 518 px input
    from safetensors.torch import load_file
    from transformers import DINOv3ViTConfig, DINOv3ViTModel

    from tests.helpers.hub_cache import GR_LITE_TINY
    from lookbench.models.gr_lite.configuration_gr_lite import PRESETS

    published = load_file(str(hub / "models--srpone--gr-lite" / "snapshots" / TEST_HEAD / "model.safetensors"))
    backbone = DINOv3ViTModel(DINOv3ViTConfig(**{**PRESETS["gr-lite"]["vision_config"], **GR_LITE_TINY})).eval()
    backbone.load_state_dict({("model." + k if k.startswith("layer.") else k): v for k, v in published.items()})
    image = Image.fromarray(np.random.default_rng(3).integers(0, 256, (50, 40, 3), dtype=np.uint8))
    x = harness_transform(image, 518, "dinov2")
    with torch.no_grad():
        expected = F.normalize(backbone(pixel_values=torch.from_numpy(x)[None]).pooler_output, dim=-1)
    np.testing.assert_allclose(again.encode_batch([again.preprocess(image)]), expected.numpy(), atol=1e-5)


# ---------------------------------------------------------------- the open_clip conversion against its layout


def _layer_norm(x, state, key, eps):
    return F.layer_norm(x, x.shape[-1:], state[f"{key}.weight"], state[f"{key}.bias"], eps)


def open_clip_vit_reference(state: dict, pixels: torch.Tensor, heads: int) -> torch.Tensor:
    """open_clip's VisionTransformer forward, written from its layout: conv1, class token, positions, ln_pre,
    resblocks (nn.MultiheadAttention on in_proj_*), ln_post on the class token, @ proj."""
    v = {k[len("visual."):]: t for k, t in state.items() if k.startswith("visual.")}
    x = F.conv2d(pixels, v["conv1.weight"], stride=v["conv1.weight"].shape[-1]).flatten(2).transpose(1, 2)
    x = torch.cat([v["class_embedding"].expand(x.shape[0], 1, -1), x], dim=1) + v["positional_embedding"]
    x = _layer_norm(x, v, "ln_pre", 1e-5)
    width = x.shape[-1]
    for i in range(sum(k.endswith(".attn.in_proj_weight") for k in v)):
        b = f"transformer.resblocks.{i}"
        attn = torch.nn.MultiheadAttention(width, heads, batch_first=True)
        attn.load_state_dict({"in_proj_weight": v[f"{b}.attn.in_proj_weight"], "in_proj_bias": v[f"{b}.attn.in_proj_bias"],
                              "out_proj.weight": v[f"{b}.attn.out_proj.weight"], "out_proj.bias": v[f"{b}.attn.out_proj.bias"]})
        h = _layer_norm(x, v, f"{b}.ln_1", 1e-5)
        x = x + attn(h, h, h, need_weights=False)[0]
        h = F.linear(F.gelu(F.linear(_layer_norm(x, v, f"{b}.ln_2", 1e-5), v[f"{b}.mlp.c_fc.weight"], v[f"{b}.mlp.c_fc.bias"])),
                     v[f"{b}.mlp.c_proj.weight"], v[f"{b}.mlp.c_proj.bias"])
        x = x + h
    return _layer_norm(x[:, 0], v, "ln_post", 1e-5) @ v["proj"]


def timm_siglip_reference(state: dict, pixels: torch.Tensor, heads: int) -> torch.Tensor:
    """timm's SigLIP ViT with attention pooling, written from its layout: patch_embed + pos_embed, blocks with a
    fused qkv, final norm, then the latent query attending to the tokens (q, kv, proj) and a residual MLP."""
    t = {k[len("visual.trunk."):]: v for k, v in state.items() if k.startswith("visual.trunk.")}
    w = t["patch_embed.proj.weight"]
    x = F.conv2d(pixels, w, t["patch_embed.proj.bias"], stride=w.shape[-1]).flatten(2).transpose(1, 2) + t["pos_embed"]
    n, width = x.shape[0], x.shape[-1]

    def split(y):
        return y.reshape(n, -1, heads, width // heads).transpose(1, 2)

    for i in range(sum(k.endswith(".attn.qkv.weight") for k in t)):
        b = f"blocks.{i}"
        q, k, v = F.linear(_layer_norm(x, t, f"{b}.norm1", 1e-6), t[f"{b}.attn.qkv.weight"], t[f"{b}.attn.qkv.bias"]).chunk(3, -1)
        a = F.scaled_dot_product_attention(split(q), split(k), split(v)).transpose(1, 2).reshape(n, -1, width)
        x = x + F.linear(a, t[f"{b}.attn.proj.weight"], t[f"{b}.attn.proj.bias"])
        h = _layer_norm(x, t, f"{b}.norm2", 1e-6)
        x = x + F.linear(F.gelu(F.linear(h, t[f"{b}.mlp.fc1.weight"], t[f"{b}.mlp.fc1.bias"])), t[f"{b}.mlp.fc2.weight"], t[f"{b}.mlp.fc2.bias"])
    x = _layer_norm(x, t, "norm", 1e-6)
    q = F.linear(t["attn_pool.latent"].expand(n, -1, -1), t["attn_pool.q.weight"], t["attn_pool.q.bias"])
    k, v = F.linear(x, t["attn_pool.kv.weight"], t["attn_pool.kv.bias"]).chunk(2, -1)
    a = F.scaled_dot_product_attention(split(q), split(k), split(v)).transpose(1, 2).reshape(n, -1, width)
    p = F.linear(a, t["attn_pool.proj.weight"], t["attn_pool.proj.bias"])
    h = _layer_norm(p, t, "attn_pool.norm", 1e-6)
    p = p + F.linear(F.gelu(F.linear(h, t["attn_pool.mlp.fc1.weight"], t["attn_pool.mlp.fc1.bias"])),
                     t["attn_pool.mlp.fc2.weight"], t["attn_pool.mlp.fc2.bias"])
    return p[:, 0]


def test_open_clip_vit_conversion_reproduces_the_open_clip_forward(tmp_path):
    from transformers import CLIPVisionModelWithProjection

    from lookbench.encoders.open_clip import convert_open_clip

    out = convert_open_clip(tiny_marqo_clip(tmp_path / "src"), tmp_path / "out")
    converted = CLIPVisionModelWithProjection.from_pretrained(out).eval()
    pixels = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours = converted(pixel_values=pixels).image_embeds
    expected = open_clip_vit_reference(open_clip_vit_state(), pixels, heads=16 // 8)
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-4)


def test_open_clip_siglip_conversion_reproduces_the_timm_forward(tmp_path):
    from transformers import SiglipVisionModel

    from lookbench.encoders.open_clip import convert_open_clip

    converted = SiglipVisionModel.from_pretrained(convert_open_clip(tiny_marqo_siglip(tmp_path / "src"), tmp_path / "out")).eval()
    pixels = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ours = converted(pixel_values=pixels).pooler_output
    expected = timm_siglip_reference(open_clip_siglip_state(), pixels, heads=12)  # vit_base: 12 heads
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-4)


def test_an_open_clip_checkpoint_with_an_unmapped_vision_key_is_refused(tmp_path):
    from lookbench.encoders.open_clip import convert_open_clip
    from tests.helpers.hub_cache import write_open_clip

    state = {**open_clip_vit_state(), "visual.attn_pool.query": torch.zeros(2)}
    cfg = {"embed_dim": 8, "vision_cfg": {"image_size": 224, "layers": 2, "width": 16, "patch_size": 32, "head_width": 8}}
    with pytest.raises(ValueError, match="attn_pool.query"):
        convert_open_clip(write_open_clip(tmp_path / "src", state, cfg, [0.5] * 3, [0.5] * 3), tmp_path / "out")


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
        # the local bootstrap interval holds the local score; the published one is Wilson's on its 981 queries
        local_lo, local_hi = float(cells[6].strip("[,")), float(cells[7].strip("]"))
        assert local_lo <= float(cells[2]) <= local_hi
        pub_lo, pub_hi = stats.wilson(expected, 981)
        assert (float(cells[8].strip("[,")), float(cells[9].strip("]"))) == pytest.approx((pub_lo, pub_hi), abs=0.006)
        half = ((local_hi - local_lo) / 2) ** 2 + ((pub_hi - pub_lo) / 2) ** 2
        assert float(cells[5]) == pytest.approx(half ** 0.5, abs=0.02)
    # not cached, offline: named, with what to download
    assert "CLIP-L/14 (clip-l14): the Hub, offline now: hf download openai/clip-vit-large-patch14" in out
    assert "PP-ShiTuV2 (pp-shituv2): unavailable" in out
    assert "query counts differ from the published ones (RealStreetLook: 6 here, 981 published)" in out
    assert "their differences mean nothing" in out


def test_reproduce_on_data_it_cannot_read_fails_once_in_one_line(capsys, hub, tmp_path):
    cache_family(hub, "dinov2-vitl", tmp_path)
    capsys.readouterr()
    assert main(["reproduce", "--data", "nobody/no-such-data", "--models", "dinov2-vitl", "CLIP-B/32", "--quiet"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "Cannot read the dataset configs of nobody/no-such-data" in captured.err


def test_a_local_run_of_a_published_model_stands_beside_its_published_row(tmp_path):
    from lookbench.leaderboard.board import leaderboard

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


def test_a_checkpoint_that_does_not_convert_is_one_line_and_leaves_no_folder(hub, tmp_path):
    from tests.helpers.hub_cache import GR_LITE_TINY, tiny_gr_lite_published

    source = tiny_gr_lite_published(tmp_path / "src")
    (source / "config.json").write_text(json.dumps({**GR_LITE_TINY, "hidden_size": 32}))  # the weights are 16 wide
    put_snapshot(hub, "srpone/gr-lite", TEST_HEAD, source)
    with pytest.raises(EncoderError) as err:
        load_encoder("gr-lite")
    assert str(err.value).startswith(f"gr-lite: cannot convert srpone/gr-lite@{TEST_HEAD[:12]}: ")
    assert "shape mismatches" in str(err.value) and "\n" not in str(err.value)
    from lookbench.paths import lookbench_home

    assert not any((lookbench_home() / "converted-models" / "srpone--gr-lite").iterdir())


def test_an_open_clip_setting_the_conversion_cannot_reproduce_is_refused(tmp_path):
    from tests.helpers.hub_cache import write_open_clip
    from lookbench.encoders.open_clip import convert_open_clip

    cfg = {"embed_dim": 8, "vision_cfg": {"image_size": 224, "layers": 2, "width": 16, "patch_size": 32, "head_width": 8,
                                          "pool_type": "avg"}}
    with pytest.raises(ValueError, match="does not reproduce: {'pool_type': 'avg'}"):
        convert_open_clip(write_open_clip(tmp_path / "src", open_clip_vit_state(), cfg, [0.5] * 3, [0.5] * 3), tmp_path / "out")
