"""LookBench inside MTEB (MIEB): the subsets as an mteb image-to-image retrieval task, any lookbench encoder as an
mteb model, and lookbench results in mteb's ``TaskResult`` format. Needs the extra: ``pip install torch==2.13.0
-e '.[mteb]'`` (plain mteb, not ``mteb[image]``, whose torchvision breaks beside the CPU torch). docs/architecture.md §5.

    import mteb
    from lookbench.mteb import as_mteb_model, lookbench_tasks
    results = mteb.evaluate(as_mteb_model("raw-pixels"), lookbench_tasks())
"""
try:
    import mteb  # noqa: F401  (the absolute package, not this one)
except ImportError as err:  # pragma: no cover - depends on the installation
    raise ModuleNotFoundError("lookbench.mteb needs mteb: pip install torch==2.13.0 'lookbench[mteb]'") from err

from lookbench.mteb.export import export_result, to_task_result
from lookbench.mteb.model import LookBenchMtebModel, as_mteb_model
from lookbench.mteb.tasks import LookBenchRetrieval, lookbench_tasks, task_name

__all__ = ["LookBenchMtebModel", "LookBenchRetrieval", "as_mteb_model", "export_result", "lookbench_tasks",
           "task_name", "to_task_result"]
