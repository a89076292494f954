"""One citation: ``lookbench.citation.BIBTEX``. Cards rendered from templates take it from there; the copies that
must stay literal (the metric's script and card load alone from the Hub; the committed READMEs) are this entry exactly."""
from __future__ import annotations

from pathlib import Path

from lookbench.citation import BIBTEX, PAPER_URL

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("lookbench", "dataset_builder", "metric", "models", "space", "upload_scripts", "benchmarks", "docs", "tests")
ENTRY = BIBTEX.splitlines()[0]  # "@article{gao2026lookbench,"
# Where the entry may be written out, and must be: the source and its literal copies.
COPIES = {
    "lookbench/citation.py",
    "metric/fine_recall/fine_recall.py",
    "metric/fine_recall/README.md",
    "models/gr_lite/gr-lite-mini/README.md",
    "models/gr_lite_text/gr-lite-mini-text/README.md",
    "space/README.md",
    "space/board/README.md",
    "README.md",
}


def _holders() -> dict[str, str]:
    files = [ROOT / "README.md"] + [p for folder in FOLDERS for p in (ROOT / folder).rglob("*")
                                    if p.suffix in (".py", ".md", ".bib", ".txt") and p.is_file()]
    texts = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in files}
    return {name: text for name, text in texts.items() if ENTRY in text and name != "tests/test_citation.py"}


def test_the_entry_is_written_out_only_in_the_source_and_its_literal_copies():
    assert set(_holders()) == COPIES


def test_every_copy_is_the_source_exactly():
    for name, text in _holders().items():
        for copy in text.split(ENTRY)[1:]:
            assert (ENTRY + copy).startswith(BIBTEX), name


def test_the_entry_cites_the_paper_it_links():
    assert PAPER_URL.rsplit("/", 1)[1] in BIBTEX
