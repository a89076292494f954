"""`pip install -e .` whose `import lookbench` is the library even beside a folder named `lookbench`.

setuptools' editable install of a `package_dir` layout appends its finder to `sys.meta_path`, after Python's
PathFinder (setuptools issue #3557). So where a dataset clone `lookbench/` (no `__init__.py`) sits in the working
directory — exactly where `load_dataset("lookbench", ...)` is run — PathFinder returns that folder as a namespace
package and the library is never reached. This build step keeps setuptools' finder and only has its `.pth` line
move it to the front of `sys.meta_path` (setuptools 84 still appends it; without this step
tests/test_packaging.py::test_import_lookbench_is_the_library_beside_a_dataset_folder_named_lookbench fails).
Used by setup.cfg's `cmdclass`; not installed. docs/architecture.md §2.
"""
from setuptools.command.editable_wheel import editable_wheel

try:  # setuptools-private: if a release renames it, install as setuptools does (tests/test_packaging.py then fails)
    from setuptools.command.editable_wheel import _TopLevelFinder
except ImportError:  # pragma: no cover
    _TopLevelFinder = None


class _FinderFirst(_TopLevelFinder or object):
    def get_implementation(self):
        for name, content in super().get_implementation():
            if name.endswith(".pth"):
                finder = content.decode().split(";")[0].removeprefix("import ").strip()
                content += (f"; import sys; sys.meta_path.remove({finder}._EditableFinder); "
                            f"sys.meta_path.insert(0, {finder}._EditableFinder)").encode()
            yield name, content


class EditableWheel(editable_wheel):
    def _select_strategy(self, name, tag, build_lib):
        strategy = super()._select_strategy(name, tag, build_lib)
        if _TopLevelFinder is None or type(strategy) is not _TopLevelFinder:
            return strategy
        return _FinderFirst(strategy.dist, strategy.name)
