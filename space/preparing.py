"""A gallery prepared in the background while the demo serves (the real photos, the first gallery's other models):
the thread that prepares each in turn and adds it to the app, and what the page says meanwhile — its stage and
count, or why it failed. docs/architecture.md §5.
"""
from __future__ import annotations

import logging
import threading

from lookbench.terminal import markdown_safe
from lookbench.progress import stage_bar, stage_note

log = logging.getLogger("lookbench.space")


class Preparing:
    """One gallery being prepared: its ``name``, the stage bar it counts on now, or the ``error`` that ended it."""

    def __init__(self, name: str):
        self.name, self.bar, self.error = name, None, None

    def bars(self, desc: str, **options):
        """A stage bar (``lookbench.progress.stage_bar``'s signature) whose count the page shows."""
        self.bar = bar = stage_bar(desc, **options)
        return bar

    def note(self) -> str:
        if self.error:
            return f"⚠️ The gallery {self.name} could not be prepared: {markdown_safe(self.error[:300])}"
        return stage_note(f"Preparing the gallery **{self.name}** in the background", self.bar) + \
            ". It joins the choices when ready."


def later(app, steps) -> threading.Thread:
    """The thread (to start once the app listens: its work would starve the launch) that runs each ``(name, job)``
    of ``steps`` in turn — ``job(bars)`` returns the ``SpaceAssets`` of gallery ``name`` — and adds it to ``app``
    (``SpaceApp.add``), ``app.preparing`` saying what it is doing. A failure is shown and ends the thread; the app
    keeps serving."""
    app.preparing = Preparing(steps[0][0])

    def work():
        for name, job in steps:
            app.preparing = state = Preparing(name)
            try:
                served = set(app.galleries)
                added = app.add(job(state.bars))
            except Exception as err:
                log.exception("preparing %s failed", name)
                state.error = f"{type(err).__name__}: {err}"
                return
            print(f"Ready: {added} with {', '.join(app.models)}" if added in served
                  else f"Ready: {added} added to the galleries", flush=True)
        app.preparing = None

    return threading.Thread(target=work, name=f"prepare {steps[0][0]}", daemon=True)
