"""`compare`'s interval and p-value come from two methods for a hit rate (bootstrap, exact McNemar): where they disagree
the table marks the p and says which decides and why (issue 56 item 4); nDCG's come from one bootstrap."""
from __future__ import annotations

from lookbench.results.comparison import METHODS_NOTE, disagree, render


def row(ci95, p, first="subset", name="overall"):
    return {first: name, "a": 50.0, "b": 40.0, "diff": 10.0, "ci95": ci95, "p": p, "p_holm": p, "n_queries": 40,
            "a_only": 9, "b_only": 3}


def test_an_interval_excluding_zero_beside_p_above_005_is_marked_and_explained(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert disagree(row([1.0, 19.0], 0.062)) and disagree(row([-1.0, 19.0], 0.01))
    assert not disagree(row([1.0, 19.0], 0.01)) and not disagree(row([-1.0, 19.0], 0.3))
    table = render([row([1.0, 19.0], 0.062, "attribute", "colour")], "table", metric="attributes")
    flat = " ".join(table.split())
    assert "0.062*" in table and " ".join(METHODS_NOTE.split()) in flat
    assert "bootstrap over outfits" in METHODS_NOTE and "exact McNemar" in METHODS_NOTE and "Decide by p" in METHODS_NOTE
    agreeing = render([row([1.0, 19.0], 0.01), row([-1.0, 19.0], 0.3, name="AIGen-Studio")], "table", metric="fine")
    assert "*" not in agreeing and "Decide by p" not in agreeing
    ndcg = render([row([1.0, 19.0], 0.062)], "table", metric="ndcg")  # one bootstrap gives both: never marked
    assert "0.062*" not in ndcg and "Decide by p" not in ndcg
