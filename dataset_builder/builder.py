"""The LookBench ``datasets`` builder: one config per subset (plus ``noise`` and a training set)."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import datasets

from lookbench.citation import BIBTEX, PAPER_URL
from lookbench.progress import StageBars
from lookbench.schema import DEFAULT_CONFIG, FEATURES, NOISE, SUBSETS, resolve_subset

from lookbench.dataset_builder.catalog import open_source
from lookbench.dataset_builder.sources import TRAIN
from lookbench.dataset_builder.validation import (
    SplitChecker,
    ValidationError,
    ValidationReport,
    leak_warnings,
)
from lookbench.dataset_builder.taxonomy import load as load_taxonomy

TRAIN_DESCRIPTION = "Training items for attribute-supervised encoders, disjoint from every test subset."


@dataclass
class LookBenchConfig(datasets.BuilderConfig):
    """Which subset to build and where its rows come from (``data_dir`` is the release folder)."""

    source: str = "raw"
    release: str | None = None
    skip_invalid: bool = False
    taxonomy: str | None = None  # the taxonomy file (taxonomy.py) every row is checked against

    @property
    def splits(self) -> tuple[str, ...]:
        return (TRAIN,) if self.name == TRAIN else SUBSETS[self.name].splits


class LookBench(datasets.GeneratorBasedBuilder):
    """LookBench: a live, attribute-supervised fashion image-retrieval benchmark."""

    BUILDER_CONFIG_CLASS = LookBenchConfig
    BUILDER_CONFIGS = [LookBenchConfig(name=s.name, description=s.description) for s in SUBSETS.values()] + [
        LookBenchConfig(name=TRAIN, description=TRAIN_DESCRIPTION)
    ]
    DEFAULT_CONFIG_NAME = DEFAULT_CONFIG

    def __init__(self, *args, config_name: str | None = None, progress: StageBars | None = None, **kwargs):
        """``progress``: the build's ``validate`` and ``write`` bars (none when the builder is used on its own)."""
        if config_name is not None and config_name != TRAIN:
            config_name = resolve_subset(config_name)
        super().__init__(*args, config_name=config_name, **kwargs)
        self.validation_report = ValidationReport()
        self.progress = progress or StageBars(("validate", "write"), enabled=False)

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=self.config.description,
            features=FEATURES,
            homepage=PAPER_URL,
            citation=BIBTEX,
            license="apache-2.0",
        )

    def _source(self):
        if not self.config.data_dir:
            raise ValueError("LookBench needs data_dir= the release folder to build from")
        return open_source(self.config.source, self.config.data_dir, self.config.release)

    def _split_generators(self, dl_manager):
        source = self._source()
        taxonomy = load_taxonomy(self.config.taxonomy) if self.config.taxonomy else None
        now = dt.datetime.now(dt.timezone.utc)
        checkers = {}
        validate = self.progress["validate"]
        for split in self.config.splits:
            checker = SplitChecker(self.config.name, split, source.location(self.config.name, split), now=now, taxonomy=taxonomy)
            self.progress.add_total("validate", source.num_rows(self.config.name, split))
            for index, row in enumerate(source.iter_rows(self.config.name, split)):
                checker.check(index, row)
                validate.update()
            checkers[split] = checker
        problems = [p for c in checkers.values() for p in c.problems]
        fatal = [p for c in checkers.values() for p in c.split_problems(self.config.skip_invalid)]
        if fatal or (problems and not self.config.skip_invalid):
            raise ValidationError(problems + fatal)
        self.validation_report.problems.extend(problems)
        self.progress.add_total("write", sum(len(c.valid) for c in checkers.values()))
        if "query" in checkers:
            self.validation_report.warnings.extend(leak_warnings(self.config.name, checkers["query"], checkers["gallery"]))
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"split": split, "keep": frozenset(checker.valid)})
            for split, checker in checkers.items()
        ]

    def _generate_examples(self, split: str, keep: frozenset):
        write = self.progress["write"]
        for index, row in enumerate(self._source().iter_rows(self.config.name, split)):
            if index in keep:
                yield index, {name: _example_value(name, row.get(name)) for name in FEATURES}
                write.update()


def _example_value(name: str, value):
    if name in ("image", "raw_image") and value is not None:
        # No path: datasets would store only a path that happens to exist relative to the working directory.
        return {"bytes": value["bytes"], "path": None}
    if name == "category" and value is not None:
        return value.strip().lower()
    if name == "bbox" and value is not None:
        return [float(v) for v in value]
    return value


__all__ = ["LookBench", "LookBenchConfig", "NOISE"]
