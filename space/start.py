"""How the demo starts: ``lookbench demo`` and, from the assets ``lookbench stage`` ships, the Hub Space's
``python app.py``. The first gallery is prepared (once) and served; what can wait — the first gallery's other models,
the real photos — is prepared in the background once the app listens (``lookbench.space.preparing``), and a waiting
room (``lookbench.space.waiting``) shows the start's progress until the app takes its address over.
docs/architecture.md §5.
"""
from __future__ import annotations

from lookbench.dataset_builder.catalog import SOURCES
from lookbench.progress import stage_bar
from lookbench.space.assets import (DEFAULT_MODELS, galleries, open_assets, open_galleries, photo_gallery,
                                    served_at_once, shipped_galleries)


def start(make, host=None, port=None, data=None, photos=None, assets_dir=None, shipped=None, models=DEFAULT_MODELS,
          room=None, **launch_kwargs):
    """Prepare (once) and load the first gallery, make the app of it (``make(served, encoders)``: the ``SpaceApp``,
    ``lookbench.space.app.serve``'s) and serve it; ``serve``'s arguments. ``room``: the ``WaitingRoom`` already
    listening on the address, showing this start's progress until the app takes its port over. The real photos
    (``photos``) are prepared in the background once the first gallery is served: the page answers in the meantime
    and shows their progress."""
    from lookbench.encoders.registry import load_encoder

    specs = shipped_galleries(shipped) if shipped else galleries(data, None, assets_dir)
    try:
        if room is not None:
            room.says("Loading the models and the first gallery (a first start prepares its assets once: minutes)")
        encoders = {name: load_encoder(name) for name in models}
        first = models if shipped else served_at_once(specs[0][1], specs[0][0], models, encoders)
        served, _ = open_galleries(specs, first, bars=room.bars if room is not None else stage_bar, encoders=encoders)
        if room is not None:
            room.says("Loading the app")
        app = make(served, encoders)
    finally:
        if room is not None:
            room.close()
    if room is not None:
        host, port = room.host, room.port
        launch_kwargs["announced"] = True
    steps = []  # prepared in the background once the app listens: the first gallery's other models, the real photos
    if len(first) < len(models):
        folder, data_of = specs[0]
        steps.append((f"{served[0].name} with {', '.join(models[len(first):])}",
                      lambda bars: open_assets(data_of, folder, models, encoders=encoders, bars=bars)))
    if photos and not shipped:
        def photo_job(bars):
            folder, release = photo_gallery(photos, assets_dir)
            return open_assets(release, folder, app.models, encoders=app.encoders, bars=bars)

        steps.append((SOURCES["fashion-mnist"].pretty_name, photo_job))
    later = app.prepare_later(*steps[0], *steps[1:]) if steps else None
    block = not launch_kwargs.pop("prevent_thread_lock", False)
    demo = app.launch(host=host, port=port, prevent_thread_lock=True, **launch_kwargs)
    if later is not None:
        later.start()
    if block:
        demo.block_thread()
    return demo
