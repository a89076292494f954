"""The Space's assets: thumbnails, annotations and, per model, embeddings and a faiss index, in one folder.

docs/architecture.md §2, §5. Built by ``lookbench demo --prepare`` (or on the first launch) through the engine's
own stages — load, hash, encode (with the embedding cache), ``build_index`` — and loaded once at start-up, so a
request never encodes the gallery or builds an index. ``manifest.json`` records the data revision and every
model's fingerprint and preprocessing; assets of other data or other weights are stale and rebuilt whole.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lookbench.engine import BenchmarkImages, encode_images, load_benchmark, resolve_data
from lookbench.engine.search import build_index
from lookbench.files import new_sibling, replace_folder
from lookbench.paths import space_assets_dir
from lookbench.progress import quiet_libraries, stage_bar
from lookbench.schema import NOISE

FORMAT = 2
DEFAULT_MODELS = ("gr-lite-mini", "efficientnet-lite0")
THUMBNAIL = 160  # longest side, pixels
ANNOTATION = ("category", "main_attribute", "attributes", "outfit_id")


def _manifest_of(folder: Path) -> dict | None:
    try:
        return json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return None


def ensure_assets(data=None, folder=None, models=DEFAULT_MODELS, *, quiet: bool = False) -> Path:
    """The assets folder for ``data`` (default: the embedded LookBench-Mini), built or rebuilt if missing or stale."""
    from lookbench.encoders.registry import load_encoder

    folder = Path(folder or space_assets_dir()).expanduser()
    manifest = _manifest_of(folder)
    if folder.exists() and manifest is None and (not folder.is_dir() or any(folder.iterdir())):
        raise ValueError(f"{folder} exists and is not a Space assets folder (no manifest.json); it is left alone")
    source = resolve_data(data)
    encoders = {name: load_encoder(name) for name in models}
    wanted = {"format": FORMAT, "data": {"label": source.label, "revision": source.revision},
              "models": {name: {"fingerprint": e.fingerprint, "preprocessing": e.preprocessing}
                         for name, e in encoders.items()}}
    if manifest is not None and {key: manifest.get(key) for key in wanted} == wanted:
        return folder
    if not quiet:
        print(f"Preparing the Space's assets in {folder} for {source.label} "
              f"({', '.join(models)}); this happens once per data revision and model.", flush=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = new_sibling(folder, "space", folder=True)  # the umask decides the assets' mode (mkdtemp: 0700)
    try:
        _build(data, staging, encoders, wanted, quiet)
        replace_folder(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _thumbnail(blob: bytes, path: Path, box=None, size: int = THUMBNAIL) -> None:
    import io

    from PIL import Image, ImageDraw

    from lookbench.encoders.base import to_rgb

    with Image.open(io.BytesIO(blob)) as image:
        image = to_rgb(image)
        if box is not None:  # the item's bbox drawn on its outfit photo
            ImageDraw.Draw(image).rectangle([float(v) for v in box], outline=(230, 30, 30), width=3)
        image.thumbnail((2 * size if box is not None else size,) * 2)
        image.save(path, "PNG")


def _build(data, out: Path, encoders: dict, manifest: dict, quiet: bool) -> None:
    import datasets

    with quiet_libraries(False):
        with stage_bar("load", quiet=quiet, unit="config") as bar:
            bench = load_benchmark(data, distractors=True, progress=bar)
        images = BenchmarkImages.of(bench)
        with stage_bar("hash", quiet=quiet, unit="img") as bar:
            images.hash(bar)
        (out / "images").mkdir()
        gallery_sources = [(name, images.subsets[name].gallery, bench.subsets[name]["gallery"]) for name in bench.subsets]
        gallery_sources.append((NOISE, images.noise, bench.noise))
        query_sources = [(name, images.subsets[name].query, bench.subsets[name]["query"]) for name in bench.subsets]
        ranges, start = {}, 0
        gallery_rows, query_rows = [], []
        with stage_bar("thumbnails", quiet=quiet, unit="img") as bar:
            bar.reset(total=sum(len(s) for _, s, _ in gallery_sources + query_sources))
            for name, src, ds in gallery_sources:
                ranges[name] = [start, start + len(src)]
                start += len(src)
                annotations = ds.select_columns(list(ANNOTATION) + ["item_id"]).to_list()
                blobs = src.image_bytes(list(range(len(src))))
                for row, (record, blob, digest) in enumerate(zip(annotations, blobs, src.hashes)):
                    thumb = f"images/{digest.hex()}.png"
                    if not (out / thumb).exists():
                        _thumbnail(blob, out / thumb)
                    gallery_rows.append({"subset": name, "row": row, **record, "hash": digest.hex(), "thumb": thumb})
                    bar.update(1)
            for name, src, ds in query_sources:
                table = ds.select_columns(list(ANNOTATION) + ["item_id", "timestamp", "bbox"]).to_list()
                raws = ds.select_columns(["raw_image"]).cast_column("raw_image", datasets.Image(decode=False))["raw_image"]
                blobs = src.image_bytes(list(range(len(src))))
                for row, (record, raw, blob, digest) in enumerate(zip(table, raws, blobs, src.hashes)):
                    image = f"images/{digest.hex()}.png"
                    if not (out / image).exists():
                        _thumbnail(blob, out / image)
                    outfit = photo = ""  # the outfit with the item's box (shown), and without (to crop from)
                    raw_bytes = (raw or {}).get("bytes") or ((raw or {}).get("path") and Path(raw["path"]).read_bytes())
                    if raw_bytes and record.get("bbox"):
                        outfit, photo = f"images/outfit-{name}-{row + 1}.png", f"images/photo-{name}-{row + 1}.png"
                        _thumbnail(raw_bytes, out / outfit, box=record["bbox"])
                        _thumbnail(raw_bytes, out / photo, box=None, size=2 * THUMBNAIL)
                    query_rows.append({"subset": name, "row": row, **record, "hash": digest.hex(), "image": image,
                                       "outfit": outfit, "photo": photo})
                    bar.update(1)
        datasets.Dataset.from_list(gallery_rows).save_to_disk(str(out / "gallery"))
        datasets.Dataset.from_list(query_rows).save_to_disk(str(out / "queries"))
        for name, encoder in encoders.items():
            with stage_bar(f"encode {name}", quiet=quiet, unit="img") as bar:
                embeddings = encode_images(encoder, images.sources(), progress=bar).normalised()
            gallery = embeddings.matrix[np.concatenate([embeddings.rows(src) for _, src, _ in gallery_sources])]
            queries = embeddings.matrix[np.concatenate([embeddings.rows(src) for _, src, _ in query_sources])]
            (out / name).mkdir()
            np.save(out / name / "gallery.npy", gallery)
            np.save(out / name / "queries.npy", queries)
            import faiss

            faiss.write_index(build_index(gallery, "flat"), str(out / name / "index.faiss"))
    (out / "manifest.json").write_text(json.dumps({**manifest, "ranges": ranges, "releases": bench.provenance["releases"]},
                                                  indent=2))


@dataclass
class ModelAssets:
    """One model's normalised gallery and benchmark-query embeddings and its faiss index over the gallery."""

    gallery: np.ndarray
    queries: np.ndarray
    index: object


@dataclass
class SpaceAssets:
    """Everything the app serves from, loaded once: annotations, thumbnails, per-model embeddings and indexes."""

    folder: Path
    manifest: dict
    gallery: object  # datasets.Dataset: subset, row, annotation, hash, thumb
    queries: object  # datasets.Dataset: subset, row, annotation, timestamp, bbox, hash, image, outfit, photo
    models: dict

    @classmethod
    def load(cls, folder) -> "SpaceAssets":
        import datasets
        import faiss

        folder = Path(folder)
        manifest = _manifest_of(folder)
        if manifest is None or manifest.get("format") != FORMAT:
            raise ValueError(f"{folder} holds no Space assets of format {FORMAT}; run `lookbench demo --prepare`")
        models = {}
        for name in manifest["models"]:
            models[name] = ModelAssets(np.load(folder / name / "gallery.npy"), np.load(folder / name / "queries.npy"),
                                       faiss.read_index(str(folder / name / "index.faiss")))
        return cls(folder, manifest, datasets.load_from_disk(str(folder / "gallery")),
                   datasets.load_from_disk(str(folder / "queries")), models)

    def path(self, relative: str) -> str:
        return str(self.folder / relative)
