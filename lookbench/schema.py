"""The one LookBench record schema and the subset registry (docs/architecture.md §3), declared as data."""
from __future__ import annotations

import datetime as dt
import difflib
import re
from dataclasses import dataclass

from lookbench.errors import shown


# The record, field by field, as data: the kind of each field decides its datasets feature (``FEATURES``) and how
# the builder checks it, without importing datasets here.
FIELD_KINDS = {
    "image": "image",
    "item_id": "string",
    "category": "string",
    "main_attribute": "string",
    "attributes": "attributes",
    "bbox": "bbox",
    "outfit_id": "string",
    "timestamp": "timestamp",
    "release": "string",
    "source": "string",
    "raw_image": "image",
}


def _features():
    """The datasets ``Features`` of a record, built on first use so that the CLI's help and the subset registry
    do not import datasets."""
    import datasets

    kinds = {
        "image": datasets.Image(),
        "string": datasets.Value("string"),
        "attributes": datasets.List({"name": datasets.Value("string"), "value": datasets.Value("string")}),
        "bbox": datasets.List(datasets.Value("float32"), length=4),
        "timestamp": datasets.Value("timestamp[s, tz=UTC]"),
    }
    return datasets.Features({name: kinds[kind] for name, kind in FIELD_KINDS.items()})


def __getattr__(name):
    """``FEATURES`` is computed once, when first read (PEP 562)."""
    if name == "FEATURES":
        globals()["FEATURES"] = features = _features()
        return features
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Fields every built row carries (a raw row without `release` or `source` gets the release's default); the rest are nullable.
REQUIRED_FIELDS = ("image", "item_id", "category", "main_attribute", "attributes", "timestamp", "release")
# Fields whose values must be strings (no number, bool or list turned into one).
STRING_FIELDS = tuple(name for name, kind in FIELD_KINDS.items() if kind == "string")
# A snapshot name: v<YYYYMMDD> (docs/architecture.md §1); LookBench-Mini's synthetic releases are mini-v<YYYYMMDD>,
# so that none can be taken for a real snapshot.
RELEASE_PATTERN = re.compile(r"^(?:mini-)?v(\d{8})$")
SYNTHETIC = "synthetic"  # the `source` of every LookBench-Mini row (rendered, neither a photo nor an AI-generated image)

# Where a dataset's images come from, as a model's declared training data (``ModelMeta.training_datasets``) and an
# evaluated dataset's provenance (``dataset.sources``) both name it: a result is zero-shot when the two share none.
# LookBench's own releases (crawled and AI-generated, srpone/look-bench), the LookBench-Mini generator (every stream:
# train and test are drawn by one renderer) and Zalando's Fashion-MNIST (train and t10k are one photo collection).
LOOKBENCH_DATA, MINI_DATA, FASHION_MNIST_DATA = "lookbench", "lookbench-mini", "fashion-mnist"


def release_date(name: str) -> dt.datetime:
    """The snapshot date a release name such as ``v20251201`` stands for, midnight UTC (``ValueError`` otherwise)."""
    match = RELEASE_PATTERN.match(name)
    if not match:
        raise ValueError(f"Release {name!r} is not a snapshot name v<YYYYMMDD> (mini-v<YYYYMMDD> for LookBench-Mini), e.g. v20251201")
    try:
        return dt.datetime.strptime(match.group(1), "%Y%m%d").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        raise ValueError(f"Release {name!r} is not a snapshot name v<YYYYMMDD>: {match.group(1)} is no date") from None


@dataclass(frozen=True)
class Subset:
    """Metadata of one LookBench configuration, as the paper and the public release describe it."""

    name: str
    alias: str
    description: str
    source: str  # "real" or "aigen"
    multi_item: bool
    difficulty: str
    published_queries: int
    published_gallery: int

    @property
    def splits(self) -> tuple[str, ...]:
        return ("gallery",) if self.name == NOISE else ("query", "gallery")


NOISE = "noise"

SUBSETS: dict[str, Subset] = {
    s.name: s
    for s in (
        Subset(
            "RealStudioFlat", "real_studio_flat",
            "Real flat-lay product photos on a clean background, one item per image.",
            "real", False, "easy", 1011, 3951,
        ),
        Subset(
            "AIGen-Studio", "aigen_studio",
            "AI-generated studio images of one item, with styled backgrounds and pose/lighting changes.",
            "aigen", False, "medium", 193, 979,
        ),
        Subset(
            "RealStreetLook", "real_streetlook",
            "Real street outfit photos with several items; each query is one item crop of the outfit.",
            "real", True, "hard", 981, 3278,
        ),
        Subset(
            "AIGen-StreetLook", "aigen_streetlook",
            "AI-generated street outfits with several items; each query is one item crop of the outfit.",
            "aigen", True, "hard", 160, 571,
        ),
        Subset(
            NOISE, "noise",
            "Shared distractor gallery (soft negatives) appended to every subset's gallery at evaluation time.",
            "real", False, "-", 0, 58275,
        ),
    )
}

TEST_SUBSETS: tuple[str, ...] = tuple(n for n in SUBSETS if n != NOISE)
DEFAULT_CONFIG = "RealStreetLook"


def resolve_subset(name: str) -> str:
    """Map a paper name or its published snake_case alias to the paper name; suggest close names on a typo."""
    if name in SUBSETS:
        return name
    by_key = {}
    for s in SUBSETS.values():
        by_key[s.name.lower()] = s.name
        by_key[s.alias] = s.name
    key = name.strip().lower().replace("-", "_")
    for candidate, canonical in by_key.items():
        if candidate.replace("-", "_") == key:
            return canonical
    known = sorted(set(by_key.values()) | {s.alias for s in SUBSETS.values()})
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise ValueError(f"Unknown LookBench subset {shown(name)}.{hint} Valid names: {', '.join(known)}")
