"""What the board's filters ask of a row's model — open weights, size (learnt parameters), declared training cutoff —
and the filters themselves. A fact comes from the encoder registry (the published and registered models) or from a
submission's own result (the Hub repo it names, the cutoff its card declares); what neither says is unknown, and a
filter that asks for it hides the row rather than guess.
"""
from __future__ import annotations

from dataclasses import dataclass

from lookbench.results.trust import SCORED_SEALED

ANY_SIZE = "any size"
SIZES = {ANY_SIZE: None, "≤ 100M": 100_000_000, "≤ 500M": 500_000_000, "≤ 1B": 1_000_000_000, "≤ 10B": 10_000_000_000}
FILTERS_NOTE = ("Filters hide rows; rank and group stay those of the full table. A model whose openness, size or training "
                "cutoff is not declared (by the model registry or the submission) is hidden by a filter that asks for it, "
                f"except that a row {SCORED_SEALED} passes the training-cutoff filter: it was scored before its labels "
                "were public, so it is clean whatever the model saw.")


@dataclass(frozen=True)
class Facts:
    """``None``: not declared."""

    open_weights: bool | None = None
    parameters: int | None = None
    training_cutoff: str | None = None


def registered(name: str) -> Facts | None:
    """The registry's facts of a registered model or published row name (``None``: not registered). Weights are open
    when the entry loads them from the Hub, a package or a file; its size is declared or counted from the weights."""
    from lookbench.encoders.registry import BY_PUBLISHED_NAME, REGISTRY

    meta = REGISTRY.get(name) or BY_PUBLISHED_NAME.get(name)
    if meta is None:
        return None
    loads = bool(meta.hub_id or meta.package or meta.weights is not None)
    return Facts(True if loads else None, meta.n_parameters or None, meta.training_cutoff)


def of_entry(entry) -> Facts:
    """The facts of a submitted result's row (``lookbench.leaderboard.load.Entry``): its model's registry facts when
    the evaluated model is registered, the Hub repo the submission names (its weights are published there), and the
    training cutoff the model declared (``provenance.model.training_cutoff``)."""
    from lookbench.hub import looks_like_hub_id

    extra = entry.extra
    known = (registered(extra["evaluated"]) if isinstance(extra.get("evaluated"), str) else None) or Facts()
    hub = extra.get("submitted")
    return Facts(True if isinstance(hub, str) and looks_like_hub_id(hub) else known.open_weights, known.parameters,
                 extra.get("training_cutoff") or known.training_cutoff)


def keeps(facts: Facts | None, open_weights: bool, size: str, trained_before: str | None) -> bool:
    """Whether a row passes the filters: open weights only, at most ``SIZES[size]`` parameters, a declared training
    cutoff on or before ``trained_before`` (a date, ``filtering.to_utc`` reads it)."""
    from lookbench.filtering import to_utc

    facts = facts or Facts()
    if open_weights and facts.open_weights is not True:
        return False
    limit = SIZES[size]
    if limit is not None and (facts.parameters is None or facts.parameters > limit):
        return False
    if trained_before:
        try:
            return facts.training_cutoff is not None and to_utc(facts.training_cutoff) <= to_utc(trained_before)
        except ValueError:
            return False  # a declared cutoff that is no date cannot be compared
    return True
