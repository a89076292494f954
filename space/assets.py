"""The Space's prepared assets: one folder per gallery with its annotations, thumbnails and, per model, the
benchmark queries' embeddings and the gallery's search index.

docs/architecture.md §2, §5. Built by ``lookbench demo --prepare`` (and by ``lookbench stage``, which ships them in
the demo Space) through the engine's own stages — load, hash, encode (with the embedding cache), ``build_index`` —
and loaded once at start-up, so a request never encodes the gallery or builds an index. ``manifest.json`` records
the data (its key, known without building it), every model's fingerprint and preprocessing, and the sha256 of every
file. Assets are read only through ``lookbench.files``' containment reader and checked against the manifest: assets
of other data or other weights, or a damaged or missing file, are never served but rebuilt whole, and the one-line
reason is printed.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lookbench.engine import BenchmarkImages, encode_images, load_benchmark, resolve_data
from lookbench.engine.search import build_index
from lookbench.errors import EvaluationError, one_line
from lookbench.files import contained_file, new_sibling, read_at_most, read_regular, replace_folder
from lookbench.hub import hub_reachable, split_revision, transport_errors
from lookbench.paths import space_assets_dir
from lookbench.progress import quiet_libraries, stage_bar
from lookbench.schema import NOISE

FORMAT = 3
DEFAULT_MODELS = ("gr-lite-mini", "efficientnet-lite0")
EMBEDDED = "mini"  # the gallery folder of the embedded LookBench-Mini, the one gallery rebuilt from code alone
THUMBNAIL = 160  # longest side, pixels
THUMBNAIL_FORMAT = ("WEBP", {"quality": 80, "method": 6})  # a quarter of the PNG's bytes
ANNOTATION = ("category", "main_attribute", "attributes", "outfit_id")
MANIFEST = "manifest.json"
TABLES = ("gallery.parquet", "queries.parquet")
INDEX, QUERIES = "index.faiss.gz", "queries.npz"  # per model: the gallery's flat index (float32) and the queries'
MAX_MANIFEST_BYTES = 1 << 20
MAX_ASSET_BYTES = 1 << 30
INDEX_SLACK = 4096  # bytes of a serialised flat faiss index besides its vectors (its header: under 100)


class StaleAssets(ValueError):
    """Why a gallery's assets cannot be served as they are, in one line (missing, stale or damaged)."""


# The demo Space a first start downloads prepared galleries from when a Hub answers, at this revision: ``main`` until
# a published commit is pinned here. Whatever the revision, its assets are used only when their manifest fits this
# code's data key and models and every file its sha256, as any assets.
DEMO_SPACE = "lookbench/demo@main"
SHIPPED_IN = "assets"  # the Space's folder of galleries (``lookbench stage``)

# Data that is not here: a gallery shipped prepared (the Space's real photos) is served while whole and current for
# the installed models, and cannot be rebuilt.
SHIPPED = "shipped"


def data_key(data) -> str:
    """What identifies a gallery's data, known without building it: the embedded Mini by its generator (package
    version and ``mini.plan.GENERATION``, the name of its folder), any other data by its revision."""
    if data is None:
        from lookbench.dataset_builder.export import default_mini_dir

        return default_mini_dir().parent.name
    return resolve_data(data).revision


def wanted(data, encoders: dict, manifest: dict | None = None) -> dict:
    """The manifest entries fresh assets must carry for ``data`` (``SHIPPED``: the manifest's own) and the encoders."""
    key = (manifest or {}).get("data", {}).get("key") if data is SHIPPED else data_key(data)
    return {"format": FORMAT, "key": key,
            "models": {name: {"fingerprint": e.fingerprint, "preprocessing": e.preprocessing} for name, e in encoders.items()}}


def stale_reason(manifest: dict | None, want: dict) -> str | None:
    """The one line saying why assets with ``manifest`` do not fit ``want``; None when they do."""
    if manifest is None:
        return "no assets yet"
    if manifest.get("format") != want["format"]:
        return f"assets of format {manifest.get('format')}, this code reads format {want['format']}"
    if manifest.get("data", {}).get("key") != want["key"]:
        return f"the data changed ({manifest.get('data', {}).get('key')} → {want['key']})"
    for name, model in want["models"].items():
        held = manifest.get("models", {}).get(name)
        if held is None:
            return f"no assets of {name}"
        if held != model:
            what = "weights" if held.get("fingerprint") != model["fingerprint"] else "preprocessing"
            return f"{name}'s {what} changed"
    return None


def open_assets(data=None, folder=None, models=DEFAULT_MODELS, *, encoders=None, quiet: bool = False,
                bars=stage_bar) -> "SpaceAssets":
    """The gallery of ``data`` (default: the embedded LookBench-Mini) loaded from ``folder``, built or rebuilt first
    when missing, stale or damaged (one line says why). ``SHIPPED`` data cannot be rebuilt: a ``StaleAssets``.
    ``bars``: what makes each stage's progress bar (the app's watches them to show a background build's progress)."""
    from lookbench.encoders.registry import load_encoder

    folder = Path(folder or space_assets_dir() / EMBEDDED).expanduser()
    encoders = encoders or {name: load_encoder(name) for name in models}
    try:
        manifest = _read_manifest(folder)
        reason = stale_reason(manifest, wanted(data, encoders, manifest))
        if reason is None:
            return SpaceAssets.load(folder, manifest)
    except StaleAssets as err:
        manifest, reason = None, str(err)
    if data is SHIPPED:
        raise StaleAssets(f"{folder.name}: {reason}; its data is not here to rebuild it from")
    if folder.exists() and manifest is None and (not folder.is_dir() or any(folder.iterdir())) \
            and not (folder / MANIFEST).is_file():
        raise ValueError(f"{folder} exists and is not a Space assets folder (no {MANIFEST}); it is left alone")
    fetched = download_shipped(folder, wanted(data, encoders), quiet) if folder.name in (EMBEDDED, PHOTOS) else None
    if fetched is not None:
        return fetched
    if not quiet:
        print(f"Preparing the Space's assets in {folder} ({reason}); this happens once per data revision and model.",
              flush=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = new_sibling(folder, "space", folder=True)  # the umask decides the assets' mode (mkdtemp: 0700)
    try:
        _build(data, staging, encoders, wanted(data, encoders), quiet, bars)
        replace_folder(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return SpaceAssets.load(folder, _read_manifest(folder))


def served_at_once(data, folder, models, encoders: dict) -> tuple[str, ...]:
    """The models a start serves ``data``'s gallery with before it listens: all of them when the assets in
    ``folder`` are fresh for all (by the manifest), else only the first, whose assets are built then (the others
    are prepared while the app serves): encoding the gallery takes most of a first start, per model."""
    try:
        fresh = stale_reason(_read_manifest(Path(folder).expanduser()), wanted(data, encoders)) is None
    except StaleAssets:
        fresh = False
    return tuple(models) if fresh else tuple(models)[:1]


def demo_space() -> tuple[str, str | None]:
    """The demo Space (repo id, revision) whose shipped galleries a first start downloads: ``DEMO_SPACE``, or
    ``LOOKBENCH_DEMO_SPACE=owner/name@revision``."""
    import os

    return split_revision(os.environ.get("LOOKBENCH_DEMO_SPACE") or DEMO_SPACE)


def download_shipped(folder: Path, want: dict, quiet: bool = False) -> "SpaceAssets | None":
    """The gallery ``folder.name`` as the demo Space ships it in ``assets/`` (``lookbench stage``), downloaded at the
    pinned revision when a Hub answers and copied into ``folder`` only when it fits ``want`` (this code's data key,
    the models' fingerprints) and every file matches the manifest's sha256; else None, with one line saying why
    (then the assets are built here). Building LookBench-Mini takes minutes on a CPU; the download, seconds."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError

    if not hub_reachable():
        return None
    repo, revision = demo_space()
    where = f"{repo}@{revision or 'main'}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = new_sibling(folder, "space", folder=True)  # real files, not the Hub cache's links (refused by the reader)
    try:
        try:
            snapshot_download(repo, repo_type="space", revision=revision, local_dir=staging,
                              allow_patterns=[f"{SHIPPED_IN}/{folder.name}/*", f"{SHIPPED_IN}/{folder.name}/**"])
            shipped = staging / SHIPPED_IN / folder.name
            manifest = _read_manifest(shipped)
            reason = stale_reason(manifest, want)
            if reason is not None:
                raise StaleAssets(reason)
            SpaceAssets.load(shipped, manifest)  # every file against the manifest's sha256
        except (StaleAssets, HfHubHTTPError, OSError, *transport_errors()) as err:
            if not quiet:
                print(f"Not using the assets of {folder.name} in the Space {where}: {one_line(err, 200)}",
                      flush=True)
            return None
        replace_folder(shipped, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not quiet:
        print(f"Downloaded the assets of {folder.name} from the Space {where} into {folder}", flush=True)
    return SpaceAssets.load(folder, _read_manifest(folder))


def ensure_assets(data=None, folder=None, models=DEFAULT_MODELS, *, quiet: bool = False) -> Path:
    """The assets folder of ``data``, fresh and whole (what ``lookbench demo --prepare`` runs)."""
    return open_assets(data, folder, models, quiet=quiet).folder


def _read_manifest(folder: Path) -> dict | None:
    """The folder's manifest; None when there is none; a ``StaleAssets`` when it is not one."""
    if not (folder / MANIFEST).exists():
        return None
    try:
        manifest = json.loads(read_regular(contained_file(folder, MANIFEST), MAX_MANIFEST_BYTES))
    except (ValueError, RecursionError) as err:
        raise StaleAssets(f"{MANIFEST} is damaged ({str(err)[:120]})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise StaleAssets(f"{MANIFEST} is damaged (no list of files)")
    return manifest


def _thumbnail(blob: bytes, box=None, size: int = THUMBNAIL) -> bytes:
    from PIL import Image, ImageDraw

    from lookbench.encoders.base import to_rgb

    with Image.open(io.BytesIO(blob)) as image:
        image = to_rgb(image)
        if box is not None:  # the item's bbox drawn on its outfit photo
            ImageDraw.Draw(image).rectangle([float(v) for v in box], outline=(230, 30, 30), width=3)
        image.thumbnail((size, size))
        out = io.BytesIO()
        image.save(out, THUMBNAIL_FORMAT[0], **THUMBNAIL_FORMAT[1])
        return out.getvalue()


def _describe(source) -> dict:
    """What the page says about the data: its card's name, licence and origin (the catalog's sentence)."""
    from lookbench.dataset_builder.catalog import SOURCES

    card = source.card
    history = card.get("lookbench_history") or [{}]
    origin = SOURCES.get(history[0].get("source")) if isinstance(history[0], dict) else None
    return {"name": source.name, "license": card.get("license"), "synthetic": "synthetic" in (card.get("tags") or []),
            "origin": origin.origin if origin else ""}


def _build(data, out: Path, encoders: dict, want: dict, quiet: bool, bars=stage_bar) -> None:
    import datasets

    source = resolve_data(data)
    noise = NOISE in {c.get("config_name") for c in source.card.get("configs", [])}
    with quiet_libraries(False):
        with bars("load", quiet=quiet, unit="config") as bar:
            bench = load_benchmark(source, distractors=noise, progress=bar)
        if bench.unlabelled:  # the demo shows each row's annotation and outfit: a sealed release has none to show
            raise EvaluationError(f"{source.label} is sealed (its labels are withheld): the demo serves public "
                                  "releases only")
        images = BenchmarkImages.of(bench)
        with bars("hash", quiet=quiet, unit="img") as bar:
            images.hash(bar)
        gallery_sources = [(name, images.subsets[name].gallery, bench.subsets[name]["gallery"]) for name in bench.subsets]
        gallery_sources += [(NOISE, images.noise, bench.noise)] if noise else []
        query_sources = [(name, images.subsets[name].query, bench.subsets[name]["query"]) for name in bench.subsets]
        ranges, start = {}, 0
        gallery_rows, query_rows = [], []
        with bars("thumbnails", quiet=quiet, unit="img") as bar:
            bar.reset(total=sum(len(s) for _, s, _ in gallery_sources + query_sources))
            for name, src, ds in gallery_sources:
                ranges[name] = [start, start + len(src)]
                start += len(src)
                annotations = ds.select_columns(list(ANNOTATION) + ["item_id"]).to_list()
                for row, (record, blob, digest) in enumerate(zip(annotations, src.image_bytes(list(range(len(src)))), src.hashes)):
                    gallery_rows.append({"subset": name, "row": row, **record, "hash": digest.hex(), "thumb": _thumbnail(blob)})
                    bar.update(1)
            for name, src, ds in query_sources:
                table = ds.select_columns(list(ANNOTATION) + ["item_id", "timestamp", "bbox"]).to_list()
                raws = ds.select_columns(["raw_image"]).cast_column("raw_image", datasets.Image(decode=False))["raw_image"]
                blobs = src.image_bytes(list(range(len(src))))
                for row, (record, raw, blob, digest) in enumerate(zip(table, raws, blobs, src.hashes)):
                    raw_bytes = (raw or {}).get("bytes") or ((raw or {}).get("path") and Path(raw["path"]).read_bytes())
                    street = bool(raw_bytes and record.get("bbox"))  # its outfit with the item's box (shown), and without (to crop)
                    query_rows.append({"subset": name, "row": row, **record, "hash": digest.hex(), "image": _thumbnail(blob),
                                       "outfit": _thumbnail(raw_bytes, box=record["bbox"], size=2 * THUMBNAIL) if street else None,
                                       "photo": _thumbnail(raw_bytes, size=2 * THUMBNAIL) if street else None})
                    bar.update(1)
        for name, rows in zip(TABLES, (gallery_rows, query_rows)):
            datasets.Dataset.from_list(rows).to_parquet(str(out / name))
        for name, encoder in encoders.items():
            with bars(f"encode {name}", quiet=quiet, unit="img") as bar:
                embeddings = encode_images(encoder, images.sources(), progress=bar).normalised()
            gallery = embeddings.matrix[np.concatenate([embeddings.rows(src) for _, src, _ in gallery_sources])]
            queries = embeddings.matrix[np.concatenate([embeddings.rows(src) for _, src, _ in query_sources])]
            import faiss

            (out / name).mkdir()
            serialized = faiss.serialize_index(build_index(np.ascontiguousarray(gallery, dtype=np.float32), "flat"))
            (out / name / INDEX).write_bytes(gzip.compress(serialized.tobytes(), mtime=0))
            np.savez_compressed(out / name / QUERIES, embeddings=np.asarray(queries, dtype=np.float32))
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    manifest = {"format": FORMAT,
                "data": {**_describe(source), "key": want["key"], "revision": source.revision,
                         "releases": bench.provenance["releases"]},
                "models": want["models"], "ranges": ranges,
                "files": {name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in files}}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


@dataclass
class ModelAssets:
    """One model's normalised benchmark-query embeddings and its faiss index over the gallery's."""

    queries: np.ndarray
    index: object


@dataclass
class SpaceAssets:
    """Everything the app serves one gallery from, loaded once: annotations, thumbnails (bytes), per-model
    embeddings and indexes."""

    folder: Path
    manifest: dict
    gallery: object  # datasets.Dataset: subset, row, annotation, item_id, hash, thumb
    queries: object  # datasets.Dataset: subset, row, annotation, item_id, timestamp, bbox, hash, image, outfit, photo
    models: dict

    @property
    def name(self) -> str:
        return self.manifest["data"]["name"]

    @classmethod
    def load(cls, folder, manifest: dict | None = None) -> "SpaceAssets":
        """The assets of ``folder``, every file read through the containment reader and checked against the
        manifest's sha256: a missing, altered or unreadable file is a ``StaleAssets`` naming it, never served."""
        import datasets
        import faiss
        import pyarrow as pa
        import pyarrow.parquet as pq

        folder = Path(folder)
        manifest = manifest or _read_manifest(folder)
        if manifest is None or manifest.get("format") != FORMAT:
            raise StaleAssets(f"{folder} holds no Space assets of format {FORMAT}; run `lookbench demo --prepare`")
        blobs = {name: _checked(folder, name, digest) for name, digest in manifest["files"].items()}
        missing = [name for name in (*TABLES, *(f"{m}/{f}" for m in manifest["models"] for f in (INDEX, QUERIES)))
                   if name not in blobs]
        if missing:
            raise StaleAssets(f"{missing[0]} is missing from {MANIFEST}")
        try:
            gallery, queries = (datasets.Dataset(pq.read_table(pa.BufferReader(blobs[t]))) for t in TABLES)
            vectors = max((end for _, end in manifest["ranges"].values()), default=0)
            models = {}
            for name in manifest["models"]:
                embeddings = np.load(io.BytesIO(blobs[f"{name}/{QUERIES}"]))["embeddings"]
                index = _gunzip_index(blobs[f"{name}/{INDEX}"], f"{name}/{INDEX}", vectors, embeddings.shape[1])
                models[name] = ModelAssets(embeddings, faiss.deserialize_index(np.frombuffer(index, np.uint8)))
        except StaleAssets:
            raise
        except Exception as err:  # bytes the manifest vouches for, yet unreadable: damaged at build time
            raise StaleAssets(f"{folder.name} cannot be read ({type(err).__name__}: {str(err)[:120]})") from None
        return cls(folder, manifest, gallery, queries, models)


def _gunzip_index(blob: bytes, name: str, vectors: int, dim: int) -> bytearray:
    """The serialised flat index in ``blob`` (gzip), decompressed in chunks never past what ``vectors`` float32
    vectors of ``dim`` dimensions and a header take: a sha256 in the manifest vouches only for the compressed
    bytes, so a gzip bomb there is refused (a ``StaleAssets``: rebuilt, as a damaged file is) before it fills memory."""
    limit = vectors * dim * 4 + INDEX_SLACK
    with gzip.GzipFile(fileobj=io.BytesIO(blob), mode="rb") as file:
        data = read_at_most(file, limit)
    if len(data) > limit:
        raise StaleAssets(f"{name} decompresses to more than {limit} bytes, the most a flat index of {vectors} vectors "
                          f"of {dim} dimensions takes; refused (a gzip bomb, or damaged)")
    return data


def _checked(folder: Path, name: str, digest: str) -> bytes:
    try:
        blob = read_regular(contained_file(folder, name), MAX_ASSET_BYTES, shown=name)
    except ValueError as err:
        raise StaleAssets(str(err)) from None
    if hashlib.sha256(blob).hexdigest() != digest:
        raise StaleAssets(f"{name} is damaged (its sha256 differs from {MANIFEST}'s)")
    return blob


PHOTOS = "fashion-mnist"  # the gallery folder of the real-photo release


def real_photo_release(photos=None) -> Path:
    """The Fashion-MNIST real-photo release (``lookbench build --source fashion-mnist``) of the IDX files in
    ``photos`` (default: the Debian package dataset-fashion-mnist's), built once per file content and package version."""
    from lookbench._version import __version__
    from lookbench.dataset_builder import build_release
    from lookbench.dataset_builder.fashion_mnist import FILES, package_folder
    from lookbench.files import hash_files
    from lookbench.paths import converted_data_dir

    root = Path(photos).expanduser() if photos else package_folder()
    try:
        files = [contained_file(root, name) for name in FILES["t10k"]]
    except ValueError as err:
        raise ValueError(f"the real-photo gallery needs Fashion-MNIST's t10k IDX files: {err}") from None
    out = converted_data_dir(f"fashion-mnist-{__version__}-{hash_files(files)[:16]}")
    if not (out / "README.md").is_file():
        build_release("fashion-mnist", out, input_path=root)
    return out


def galleries(data=None, photos=None, root=None) -> list[tuple[Path, object]]:
    """The galleries ``lookbench demo`` serves, as (assets folder, data): ``data`` (default: the embedded Mini) and,
    when ``photos`` is given (True: the Debian package's files), the real-photo release."""
    root = Path(root or space_assets_dir()).expanduser()
    first = (root / EMBEDDED, None) if data is None else (root / f"data-{data_key(data)}", data)
    return [first] + ([photo_gallery(photos, root)] if photos else [])


def photo_gallery(photos, root=None) -> tuple[Path, Path]:
    """The real-photo gallery as (assets folder, release), its release built first when new (``photos`` True: the
    Debian package's files)."""
    root = Path(root or space_assets_dir()).expanduser()
    return root / PHOTOS, real_photo_release(None if photos is True else photos)


def shipped_galleries(root) -> list[tuple[Path, object]]:
    """The galleries of an assets folder as ``lookbench stage`` ships it in the Space: the embedded Mini (rebuilt
    when stale) first, then the others, whose data is not in the Space (``SHIPPED``)."""
    root = Path(root)
    others = sorted(p for p in root.iterdir() if p.is_dir() and p.name != EMBEDDED and not p.name.startswith("."))
    return [(root / EMBEDDED, None)] + [(p, SHIPPED) for p in others]


def open_galleries(specs, models=DEFAULT_MODELS, *, quiet: bool = False, bars=stage_bar,
                   encoders=None) -> tuple[list["SpaceAssets"], dict]:
    """Each gallery of ``specs`` loaded (built or rebuilt as ``open_assets`` does) with one set of encoders (those
    given, else loaded); a shipped gallery that is stale or damaged is left out, with its one-line reason printed."""
    from lookbench.encoders.registry import load_encoder

    encoders = {name: (encoders or {}).get(name) or load_encoder(name) for name in models}
    served = []
    for folder, data in specs:
        try:
            served.append(open_assets(data, folder, models, encoders=encoders, quiet=quiet, bars=bars))
        except StaleAssets as err:
            if data is not SHIPPED:
                raise
            print(f"Not serving the gallery {err}", flush=True)
    return served, encoders


def copy_assets(assets: "SpaceAssets", target: Path) -> None:
    """A gallery's manifest and files copied into the new folder ``target`` (how ``lookbench stage`` ships them),
    each read through the containment reader and checked against the manifest again."""
    for name, digest in {MANIFEST: None, **assets.manifest["files"]}.items():
        blob = read_regular(contained_file(assets.folder, name), MAX_ASSET_BYTES) if digest is None \
            else _checked(assets.folder, name, digest)
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_bytes(blob)
