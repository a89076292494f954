"""The Hub's own leaderboard of the dataset read back (``HfApi.get_dataset_leaderboard``): each community row whose
notes say what it was measured on (``hub_results.read_notes``, as ``lookbench export --format eval-results`` writes
them) becomes an entry of its comparable group, marked ``trust.HUB_COMMUNITY`` — ranked among the not-checked rows,
never merged into a row LookBench checked; a row whose model also has a LookBench submission names that row.

The answer comes from outside: a request that fails, or an answer that is not a list of rows, is one line; a row
that cannot be placed is skipped with its reason, never a stop (docs/results-and-leaderboard.md).
"""
from __future__ import annotations

import math

from lookbench.leaderboard.load import Entry, Group
from lookbench.results.hub_results import OVERALL, read_notes, task_id
from lookbench.results.trust import HUB_COMMUNITY
from lookbench.schema import TEST_SUBSETS
from lookbench.settings import DEFAULT_QUERIES, TEXT_FORMS
from lookbench.terminal import terminal_safe

ORIGIN = "hub:"  # an entry's origin: "hub:<dataset id>"
_FIELD = ("fine_recall", "@1")


def _tasks(modes) -> dict[str, tuple[str | None, str, str]]:
    """Every task id LookBench writes -> (subset or None, mode, query kind)."""
    kinds = (DEFAULT_QUERIES, *(f"text-{form}" for form in TEXT_FORMS))
    return {task_id(s, mode, q): (s, mode, q) for mode in modes for q in kinds for s in (None, *TEST_SUBSETS)}


def read_leaderboard(dataset_id: str) -> list:
    """The Hub's leaderboard rows of ``dataset_id`` (huggingface_hub's ``DatasetLeaderboardEntry``); a failed request
    or a malformed answer is a one-line ValueError."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    from lookbench.hub import error_line, transport_errors

    try:
        rows = HfApi().get_dataset_leaderboard(dataset_id)
    except OfflineModeIsEnabled:
        raise ValueError(f"cannot read the Hub's leaderboard of {dataset_id}: HF_HUB_OFFLINE is set") from None
    except (HfHubHTTPError, *transport_errors()) as err:
        raise ValueError(f"cannot read the Hub's leaderboard of {dataset_id}: {error_line(err)}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as err:  # JSON that is not a list of rows
        raise ValueError(f"the Hub's leaderboard of {dataset_id} is not a list of rows ({type(err).__name__}: "
                         f"{terminal_safe(str(err))[:80]})") from None
    return rows


def hub_entries(dataset_id: str, known: list[Entry], rows=None) -> tuple[list[Entry], list[str]]:
    """The rows of the Hub's leaderboard of ``dataset_id`` (``rows``: as ``read_leaderboard`` read them, else read
    now) as entries, one per model and comparable group, and one line per row not shown and why; ``known``: the rows
    already loaded, whose submitted models a Hub row links to."""
    from lookbench.settings import MODES

    tasks, entries, skipped, merged = _tasks(MODES), [], [], {}
    submitted = {e.extra.get("submitted"): e.model for e in known if e.extra.get("submitted")}
    for row in read_leaderboard(dataset_id) if rows is None else rows:
        model = terminal_safe(str(getattr(row, "model_id", "")))[:96]
        read = read_notes(getattr(row, "notes", None))
        task = getattr(row, "task_id", None) or getattr(row, "taskId", None) or (read[0] if read else None)
        value = getattr(row, "value", None)
        if read is None:
            skipped.append(f"Hub row {model}: its notes do not say what it was measured on (not written by lookbench "
                           "export), so it has no comparable group")
            continue
        if task not in tasks:
            skipped.append(f"Hub row {model}: task {terminal_safe(str(task))[:80]} is not a LookBench task")
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not 0 <= value <= 100:
            skipped.append(f"Hub row {model}: its value {terminal_safe(repr(value))[:40]} is not a percentage")
            continue
        subset, mode, queries = tasks[task]
        measured = read[1]
        if (mode, queries) != (measured.mode, measured.queries):
            skipped.append(f"Hub row {model}: task {task} and its notes disagree on the mode or query kind")
            continue
        group = Group(f"{dataset_id} on the Hub, data {terminal_safe(measured.data)[:22]}", measured.data, mode,
                      measured.distractors, measured.cutoff, queries)
        entry = merged.get((model, group))
        if entry is None:  # one row per model and group: its overall and subsets' scores together
            twin = submitted.get(model)
            label = f"{model} (Hub" + (", verified there" if getattr(row, "verified", False) is True else "") + (
                f"; LookBench row {twin})" if twin else ")")
            extra = {"training_cutoff": None, "published_name": None, "evaluated": model, "submitted": None,
                     "hub_model": model, "submission": twin, "pull_request": getattr(row, "pull_request", None)}
            entry = merged[(model, group)] = Entry(label, group, {}, f"{ORIGIN}{dataset_id}", extra, HUB_COMMUNITY)
            entries.append(entry)
        score = {_FIELD[0]: {_FIELD[1]: float(value)}}
        if subset is None:
            entry.overall = score
        else:
            entry.subsets[subset] = score
    return entries, skipped


def hub_origin(block: list[Entry]) -> str | None:
    """What a section says of its Hub rows (None: it has none)."""
    ids = sorted({e.origin[len(ORIGIN):] for e in block if e.origin.startswith(ORIGIN)})
    return f"the Hub's leaderboard of {', '.join(ids)} (community results, {OVERALL} or one subset's Fine R@1, not " \
           "checked)" if ids else None
