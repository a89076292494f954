"""How to cite LookBench: the one BibTeX entry and the paper's address.

Cards rendered from templates (datasets, GR-Lite, the mteb task) take them from here. The copies that must stay
literal — the metric's script and card, which load alone from the Hub, and the committed READMEs — are checked
against ``BIBTEX`` by tests/test_citation.py.
"""

PAPER_URL = "https://arxiv.org/abs/2601.14706"

BIBTEX = """\
@article{gao2026lookbench,
  title   = {LookBench: A Live and Holistic Open Benchmark for Fashion Image Retrieval},
  author  = {Gao, Chao and Xue, Siqiao and Peng, Yimin and Fu, Jiwen and Gu, Tingyi and Li, Shanshan and Zhou, Fan},
  journal = {arXiv preprint arXiv:2601.14706},
  year    = {2026}
}
"""
