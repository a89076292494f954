"""The Fashion-MNIST source (`lookbench build --source fashion-mnist`): IDX reading, the release, the training set."""
import gzip
import hashlib
import io
import shutil
import struct
import subprocess
import sys
import zlib

import datasets
import numpy as np
import pytest
from PIL import Image

from lookbench.dataset_builder import SourceError, build_release
from lookbench.dataset_builder import fashion_mnist as fm
from lookbench.dataset_builder import sources
from lookbench.schema import FEATURES
from tests.helpers.photos import fashion_mnist_release

try:
    PACKAGE_DIR = fm.package_folder()
except SourceError:
    PACKAGE_DIR = None
needs_package = pytest.mark.skipif(
    PACKAGE_DIR is None, reason=f"needs the Debian package {fm.PACKAGE} (.ci/run installs it: apt-get install {fm.PACKAGE})"
)


def write_idx(folder, split, images, labels, *, image_magic=fm.IMAGE_MAGIC, image_count=None, cut=0):
    """A gzip IDX pair as Zalando publishes it; ``image_count``/``cut`` forge a wrong header or a short file."""
    image_name, label_name = fm.FILES[split]
    header = image_magic.to_bytes(4, "big") + (len(images) if image_count is None else image_count).to_bytes(4, "big")
    body = header + (28).to_bytes(4, "big") * 2 + np.asarray(images, dtype=np.uint8).tobytes()
    (folder / image_name).write_bytes(gzip.compress(body[:len(body) - cut]))
    labels = np.asarray(labels, dtype=np.uint8)
    (folder / label_name).write_bytes(gzip.compress(fm.LABEL_MAGIC.to_bytes(4, "big") + len(labels).to_bytes(4, "big") + labels.tobytes()))


def garment(label, level, rng):
    """A 28 px white-on-black product of the given grey level (a filled block whose width depends on the class)."""
    image = np.zeros((28, 28), dtype=np.uint8)
    image[4:24, 10 - label // 2:18 + label // 2] = level
    image[4, 10] = rng.integers(1, 255)  # makes every image distinct
    return image


@pytest.fixture
def idx_folder(tmp_path):
    """A small Fashion-MNIST folder: 40 t10k and 30 train photos of every class and all three shades."""
    rng = np.random.default_rng(0)
    folder = tmp_path / "fmnist"
    folder.mkdir()
    for split, n in (("t10k", 40), ("train", 30)):
        labels = [i % 10 for i in range(n)]
        levels = [(90, 150, 220)[(i // 10 + (split == "train")) % 3] for i in range(n)]
        write_idx(folder, split, [garment(lab, lev, rng) for lab, lev in zip(labels, levels)], labels)
    return folder


def one_line(message: str) -> bool:
    return "\n" not in message.strip()


def test_shade_is_the_mean_grey_level_of_the_product_pixels():
    image = np.zeros((28, 28), dtype=np.uint8)
    image[:5, :5] = 127
    assert fm.shade(image) == "light"  # the black background does not count
    image[:5, :5] = 128
    assert fm.shade(image) == "medium"
    image[:5, :5] = 170
    assert fm.shade(image) == "dark"


def test_photo_is_a_dark_product_on_white_at_the_documented_size():
    image = np.zeros((28, 28), dtype=np.uint8)
    image[8:20, 8:20] = 255
    with Image.open(io.BytesIO(fm.photo(image))) as photo:
        assert photo.size == (fm.SIZE, fm.SIZE) and photo.mode == "L"
        pixels = np.asarray(photo)
    assert pixels[0, 0] == 255 and pixels[fm.SIZE // 2, fm.SIZE // 2] == 0


def test_release_and_training_set_from_idx_files(tmp_path, idx_folder):
    summary = build_release("fashion-mnist", tmp_path / "out", input_path=idx_folder, train_out=tmp_path / "train")
    assert summary.rows == {"RealStudioFlat": {"query": 4, "gallery": 36}} and summary.train_rows == 30
    release = datasets.load_dataset(str(tmp_path / "out"), "RealStudioFlat")
    query, gallery = release["query"], release["gallery"]
    assert query["item_id"] == [f"fashion-mnist-t10k-{i:05d}" for i in (0, 10, 20, 30)]
    digests = {split: {hashlib.sha256(img["bytes"]).hexdigest() for img in ds.cast_column("image", datasets.Image(decode=False))["image"]}
               for split, ds in release.items()}
    assert len(digests["query"]) == 4 and len(digests["gallery"]) == 36 and not digests["query"] & digests["gallery"]
    assert query["category"] == ["t-shirt/top"] * 4 and set(gallery["category"]) == set(fm.CLASSES[1:])
    # the shade follows the grey level: t10k rows 0-9 are 90 (light), 10-19 150 (medium), 20-29 220 (dark)
    assert [a[0]["value"] for a in query["attributes"]] == ["light", "medium", "dark", "light"] == query["main_attribute"]
    assert set(query["release"]) | set(gallery["release"]) == {"v20170825"} and summary.releases == ["v20170825"]
    assert {t.isoformat() for t in query["timestamp"]} == {"2017-08-25T00:00:00+00:00"}
    assert set(query["source"]) == {"real"} and query[0]["image"].size == (fm.SIZE, fm.SIZE)
    card = (tmp_path / "out" / "README.md").read_text()
    assert "license: mit" in card and "Zalando SE" in card and "**shade**" in card and f"{fm.SIZE} × {fm.SIZE} px" in card
    text = datasets.load_dataset(str(tmp_path / "out"), "text", split="real_studio_flat")  # the class name and shade
    assert text["text_short"] == ["light t-shirt/top", "medium t-shirt/top", "dark t-shirt/top", "light t-shirt/top"]
    assert text["text_long"][2] == "An item in the category t-shirt/top whose shade is dark."

    train = datasets.load_dataset(str(tmp_path / "train"), split="train")
    assert train.features == FEATURES  # Mini train's row schema, so the training recipe reads both
    assert train["item_id"][:2] == ["fashion-mnist-train-00000", "fashion-mnist-train-00001"]
    assert train["attributes"][0] == [{"name": "shade", "value": "medium"}]
    train_card = (tmp_path / "train" / "README.md").read_text()
    assert "license: mit" in train_card and "Zalando SE" in train_card and "**shade**" in train_card


def test_check_disjoint_covers_the_real_photo_release(tmp_path, idx_folder, capsys):
    from lookbench.training.check_disjoint import main as check_main

    build_release("fashion-mnist", tmp_path / "out", input_path=idx_folder, train_out=tmp_path / "train")
    assert check_main(["--train", str(tmp_path / "train"), "--test", str(tmp_path / "out")]) == 0
    assert "shared with train: 0 item ids, 0 images" in capsys.readouterr().out
    # a train split that repeats t10k photos (other ids) is caught by the image hashes
    leaky = tmp_path / "leaky"
    shutil.copytree(idx_folder, leaky)
    for t10k, train in zip(fm.FILES["t10k"], fm.FILES["train"]):
        shutil.copy(leaky / t10k, leaky / train)
    build_release("fashion-mnist", tmp_path / "leaky-out", input_path=leaky, train_out=tmp_path / "leaky-train")
    assert check_main(["--train", str(tmp_path / "train"), str(tmp_path / "leaky-train"), "--test", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith(f"train {tmp_path / 'leaky-train'}: 40 rows") and "shared with train: 0 item ids, 40 images" in out[2]


@pytest.mark.parametrize("damage, expected", [
    ({"image_magic": 0x00000801}, r"t10k-images-idx3-ubyte.gz: wrong magic number 0x00000801"),
    ({"cut": 100}, r"t10k-images-idx3-ubyte.gz: truncated: the header declares 40 records of 784 byte\(s\)"),
    ({"image_count": 39, "cut": 784}, r"t10k-labels-idx1-ubyte.gz: 40 labels, but t10k-images-idx3-ubyte.gz holds 39 images"),
])
def test_bad_idx_files_stop_the_build_with_one_line_naming_the_file(tmp_path, damage, expected):
    folder = tmp_path / "bad"
    folder.mkdir()
    write_idx(folder, "t10k", np.zeros((40, 28, 28)), [0] * 40, **damage)
    with pytest.raises(SourceError, match=expected) as err:
        build_release("fashion-mnist", tmp_path / "out", input_path=folder)
    assert one_line(str(err.value)) and str(folder) in str(err.value)
    assert not (tmp_path / "out").exists()


def test_a_file_that_is_not_gzip_and_a_bad_label_are_named(tmp_path, idx_folder):
    (idx_folder / fm.FILES["t10k"][0]).write_bytes(b"not gzip at all")
    with pytest.raises(SourceError, match=r"t10k-images-idx3-ubyte.gz: truncated or not a gzip IDX file"):
        fm.FashionMnistSource(idx_folder).num_rows("RealStudioFlat", "query")
    folder = tmp_path / "labels"
    folder.mkdir()
    write_idx(folder, "t10k", np.zeros((3, 28, 28)), [0, 12, 1])
    with pytest.raises(SourceError, match=r"t10k-labels-idx1-ubyte.gz: label 12 of record 2 is not a class \(0-9\)"):
        fm.FashionMnistSource(folder).num_rows("RealStudioFlat", "query")


def test_cli_reports_a_bad_idx_file_in_one_line(tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    write_idx(folder, "t10k", np.zeros((5, 28, 28)), [0] * 5, cut=10)
    proc = subprocess.run([sys.executable, "-m", "lookbench", "build", "--source", "fashion-mnist", "--input", str(folder),
                           "--out", str(tmp_path / "out"), "--quiet"], capture_output=True, text=True)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        f"lookbench build: error: {folder / fm.FILES['t10k'][0]}: truncated: the header declares 5 records of 784 byte(s), "
        "the file holds 3910 byte(s) of data"
    ]


def test_a_missing_idx_file_is_named_with_its_folder(tmp_path, idx_folder):
    (idx_folder / fm.FILES["train"][1]).unlink()
    with pytest.raises(SourceError, match=rf"Fashion-MNIST folder {idx_folder}: cannot read train-labels-idx1-ubyte.gz"):
        build_release("fashion-mnist", tmp_path / "out", input_path=idx_folder, train_out=tmp_path / "train")


def test_without_the_package_or_input_the_error_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(fm, "PACKAGE", "dataset-that-is-not-installed")
    with pytest.raises(SourceError, match=r"dataset-that-is-not-installed is not installed .*pass --input DIR"):
        fm.package_folder()


@needs_package
def test_the_installed_package_is_found_through_dpkg_and_read_whole():
    listed = subprocess.run(["dpkg", "-L", fm.PACKAGE], capture_output=True, text=True, check=True).stdout.splitlines()
    assert str(PACKAGE_DIR / fm.FILES["t10k"][0]) in listed
    images, labels = fm.read_split(PACKAGE_DIR, "t10k")
    assert images.shape == (10000, 28, 28) and np.bincount(labels).tolist() == [1000] * 10
    source = fm.FashionMnistSource()
    assert source.root == PACKAGE_DIR
    assert (source.num_rows("RealStudioFlat", "query"), source.num_rows("RealStudioFlat", "gallery"), source.num_rows("train", "train")) \
        == (1000, 9000, 60000)
    shades = {fm.shade(image) for image in images[:200]}
    assert shades == {"light", "medium", "dark"}  # Fine Recall asks for more than the class


@needs_package
@pytest.mark.slow
def test_the_default_build_reads_the_package_and_shares_no_image(tmp_path_factory):
    """The default build is the one every real-photo test reads (``build_release("fashion-mnist", folder)``, run once
    per test run: tests/helpers/photos.py)."""
    out = fashion_mnist_release(tmp_path_factory)
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["RealStudioFlat", "text"]  # one subset, its texts
    release = datasets.load_dataset(str(out), "RealStudioFlat").cast_column("image", datasets.Image(decode=False))
    assert {split: release[split].num_rows for split in release} == {"query": 1000, "gallery": 9000}
    digests = [{hashlib.sha256(img["bytes"]).hexdigest() for img in release[split]["image"]} for split in ("query", "gallery")]
    assert len(digests[0]) == 1000 and len(digests[1]) == 9000 and not digests[0] & digests[1]
    assert f"--input {PACKAGE_DIR}" in (out / "README.md").read_text()


# -- the IDX header is checked against the data before anything of its size is allocated (issue 37) ---------------


def gzip_bomb(path, header: bytes, zeros: int):
    """A valid gzip file of ``header`` then ``zeros`` zero bytes, about 1 KB per MiB: after a full flush, deflate
    writes every zero MiB as the same bytes, so one block is compressed and repeated (CRC and size are real)."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    mib = bytes(1 << 20)
    head = deflate.compress(header) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(mib) + deflate.flush(zlib.Z_FULL_FLUSH)
    whole, rest = divmod(zeros, len(mib))
    crc = zlib.crc32(header)
    for _ in range(whole):
        crc = zlib.crc32(mib, crc)
    crc = zlib.crc32(bytes(rest), crc)
    with open(path, "wb") as out:
        out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")  # gzip, deflate, no name, no mtime
        out.write(head)
        for _ in range(whole):
            out.write(block)
        out.write(deflate.compress(bytes(rest)) + deflate.flush())
        out.write(struct.pack("<II", crc, (len(header) + zeros) & 0xFFFFFFFF))


# The child reports its peak RSS as VmHWM: ru_maxrss survives exec, so it would count the forked pytest process.
READ_IN_A_CHILD = """
import re, sys
from pathlib import Path
from lookbench.dataset_builder import SourceError
from lookbench.dataset_builder import fashion_mnist as fm
try:
    print("rows", fm.FashionMnistSource(Path(sys.argv[1])).num_rows("RealStudioFlat", "query"))
except SourceError as err:
    print(err)
print(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1))
"""


@pytest.mark.parametrize("claimed", [4_000_000, 2 ** 32 - 1])
def test_a_header_bomb_is_refused_within_seconds_in_bounded_memory(tmp_path, claimed):
    """A 3 MB gzip holding 4,000,000 zero images (3.1 GB of data) reached 3.5 GB and ran past 5 minutes; a claim of
    2**32 - 1 ended in an empty MemoryError. Both are refused naming the file, the claim and what the file holds."""
    folder = tmp_path / "bomb"
    folder.mkdir()
    images, labels = (folder / name for name in fm.FILES["t10k"])
    gzip_bomb(images, fm.IMAGE_MAGIC.to_bytes(4, "big") + claimed.to_bytes(4, "big") + (28).to_bytes(4, "big") * 2,
              4_000_000 * 28 * 28)
    gzip_bomb(labels, fm.LABEL_MAGIC.to_bytes(4, "big") + claimed.to_bytes(4, "big"), 4_000_000)
    assert images.stat().st_size < 4_000_000
    try:
        child = subprocess.run([sys.executable, "-c", READ_IN_A_CHILD, str(folder)], capture_output=True, text=True,
                               timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("reading the header bomb took more than 120 s")
    assert child.returncode == 0, child.stderr
    message, peak_kib = child.stdout.strip().splitlines()
    assert message == (f"{images}: the header declares {claimed} records of 784 byte(s), and the file holds more "
                       f"than {sources.MAX_FILE_BYTES} byte(s) of data, the limit of one file")
    assert int(peak_kib) < 500 * 1024, f"peak RSS {int(peak_kib) // 1024} MiB"


def test_a_header_claiming_more_than_a_small_file_holds_is_named_with_both_sizes(tmp_path):
    folder = tmp_path / "claims"
    folder.mkdir()
    write_idx(folder, "t10k", np.zeros((10, 28, 28)), [0] * 10, image_count=4_000_000)
    with pytest.raises(SourceError) as err:
        fm.read_split(folder, "t10k")
    assert str(err.value) == (f"{folder / fm.FILES['t10k'][0]}: truncated: the header declares 4000000 records of "
                              "784 byte(s), the file holds 7840 byte(s) of data")


def test_an_empty_split_is_named_in_one_line(tmp_path):
    """It used to end in "has no rows — 2 rows: rows None (None), None (None)"."""
    folder = tmp_path / "empty"
    folder.mkdir()
    write_idx(folder, "t10k", np.zeros((0, 28, 28)), [])
    with pytest.raises(SourceError) as err:
        build_release("fashion-mnist", tmp_path / "out", input_path=folder)
    assert str(err.value) == (f"{folder / fm.FILES['t10k'][0]}: the header declares 0 records: the split is empty, "
                              "and a Fashion-MNIST split needs at least one image")
    assert not (tmp_path / "out").exists()


def test_a_labels_file_is_bounded_alike(tmp_path):
    """Ten good images, and a labels file whose header claims 2**32 - 1 labels over 100 MB of zeros."""
    folder = tmp_path / "labels-bomb"
    folder.mkdir()
    write_idx(folder, "t10k", np.zeros((10, 28, 28)), [0] * 10)
    labels = folder / fm.FILES["t10k"][1]
    gzip_bomb(labels, fm.LABEL_MAGIC.to_bytes(4, "big") + (2 ** 32 - 1).to_bytes(4, "big"), 100 * 2 ** 20)
    with pytest.raises(SourceError) as err:
        fm.read_split(folder, "t10k")
    assert str(err.value) == (f"{labels}: the header declares {2 ** 32 - 1} records of 1 byte(s), and the file holds "
                              f"more than {sources.MAX_FILE_BYTES} byte(s) of data, the limit of one file")
