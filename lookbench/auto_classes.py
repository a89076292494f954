"""GR-Lite joins transformers' Auto classes when they are first used, not when lookbench is imported.

``from transformers import AutoModel`` alone costs about twice ``import torch, transformers`` (it pulls in the
modeling stack), so registering eagerly would make every user of the metric, the builder and the CLI pay for it.
transformers keeps no registry by name for code outside its own package, so the registration waits on an import
hook instead: once ``transformers.models.auto.configuration_auto`` (which AutoConfig, AutoModel and
AutoImageProcessor all load) has been imported and the outermost transformers (or GR-Lite) import around it has
finished — so no module is half-initialised — ``register_auto_classes`` runs, once. docs/architecture.md §5.
"""
from __future__ import annotations

import importlib.abc
import sys

TRIGGER = "transformers.models.auto.configuration_auto"
_WATCHED = ("transformers", "lookbench.models")


class _Loader(importlib.abc.Loader):
    """The original loader, then a registration attempt once no watched module is executing any more."""

    def __init__(self, loader, hook):
        self.loader, self.hook = loader, hook

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.hook.depth += 1
        try:
            self.loader.exec_module(module)
        finally:
            self.hook.depth -= 1
        if self.hook.depth == 0:
            self.hook.maybe_register()

    def __getattr__(self, name):  # get_resource_reader, is_package, ... of the wrapped loader
        return getattr(self.loader, name)


class _Hook(importlib.abc.MetaPathFinder):
    """Wraps the loaders of transformers' and GR-Lite's modules; removes itself after registering."""

    def __init__(self):
        self.depth = 0
        self.busy = False

    def find_spec(self, fullname, path, target=None):
        if self.busy or not fullname.startswith(_WATCHED):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, self)
                return spec
        return None

    def maybe_register(self):
        if self.busy or TRIGGER not in sys.modules:
            return
        self.busy = True  # GR-Lite's own imports below load more transformers modules: no re-entry
        try:
            from lookbench.models.gr_lite import register_auto_classes

            register_auto_classes()
        finally:
            if self in sys.meta_path:
                sys.meta_path.remove(self)


def install() -> None:
    """Register now if transformers' Auto classes are already loaded, else when they first are (idempotent)."""
    if any(isinstance(finder, _Hook) for finder in sys.meta_path):
        return
    hook = _Hook()
    sys.meta_path.insert(0, hook)
    hook.maybe_register()
