"""Sealing a built folder: the public part withholds exactly the sealed releases' labels, the labels join back only
to the rows they name (docs/publishing.md), and unsealing gives the original shards back."""
from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lookbench.dataset_builder.labels import Labels
from lookbench.dataset_builder.seal import seal, unseal
from lookbench.dataset_builder.sealed import LABEL_FIELDS, sealed_state
from lookbench.dataset_builder.sources import SourceError
from tests.helpers.shared import mini_copy


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("built") / "mini"
    return mini_copy(out)


def _copy(built, tmp_path):
    folder = tmp_path / "data"
    shutil.copytree(built, folder)
    return folder


@pytest.mark.slow
def test_one_release_sealed_keeps_the_others_public_and_unseals_to_the_same_shards(built, tmp_path):
    folder = _copy(built, tmp_path)
    sealed = seal(folder, ["mini-v20251201"], "2027-01-31")
    assert sealed_state(folder) == sealed and sealed.until == "2027-01-31"
    assert not (folder / "text").exists() and (tmp_path / "data-labels" / "text").is_dir()
    table = pq.read_table(folder / "RealStreetLook" / "query-00000-of-00001.parquet")
    newest = [r == "mini-v20251201" for r in table["release"].to_pylist()]
    assert any(newest) and not all(newest)
    for field in LABEL_FIELDS:
        values = table[field].to_pylist()
        assert all(v is None for v, n in zip(values, newest) if n)
        assert all(v is not None for v, n in zip(values, newest) if not n)
    with pytest.raises(SourceError, match="sealed already"):
        seal(folder, ["mini-v20251201"])
    unseal(folder, tmp_path / "data-labels")
    assert sealed_state(folder) is None
    for shard in sorted(built.glob("*/*.parquet")):
        assert pq.read_table(folder / shard.relative_to(built)).equals(pq.read_table(shard)), shard


@pytest.mark.slow
def test_labels_that_do_not_match_their_public_part_are_refused_naming_the_row(built, tmp_path):
    folder = _copy(built, tmp_path)
    seal(folder)
    labels = tmp_path / "data-labels"
    shard = labels / "AIGen-Studio" / "gallery-00000-of-00001.parquet"
    table = pq.read_table(shard)
    digests = table["image_sha256"].to_pylist()
    digests[3] = "0" * 64  # the label of row 3 now names another image
    pq.write_table(table.set_column(table.schema.get_field_index("image_sha256"), "image_sha256", pa.array(digests)), shard)
    with pytest.raises(SourceError, match=r"do not match AIGen-Studio/gallery row 3 \(item .*their image_sha256 is '0000"):
        unseal(folder, labels)
    assert sealed_state(folder) is not None  # nothing was replaced
    with pytest.raises(SourceError, match="has no release v20990101"):
        seal(_copy(built, tmp_path / "other"), ["v20990101"])
    with pytest.raises(SourceError, match="not a date"):
        seal(_copy(built, tmp_path / "third"), None, "2027-02-30")


@pytest.mark.slow
def test_labels_are_read_alike_from_a_labels_folder_and_from_an_unsealed_release(built, tmp_path):
    folder = _copy(built, tmp_path)
    state = seal(folder)
    withheld = Labels.read(tmp_path / "data-labels", state.releases)
    public = Labels.read(built, state.releases)
    assert withheld.tables == public.tables and not withheld.public and public.public
    with pytest.raises(SourceError, match="holds no labels"):
        Labels.read(folder, state.releases)


@pytest.mark.slow
@pytest.mark.parametrize("planted", ["RealStreetLook/gallery-00000-of-00001.parquet", "validation_report.json"])
def test_a_link_out_of_the_folder_is_refused_never_sealed_into_a_regular_file(built, tmp_path, planted):
    """A shard or a report that links out of the built folder is refused naming it, before anything is written: seal
    would otherwise read it and hard-link (or copy) the outside file into the public or labels folder as a file."""
    folder = _copy(built, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copyfile(folder / planted if (folder / planted).exists() else built / "README.md", outside / "secret")
    (folder / planted).unlink(missing_ok=True)
    (folder / planted).symlink_to(outside / "secret")
    before = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    with pytest.raises(SourceError, match=f"{planted.split('/')[-1]} lies outside the data/ folder"):
        seal(folder, ["mini-v20251201"])
    assert sealed_state(folder) is None and sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == before
    assert not (tmp_path / "data-labels").exists()


@pytest.mark.slow
def test_the_demo_refuses_a_sealed_release_in_one_line_and_prepares_nothing(built, tmp_path):
    """Nothing published beside a sealed release carries a label: the demo, which shows each row's annotation and
    outfit, serves public releases only."""
    from lookbench.encoders.registry import load_encoder
    from lookbench.errors import EvaluationError
    from lookbench.space.assets import open_assets

    folder = _copy(built, tmp_path)
    seal(folder)
    with pytest.raises(EvaluationError, match=r"is sealed \(its labels are withheld\): the demo serves public releases only"):
        open_assets(folder, tmp_path / "assets", models=("random",), encoders={"random": load_encoder("random")}, quiet=True)
    assert not (tmp_path / "assets").exists() or not any((tmp_path / "assets").iterdir())
