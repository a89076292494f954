"""The LookBench builder: raw and upstream sources, export, offline loading, validation reports."""
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

import lookbench
from lookbench import cli
from lookbench.dataset_builder import SourceError, ValidationError, build_release
from lookbench.dataset_builder.sources import parse_attributes
from lookbench.dataset_builder.taxonomy import Taxonomy
from tests.helpers.raw_release import write_upstream

OFFLINE = {k: os.environ[k] for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE", "HF_HOME")}


def load_split(folder: Path, config: str, split: str):
    return datasets.load_dataset(str(folder), config, split=split)


LOAD_SCRIPT = r"""
import json
from datasets import load_dataset
out = {}
ds = load_dataset("lookbench", "RealStreetLook")
out["splits"] = {k: len(v) for k, v in ds.items()}
out["features"] = {k: repr(v) for k, v in ds["query"].features.items()}
row = ds["query"][0]
out["image"] = type(row["image"]).__module__ + "." + type(row["image"]).__name__
out["raw_size"] = list(row["raw_image"].size)
out["timestamp"] = row["timestamp"].isoformat()
out["attributes"] = row["attributes"]
try:
    load_dataset("lookbench", "RealStretLook")
except ValueError as err:
    out["unknown"] = str(err)
print(json.dumps(out))
"""


@pytest.mark.slow
def test_exported_folder_loads_offline_in_a_fresh_process(release, tmp_path):
    build_release("raw", tmp_path / "out" / "lookbench", input_path=release, release="v20251201")
    env = {**os.environ, **OFFLINE, "HF_HOME": str(tmp_path / "hf_home")}
    proc = subprocess.run([sys.executable, "-c", LOAD_SCRIPT], cwd=tmp_path / "out", env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["splits"] == {"query": 6, "gallery": 6}
    assert out["image"].startswith("PIL.") and out["raw_size"] == [128, 64]
    assert out["features"]["timestamp"] == "Value('timestamp[s, tz=UTC]')"
    assert out["features"]["bbox"] == "List(Value('float32'), length=4)"
    assert out["features"]["attributes"] == "List({'name': Value('string'), 'value': Value('string')})"
    assert out["features"]["raw_image"] == "Image(mode=None, decode=True)"
    assert out["timestamp"] == "2024-06-01T00:00:00+00:00"
    assert out["attributes"] == [{"name": "colour", "value": "red"}]
    assert "RealStretLook" in out["unknown"] and "'RealStreetLook'" in out["unknown"] and "'noise'" in out["unknown"]


def test_export_layout_card_and_counts(release, tmp_path):
    out = tmp_path / "lookbench"
    summary = build_release("raw", out, input_path=release, release="v20251201")
    assert summary.rows == {
        "RealStudioFlat": {"query": 6, "gallery": 10}, "AIGen-Studio": {"query": 6, "gallery": 10},
        "RealStreetLook": {"query": 6, "gallery": 6}, "AIGen-StreetLook": {"query": 6, "gallery": 6}, "noise": {"gallery": 5},
    }
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet"))[:2] == [
        "AIGen-StreetLook/gallery-00000-of-00001.parquet", "AIGen-StreetLook/query-00000-of-00001.parquet"]
    card = datasets.load_dataset_builder(str(out), "noise")
    assert card.info.features["timestamp"] == datasets.Value("timestamp[s, tz=UTC]")
    text = (out / "README.md").read_text()
    assert "default: true" in text.split("config_name: RealStreetLook")[1].split("config_name")[0]
    assert "| `RealStreetLook` | `real_streetlook` | real, multi-item | hard | 6 | 6 |" in text
    assert "arXiv:2601.14706" in text and "https://arxiv.org/abs/2601.14706" in text and "license: apache-2.0" in text
    # real data keeps the LookBench labels: no synthetic tag, name or stand-in wording
    assert "pretty_name: LookBench\n" in text and "synthetic" not in text.split("## Fields")[0].lower()
    assert "Real street outfit photos with several items" in text and "- Images and annotations: as declared" in text
    usage = text.split("## Usage")[1].split("```python")[1].split("```")[0]
    assert 'load_dataset("lookbench/lookbench", "RealStreetLook")' in usage and "import lookbench" not in usage
    assert "2024-06-01T00:00:00+00:00 → 2025-12-01T00:00:00+00:00" in text
    query = load_split(out, "AIGen-StreetLook", "query")
    assert query.unique("outfit_id") and len(set(query["outfit_id"])) == 3
    assert json.loads((out / "validation_report.json").read_text()) == {"skipped": [], "num_skipped": 0, "num_problems": 0, "warnings": []}


def test_aliases_select_subsets(release, tmp_path):
    summary = build_release("raw", tmp_path / "o", input_path=release, release="v20251201", subsets=["real_streetlook", "noise"])
    assert list(summary.rows) == ["RealStreetLook", "noise"]
    with pytest.raises(ValueError, match=r"Unknown LookBench subset 'real_streelook'\. Did you mean 'real_streetlook'"):
        lookbench.resolve_subset("real_streelook")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _rewrite(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _break_release(root: Path) -> list[str]:
    """Introduce one of each row problem; return the expected report lines."""
    flat = root / "RealStudioFlat"
    query = _rows(flat / "query.jsonl")
    data = (flat / query[0]["image"]).read_bytes()
    (flat / "images/truncated.png").write_bytes(data[: len(data) // 2])
    query[0]["image"] = "images/truncated.png"
    del query[1]["category"]
    query[2]["timestamp"] = "2999-01-01T00:00:00Z"
    query[3]["attributes"] = {"colour": query[3]["main_attribute"], "sleeve": "sideways"}
    query.append(dict(query[4]))  # row 6: exact duplicate of row 4
    _rewrite(flat / "query.jsonl", query)
    with (flat / "gallery.jsonl").open("a") as f:
        f.write("{not json\n")
    street = root / "RealStreetLook"
    squery = _rows(street / "query.jsonl")
    squery[0]["bbox"] = [2, 4, 500, 60]
    squery[1]["bbox"] = [60, 4, 60, 60]
    _rewrite(street / "query.jsonl", squery)
    return [
        "RealStudioFlat/query.jsonl line 1 (item_id='Real0'): unreadable or truncated image images/truncated.png",
        "RealStudioFlat/query.jsonl line 2 (item_id='Real1'): missing required field(s): category",
        "RealStudioFlat/query.jsonl line 3 (item_id='Real2'): timestamp 2999-01-01T00:00:00+00:00 is in the future",
        "RealStudioFlat/query.jsonl line 4 (item_id='Real3'): value 'sideways' of attribute 'sleeve' is not in the taxonomy of 'tops'",
        "RealStudioFlat/query.jsonl line 7 (item_id='Real4'): exact duplicate of line 5 (same item_id and image content)",
        "RealStudioFlat/gallery.jsonl line 11 (item_id=None): not valid JSON",
        "RealStreetLook/query.jsonl line 1 (item_id='Real-look0-0'): bad bbox [2, 4, 500, 60]: outside the 128x64 raw image",
        "RealStreetLook/query.jsonl line 2 (item_id='Real-look0-1'): bad bbox [60, 4, 60, 60]: needs x1 > x0 and y1 > y0",
    ]


@pytest.fixture
def taxonomy(tmp_path):
    path = tmp_path / "taxonomy.json"
    Taxonomy.of("test", "1", {"tops": {"colour": ["red", "blue", "green", "black"], "sleeve": ["short", "long"]}},
                "colour").write(path)
    return path


def test_invalid_rows_stop_the_build_with_every_problem_listed(release, tmp_path, taxonomy):
    expected = _break_release(release)
    with pytest.raises(ValidationError) as info:
        build_release("raw", tmp_path / "out", input_path=release, release="v20251201", taxonomy=taxonomy)
    message = str(info.value)
    found = [p for p in expected if p in message]
    assert found == expected, message  # every subset is validated before the build stops
    assert message.startswith("8 invalid row(s) (8 problem(s)); fix them or rebuild with --skip-invalid")


def test_skip_invalid_reports_exactly_what_was_skipped(release, tmp_path, taxonomy):
    expected = _break_release(release)
    out = tmp_path / "out"
    summary = build_release("raw", out, input_path=release, release="v20251201", taxonomy=taxonomy, skip_invalid=True)
    report = json.loads((out / "validation_report.json").read_text())
    assert report["num_skipped"] == 8
    rendered = [f"{p['file']} line {p['line']} (item_id={p['item_id']!r}): {p['message']}" for p in report["skipped"]]
    assert [any(r.startswith(e) for r in rendered) for e in expected] == [True] * 8
    assert summary.rows["RealStudioFlat"] == {"query": 2, "gallery": 10}
    assert summary.rows["RealStreetLook"] == {"query": 4, "gallery": 6}
    assert sorted(load_split(out, "RealStudioFlat", "query")["item_id"]) == ["Real4", "Real5"]
    assert "skipped rows: 8 (8 problem(s))" in "\n".join(summary.lines())


def test_category_outside_taxonomy(release, tmp_path, taxonomy):
    path = release / "noise" / "gallery.jsonl"
    rows = _rows(path)
    rows[2]["category"] = "Spacesuits"
    _rewrite(path, rows)
    with pytest.raises(ValidationError, match=r"noise/gallery.jsonl line 3 \(item_id='noise2'\): category 'Spacesuits' is not in the taxonomy test 1"):
        build_release("raw", tmp_path / "out", input_path=release, release="v20251201", taxonomy=taxonomy, subsets=["noise"])


def test_query_image_in_gallery_is_reported_as_a_leak(release, tmp_path):
    flat = release / "AIGen-Studio"
    gallery = _rows(flat / "gallery.jsonl")
    gallery[7]["image"] = _rows(flat / "query.jsonl")[3]["image"]
    _rewrite(flat / "gallery.jsonl", gallery)
    summary = build_release("raw", tmp_path / "out", input_path=release, release="v20251201", subsets=["AIGen-Studio"])
    assert len(summary.report.warnings) == 1
    assert summary.report.warnings[0].startswith(
        "AIGen-Studio: identical image in AIGen-Studio/query.jsonl line(s) [4] and AIGen-Studio/gallery.jsonl line(s) [8]")
    assert summary.rows["AIGen-Studio"] == {"query": 6, "gallery": 10}  # a warning, not a drop


def test_rows_without_a_release_get_the_newest_timestamps_snapshot(release, tmp_path, capsys):
    path = release / "noise" / "gallery.jsonl"
    rows = _rows(path)
    rows[0]["release"] = "v20240601"
    _rewrite(path, rows)
    flat = release / "RealStudioFlat" / "query.jsonl"
    _rewrite(flat, _rows(flat) + [dict(_rows(flat)[0], timestamp="2999-01-01T00:00:00Z", item_id="future")])
    build = ["build", "--source", "raw", "--input", str(release), "--out", str(tmp_path / "o"), "--quiet", "--skip-invalid"]
    assert cli.main(build) == 0  # the future row is skipped and does not name the release
    out = capsys.readouterr().out
    assert out.count("v20251201 (the newest timestamp; --release NAME sets it)") == 1  # one line, not one per row
    assert "releases: v20240601, v20251201" in out
    noise = load_split(tmp_path / "o", "noise", "gallery")
    assert noise["release"] == ["v20240601"] + ["v20251201"] * 4


def test_upstream_layout_maps_onto_the_schema(tmp_path):
    root = write_upstream(tmp_path / "look-bench")
    out = tmp_path / "lookbench"
    summary = build_release("upstream", out, input_path=root)
    assert summary.rows == {"RealStreetLook": {"query": 6, "gallery": 4}}
    assert summary.releases == ["v20250101", "v20251201"]
    query = load_split(out, "RealStreetLook", "query")
    assert query["item_id"] == ["1", "2", "3", "101", "102", "103"]
    assert query["category"][:3] == ["tops", "trousers", "tops"]
    assert query["attributes"][:3] == [
        [{"name": "colour", "value": "red"}, {"name": "fit", "value": "loose"}],
        [{"name": "colour", "value": "blue"}, {"name": "length", "value": "full"}],
        [{"name": "colour", "value": "green"}],
    ]
    outfits = query["outfit_id"]
    assert outfits[0] == outfits[1] == outfits[3] != outfits[2]
    assert [t.date() for t in query["timestamp"]] == [dt.date(2025, 1, 1)] * 3 + [dt.date(2025, 12, 1)] * 3
    assert query["release"] == ["v20250101"] * 3 + ["v20251201"] * 3
    assert query["source"] == ["real"] * 6 and query["bbox"][1] == [48.0, 0.0, 96.0, 48.0]
    assert query[0]["raw_image"].size == (96, 64)


def test_parse_attributes_accepts_the_published_shapes():
    expected = [{"name": "colour", "value": "red"}, {"name": "neckline", "value": "round"}]
    for value in ({"neckline": "round", "colour": "red"}, '{"colour": "red", "neckline": "round"}', "colour: red, neckline: round",
                  ["colour: red", "neckline=round"], [{"name": "colour", "value": "red"}, {"name": "neckline", "value": "round"}]):
        assert parse_attributes(value) == expected
    with pytest.raises(ValueError, match="not of the form 'name: value'"):
        parse_attributes(["just-a-word"])


def test_upstream_without_releases_is_a_clear_error(tmp_path):
    with pytest.raises(SourceError, match=r"No release folder v<YYYYMMDD> under"):
        build_release("upstream", tmp_path / "out", input_path=tmp_path)


def test_filter_after_naive_and_aware(release, tmp_path):
    out = tmp_path / "lookbench"
    build_release("raw", out, input_path=release, release="v20251201", subsets=["RealStudioFlat"])
    ds = datasets.load_dataset(str(out), "RealStudioFlat")
    stamps = [t.date().isoformat() for t in ds["query"]["timestamp"]]
    assert stamps == ["2024-06-01", "2025-01-01", "2025-12-01"] * 2
    assert len(lookbench.filter_after(ds["query"], "2025-01-01")) == 2  # strictly after: 2025-01-01 itself is out
    assert len(lookbench.filter_after(ds["query"], dt.date(2024, 12, 31))) == 4
    assert len(lookbench.filter_after(ds["query"], dt.datetime(2025, 1, 1, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))))) == 4
    assert len(lookbench.filter_after(ds["query"], dt.datetime(2025, 1, 1, 1, 0))) == 2  # naive = UTC
    both = lookbench.filter_after(ds, "2025-06-01T00:00:00Z")  # queries only: the gallery keeps every positive
    assert {k: len(v) for k, v in both.items()} == {"query": 2, "gallery": len(ds["gallery"])}
    with pytest.raises(ValueError, match="has none \\(gallery\\)"):
        lookbench.filter_after(datasets.DatasetDict(gallery=ds["gallery"]), "2025-06-01")
    assert len(lookbench.filter_after(ds["query"].select([5, 4, 3]), "2025-06-01")) == 1
    with pytest.raises(ValueError, match="not an ISO 8601 date"):
        lookbench.filter_after(ds["query"], "June 2025")


def test_cli_build_errors_are_one_clear_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "lookbench.cli", "build", "--source", "raw", "--input", str(tmp_path / "nope"),
                           "--out", str(tmp_path / "o")], capture_output=True, text=True, env={**os.environ, **OFFLINE})
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"lookbench build: error: Raw release folder {tmp_path / 'nope'} does not exist"


def test_cli_build_and_subsets(release, tmp_path):
    out = tmp_path / "lookbench"
    proc = subprocess.run([sys.executable, "-m", "lookbench.cli", "build", "--source", "raw", "--input", str(release),
                           "--out", str(out), "--release", "v20251201"], capture_output=True, text=True, env={**os.environ, **OFFLINE})
    assert proc.returncode == 0, proc.stderr
    assert "  RealStudioFlat     query=6  gallery=10" in proc.stdout and "releases: v20251201" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "lookbench.cli", "subsets", "--data", str(out)], capture_output=True, text=True,
                          env={**os.environ, **OFFLINE})
    assert proc.returncode == 0, proc.stderr
    line = next(l for l in proc.stdout.splitlines() if l.startswith("AIGen-Studio"))
    assert line.split()[-3:] == ["6", "10", "193/979"]
