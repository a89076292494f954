"""A result's provenance, typed: the data, the model, the settings (``store.Settings``) and the submission it records,
read from the result's JSON in one place, each field's check written once (``result_parts`` for verify and the
reproduction, ``Provenance.measured`` / ``shown_model`` for a leaderboard row, ``named_data`` for the data to load).

A ``Provenance`` reads the provenance mapping and never rewrites it (``raw``): what is stored never changes by a byte.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lookbench.errors import EvaluationError, clip, shorten
from lookbench.results.store import Settings
from lookbench.settings import DEFAULT_QUERIES, EMBEDDED_MINI, MODES, TEXT_FORMS

UNSEALED = "unsealed"  # a sealed-era submission scored with the labels its release published since (its placement's labels)


class UnknownData(EvaluationError):
    """The data a result names is not one the verifier was allowed to load (the board's allow-list)."""


class _Key:
    """One key of a provenance mapping, read as the JSON holds it (``default`` when it is absent)."""

    def __init__(self, key: str, default=None):
        self.key, self.default = key, default

    def __get__(self, owner, kind=None):
        return self if owner is None else owner.raw.get(self.key, self.default)


class _Part:
    """A mapping of the provenance (the data, the model, the submission): ``raw`` as the JSON holds it, ``{}`` when
    the provenance holds no mapping there (``described`` says whether it does)."""

    def __init__(self, raw):
        self.described = isinstance(raw, dict)
        self.raw = raw if self.described else {}

    def need(self, key: str):
        """The value at ``key``, which every result of the current format records: a ``KeyError`` when it is absent."""
        return self.raw[key]

    def text(self, key: str, what: str, optional: bool = False):
        """The string at ``key``, or a ValueError naming ``what`` (``None`` allowed when ``optional``)."""
        return _text(self.raw.get(key), what, optional)


class Data(_Part):
    """``provenance.dataset``: the data the result was measured on, as ``engine.data`` recorded it."""

    name, data, key, revision, commit = _Key("name"), _Key("data"), _Key("key"), _Key("revision"), _Key("commit")
    releases, sealed = _Key("releases"), _Key("sealed")
    releases_left_out = _Key("releases_left_out")  # the sealed releases a run on a sealed folder's public part left out

    @property
    def sources(self) -> list[str] | None:
        """Where its images come from (``lookbench.schema``'s names; ``None``: not recorded, or not a list of names)."""
        found = self.raw.get("sources")
        return found if isinstance(found, list) and all(isinstance(s, str) for s in found) else None

    @property
    def title(self) -> str:
        """The data's name as a title shows it (never "LookBench" for data that may not be LookBench's)."""
        return self.name or self.data or "unnamed data"

    @property
    def is_sealed(self) -> bool:
        """Made on a sealed release (the data's own provenance says so): the result claims no score."""
        return isinstance(self.sealed, dict)


class Model(_Part):
    """``provenance.model``: the model evaluated, as its encoder described it."""

    name, source, revision, fingerprint = _Key("name"), _Key("model"), _Key("revision"), _Key("fingerprint")
    training_cutoff, published_name, weights_sha256 = _Key("training_cutoff"), _Key("published_name"), _Key("weights_sha256")
    registered_as = _Key("registered_as")  # a Hub copy of a registered model: that model's name (its alias)


class SubmittedModel(_Part):
    """``provenance.submission`` (``lookbench submit``): the Hub repo and commit the model is published at."""

    model, revision = _Key("model"), _Key("revision")


class Provenance(_Part):
    """A result's provenance, typed: ``raw`` is the mapping itself, read and never rewritten. Its parts (``dataset``,
    ``model``, ``submission``, ``settings``) and fields read the keys the engine writes; ``settings`` and ``need``
    raise ``KeyError`` on a key a result of the current format promises and lacks."""

    mode, queries, cutoff, distractors = _Key("mode"), _Key("queries", DEFAULT_QUERIES), _Key("cutoff"), _Key("distractors")
    subsets, chosen_subsets, index, precision = _Key("subsets"), _Key("chosen_subsets"), _Key("index"), _Key("precision")
    search, device, counts, intervals = _Key("search"), _Key("device"), _Key("counts"), _Key("intervals")
    wall_time_s, evaluated_at, version = _Key("wall_time_s"), _Key("evaluated_at"), _Key("lookbench_version")
    saved_predictions, text_queries = _Key("saved_predictions"), _Key("text_queries")

    def __init__(self, raw: dict):
        super().__init__(raw)
        self.dataset, self.model = Data(self.raw.get("dataset")), Model(self.raw.get("model"))
        submitted = SubmittedModel(self.raw.get("submission"))
        self.submission = submitted if submitted.described else None

    @classmethod
    def of(cls, result) -> "Provenance":
        """The provenance of a result's JSON (a ``ValueError`` when it has none)."""
        if not isinstance(result, dict) or not isinstance(result.get("provenance"), dict):
            raise ValueError("no provenance mapping")
        return cls(result["provenance"])

    @property
    def settings(self) -> Settings:
        """The settings recorded (``store.Settings.of``)."""
        return Settings.of(self.raw)

    @property
    def zero_shot(self) -> "ZeroShot":
        """Whether the model was trained on the data's source, as the result records it (``ZeroShot.read``)."""
        return ZeroShot.read(self.raw)

    @property
    def is_submission(self) -> bool:
        """Whether it names a submitted model at all (``lookbench submit`` adds ``submission``)."""
        return "submission" in self.raw

    @property
    def text_form(self) -> str | None:
        """The form of a text query's words (``None``: the queries are images)."""
        queries = self.queries
        return queries.removeprefix("text-") if isinstance(queries, str) and queries.startswith("text-") else None

    def submitted_as(self, model: str, revision: str) -> dict:
        """The provenance mapping as ``lookbench submit`` sends it: this one, its ``submission`` naming the Hub repo
        and commit the model is published at."""
        return {**self.raw, "submission": {"model": model, "revision": revision}}

    def saved(self) -> list:
        """The subsets whose rankings lie beside the JSON (as it says; ``[]`` for none)."""
        return self.saved_predictions or []

    def measured(self, placement: dict | None = None) -> "Measured":
        """What a leaderboard row was measured on, every value type-checked (a ``ValueError`` naming the field);
        ``placement`` (a verified submission's, recomputed from the data) places it instead of the file."""
        if not self.dataset.described or not self.model.described:
            raise ValueError("provenance.dataset and provenance.model must be mappings")
        data, given = (Data(placement), placement) if placement is not None else (self.dataset, self.raw)
        releases = data.releases or []
        if not isinstance(releases, list) or not all(isinstance(r, str) for r in releases):
            raise ValueError("provenance.dataset.releases is not a list of strings")
        # The engine records the data's name (its card's pretty_name) and key; results without them name their data only.
        name = _text(data.name or data.data, "provenance.dataset.name")
        key = data.key or data.revision
        if key is None:
            raise ValueError("the result records no data revision, so nothing is comparable with it")
        key = _text(key, "provenance.dataset.key")
        if not isinstance(given.get("distractors"), bool):
            raise ValueError("provenance.distractors is not true or false")
        return Measured(name, releases, key, _text(given.get("mode"), "provenance.mode"), given["distractors"],
                        _text(given.get("cutoff"), "provenance.cutoff", optional=True),
                        _text(given.get("queries", DEFAULT_QUERIES), "provenance.queries"))

    def shown_model(self) -> "ShownModel":
        """The model as a leaderboard row names it, every value type-checked: the submitted Hub id and commit when
        ``lookbench submit`` recorded them, else the evaluated name and revision. ``evaluated`` is the registered name
        a Hub copy of a registered model is an alias of (its registry facts are that model's), else the name."""
        model = self.model
        name = model.text("name", "provenance.model.name")
        evaluated = model.text("registered_as", "provenance.model.registered_as", optional=True) or name
        revision, hub_id = model.text("revision", "provenance.model.revision", optional=True), None
        if self.submission is not None and isinstance(self.submission.model, str):
            name = hub_id = self.submission.model
            revision = self.submission.text("revision", "provenance.submission.revision", optional=True)
        return ShownModel(name, evaluated, revision, hub_id,
                          model.text("training_cutoff", "provenance.model.training_cutoff", optional=True),
                          model.text("published_name", "provenance.model.published_name", optional=True))


@dataclass(frozen=True)
class Measured:
    """What a result was measured on, as a leaderboard groups rows (``Provenance.measured``)."""

    data: str
    releases: list
    key: str
    mode: str
    distractors: bool
    cutoff: str | None
    queries: str


@dataclass(frozen=True)
class ShownModel:
    """The model of a leaderboard row (``Provenance.shown_model``): its shown name and revision, the name it was
    evaluated under, the Hub id submitted, and what the board's filters read."""

    name: str
    evaluated: str
    revision: str | None
    hub_id: str | None
    training_cutoff: str | None
    published_name: str | None


@dataclass(frozen=True)
class ZeroShot:
    """Whether a score is zero-shot, as MTEB marks it: ``True`` when the model's declared training data shares no source
    with the evaluated data, ``False`` when it does (in-distribution), ``None`` when either is not declared; ``reason``
    names the sources. A result records it as ``zero_shot`` and ``zero_shot_reason`` (results written before then
    read as unknown)."""

    value: bool | None
    reason: str

    @classmethod
    def judge(cls, trained: dict | None, sources: list[str] | None) -> "ZeroShot":
        """``trained``: the model's training data, source -> splits (``ModelMeta.training_datasets``); ``sources``: the
        evaluated data's (``Data.sources``)."""
        if trained is None:
            return cls(None, "the model declares no training data")
        if sources is None:
            return cls(None, "the data's source is not recorded")
        shared = sorted(set(trained) & set(sources))
        if shared:
            return cls(False, "trained on " + ", ".join(f"{s} ({'+'.join(trained[s]) or 'all'})" for s in shared))
        return cls(True, f"trained on {', '.join(sorted(trained)) or 'no data'}; evaluated on {', '.join(sources)}")

    @classmethod
    def read(cls, raw: dict) -> "ZeroShot":
        """The claim a provenance mapping records; anything but true, false or null is unknown."""
        value, reason = raw.get("zero_shot"), raw.get("zero_shot_reason")
        if "zero_shot" not in raw:
            return cls(None, "not recorded (a result written before zero-shot was)")
        if value is not None and not isinstance(value, bool) or not isinstance(reason, str):
            return cls(None, "not true, false or null")
        return cls(value, clip(reason, 200))  # a result's file may hold any text: never a flood

    def to_json(self) -> dict:
        return {"zero_shot": self.value, "zero_shot_reason": self.reason}

    @property
    def word(self) -> str:
        """As a table shows it: yes, no or unknown."""
        return {True: "yes", False: "no"}.get(self.value, "unknown")


def _text(value, what: str, optional: bool = False):
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{what} is {type(value).__name__}, not a string")
    return value


def is_sealed(result: dict) -> bool:
    """A result made on a sealed release (the data's own provenance says so): it claims no score."""
    return isinstance(result.get("provenance"), dict) and Provenance(result["provenance"]).dataset.is_sealed


def named_data(dataset, allowed=None):
    """The data a result names (``provenance.dataset``, a mapping or its ``Data``), as ``--data`` takes it: ``None``
    for the embedded LookBench-Mini (rebuilt), a Hub dataset at the commit it recorded, or (only without ``allowed``) a
    local folder that is here. ``allowed``: the Hub dataset ids that may be loaded (the board's allow-list; ``None``:
    any). Other data is an ``EvaluationError`` — ``UnknownData`` when the allow-list keeps it out —, as data
    ``load_benchmark`` cannot load is: the submission is not at fault."""
    from lookbench.hub import looks_like_hub_id

    dataset = dataset if isinstance(dataset, Data) else Data(dataset)
    label, commit = dataset.data, dataset.commit
    if label == EMBEDDED_MINI:
        return None
    if isinstance(label, str) and isinstance(commit, str) and looks_like_hub_id(label):
        repo = label.partition("@")[0]
        if allowed is not None and repo not in allowed:
            raise UnknownData(f"unknown data {shorten(repo, 60)}: the board judges only {', '.join(sorted(allowed))} "
                              "and the embedded LookBench-Mini")
        return f"{repo}@{commit}"
    if allowed is not None:
        raise UnknownData(f"unknown data {shorten(label, 60)}: the board judges only its own dataset repos")
    if isinstance(label, str) and Path(label).is_dir():
        return label
    raise EvaluationError(f"the result's data {shorten(label, 300)} is neither the embedded LookBench-Mini, a Hub "
                          "dataset at a recorded commit, nor a folder here: give --data")


def result_parts(result, name: str) -> tuple[Provenance, dict, Settings]:
    """The provenance, the subsets' blocks and the settings of a result, or a ValueError saying what is malformed
    (a block that is not a LookBench subset is refused)."""
    from lookbench.schema import TEST_SUBSETS

    if not isinstance(result, dict) or not isinstance(result.get("provenance"), dict):
        raise ValueError(f"{name} is not a LookBench result: it has no provenance")
    provenance = Provenance(result["provenance"])
    if not provenance.dataset.described:
        raise ValueError(f"{name}: provenance.dataset is {shorten(provenance.raw.get('dataset'))}, not the data's "
                         "description")
    blocks = {key: block for key, block in result.items() if key not in ("overall", "provenance")}
    bad = next((key for key, block in blocks.items() if not isinstance(block, dict)), None)
    if bad is not None or not blocks:
        raise ValueError(f"{name}: {shorten(bad) if bad is not None else 'no subset'} is not a block of scores")
    foreign = next((key for key in blocks if key not in TEST_SUBSETS), None)
    if foreign is not None:
        raise ValueError(f"{name}: {shorten(foreign)} is not a LookBench subset ({', '.join(TEST_SUBSETS)})")
    try:
        subsets = provenance.subsets
        if not isinstance(subsets, list) or not all(isinstance(s, str) for s in subsets):
            raise TypeError(f"subsets is {shorten(subsets)}, not a list of names")
        settings = provenance.settings
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{name}: the provenance's settings cannot be read ({shorten(str(err), 120)})") from None
    if settings.mode not in MODES:
        raise ValueError(f"{name}: provenance.mode is {shorten(settings.mode)}, not one of {', '.join(MODES)}")
    kinds = ["image", *(f"text-{form}" for form in TEXT_FORMS)]
    if settings.queries not in kinds:
        raise ValueError(f"{name}: provenance.queries is {shorten(settings.queries)}, not one of {', '.join(kinds)}")
    return provenance, blocks, settings
