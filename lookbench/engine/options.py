"""A run's options checked before anything is loaded, each parsed once into the typed value the stages receive
(docs/architecture.md §8, stage 0): a typo fails in a second, not after encoding."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lookbench.encoders.registry import check_model
from lookbench.errors import EvaluationError
from lookbench.files import new_sibling
from lookbench.filtering import Cutoff
from lookbench.settings import (DEFAULT_INDEX, DEFAULT_PRECISION, DEFAULT_QUERIES, DEFAULT_TEXT_FORM, INDEXES, PRECISIONS,
                                Modes, QueryKind)


def _check_folder(path, what: str) -> None:
    """A folder that exists or can be made: not a file, and its nearest existing ancestor a writable folder."""
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise EvaluationError(f"{what} {path} exists and is not a folder")
    parent = path if path.exists() else next(p for p in path.parents if p.exists())
    if not parent.is_dir():
        raise EvaluationError(f"{what} {path} cannot be created: {parent} is not a writable folder")
    try:  # a real write, not os.access: a read-only mount or an immutable folder refuses even root
        new_sibling(parent / ".lookbench-write-check", "probe", folder=False).unlink()
    except OSError as err:
        where = "" if parent == path else f": {parent} is not a writable folder"
        raise EvaluationError(f"{what} {path} cannot be written{where} ({err.strerror})") from None


@dataclass(frozen=True)
class Options:
    """A run's settings, each parsed once into the typed value the stages receive: the ``modes`` its rankings are
    judged in (headline first), what a query is (``kind``), the ``cutoff`` (``None``: every query; with
    ``cutoff_from_model`` it is read from the model's declared date once the model is loaded) and the ``model``
    asked for (text queries default to the text model)."""

    modes: Modes
    kind: QueryKind
    cutoff: Cutoff | None
    cutoff_from_model: bool
    model: object


def check_options(*, mode=None, index=DEFAULT_INDEX, precision=DEFAULT_PRECISION, batch_size=None,
                  workers=None, cutoff=None, cache_dir=None, output_dir=None, results_dir=None,
                  save_predictions=False, model=None, queries=DEFAULT_QUERIES, text_form=DEFAULT_TEXT_FORM) -> Options:
    """Every option checked before anything is loaded, so a typo fails in a second, not after encoding; returns them
    parsed (``Options``)."""
    try:
        kind = QueryKind.of(queries, text_form)
        modes = Modes.of(mode)
        parsed = None if cutoff is None or cutoff == "model" else Cutoff.of(cutoff)
    except (ValueError, TypeError) as err:
        raise EvaluationError(str(err)) from None
    if model is None and kind.text:
        from lookbench.encoders.entries import DEFAULT_TEXT_MODEL

        model = DEFAULT_TEXT_MODEL
    check_model(model)
    for name, value, choices in (("index", index, INDEXES), ("precision", precision, PRECISIONS)):
        if value not in choices:
            raise EvaluationError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    for name, value in (("batch_size", batch_size), ("workers", workers)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise EvaluationError(f"{name} must be an integer of at least 1, got {value!r}")
    for path, what in ((cache_dir, "cache folder"), (output_dir, "output folder"), (results_dir, "results store")):
        if path is not None:
            _check_folder(path, what)
    if save_predictions and output_dir is None and results_dir is None:
        raise EvaluationError("save_predictions (--save-predictions) needs a place to write them: a results store "
                              "(not --no-save) or an output folder (--output)")
    return Options(modes, kind, parsed, cutoff == "model", model)
