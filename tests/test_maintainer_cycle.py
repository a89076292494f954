"""Issue 54's scripted cycle, offline, with the real commands and no file edited by hand: a crawl with hidden truth →
`annotate` with two proposers layered → three reviewers invited by `review --invite`, reviewing through the served
app with their tokens (an uninvited call refused, nobody undoes another's decision), one of them careless and caught
by gold items made from the truth → the one dispute settled by an invited adjudicator in the adjudication app →
`audit` → `build --append --seal` without `--skip-invalid` → `stage --only dataset,labels`. The staged labels hold the
adjudicator's value for the disputed item and the truth for every other."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lookbench import cli
from lookbench.dataset_builder.decisions import ADJUDICATE, DecisionStore
from lookbench.dataset_builder.taxonomy import load as load_taxonomy

from tests.helpers.raw_release import write_release
from tests.helpers.review_app import answer, review_all, serve, shown_key  # noqa: F401  (serve: a fixture)
from tests.test_release_cycle import EARLY, built_rows, truth_by_key

PROPOSERS = ["--proposer", "metadata", "--proposer", "zero-shot:gr-lite-mini-text"]
GOLD_ITEMS = 6


def write_gold(raw: Path, truth: dict, taxonomy, folder: Path) -> dict[str, dict]:
    """A gold file made from the truth of the crawl's first items (their pictures copied beside it, under new item ids),
    whose proposals are the truth with the main attribute wrong — what a reviewer accepting without looking keeps.
    The truth by gold item id."""
    rows, known = [], {}
    by_key = {}
    for path in sorted(raw.glob("*/*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            by_key[f"{path.parent.name}/{path.stem}/{row['item_id']}"] = (path.parent, row)
    for index, key in enumerate(sorted(truth)[:GOLD_ITEMS]):
        labels, (config, row) = truth[key], by_key[key]
        entry = taxonomy.categories[labels["category"]]
        wrong = next(v for v in entry.attributes[entry.main_attribute] if v != labels["attributes"][entry.main_attribute])
        proposed = {n: {"value": wrong if n == entry.main_attribute else labels["attributes"].get(n, taxonomy.not_applicable),
                        "confidence": 0.97} for n in entry.attributes}
        item_id = f"gold-{index:02d}"
        image = folder / "images" / f"{item_id}.png"
        image.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(config / row["image"], image)
        rows.append({"item_id": item_id, "image": f"images/{item_id}.png", "timestamp": row["timestamp"],
                     "title": row.get("title", ""), "proposer": row["proposer"],
                     "proposals": {"category": {"value": labels["category"], "confidence": 0.97}, "attributes": proposed},
                     "category": labels["category"],
                     "attributes": [{"name": n, "value": v} for n, v in labels["attributes"].items()
                                    if v != taxonomy.not_applicable]})
        known[item_id] = labels
    (folder / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return known


def invite(raw: Path, capsys, *argv) -> dict[str, str]:
    """`lookbench review RAW --invite …` run as a maintainer runs it: each printed link's token by name."""
    capsys.readouterr()
    assert cli.main(["review", str(raw), *argv]) == 0
    printed = capsys.readouterr().out
    return {line.split(":", 1)[0].split(" (")[0]: line.rsplit("token=", 1)[1].strip()
            for line in printed.splitlines() if "token=" in line}


def careless(client, truth: dict, taxonomy, count: int) -> list[str]:
    """``count`` items accepted as the page shows them, proposals and all (a field left unproposed is filled from the
    truth, as the page would refuse it empty); the keys."""
    seen = []
    view = client.predict(api_name="/begin")
    while len(seen) < count and (key := shown_key(view)) is not None:
        right = answer(truth[key], taxonomy)
        shown = [view[4]["value"], *(slot.get("value") for slot in view[5:5 + len(right) - 1])]
        form = right if shown[0] != right[0] else [s if s is not None else r for s, r in zip(shown, right)]
        view = client.predict(*form, api_name="/accept")
        seen.append(key)
    return seen


@pytest.mark.slow
def test_a_crawl_to_a_sealed_staged_release_with_named_reviewers_gold_and_a_settled_dispute(tmp_path, serve, capsys):
    out, raw, data, labels, hub = (tmp_path / "fresh", tmp_path / "raw", tmp_path / "data" / "lookbench",
                                   tmp_path / "labels", tmp_path / "HUB")
    crawl = subprocess.run([sys.executable, "-m", "lookbench.dataset_builder.crawl", "--source", "mini", "--out", str(out),
                            "--scale", "0.2", "--limit", "2"], capture_output=True, text=True, timeout=600)
    assert crawl.returncode == 0, crawl.stderr
    truth = truth_by_key(out)
    assert cli.main(["annotate", "--input", str(out / "crawl"), "--taxonomy", str(out / "taxonomy.json"), *PROPOSERS,
                     "--out", str(raw), "--quiet"]) == 0
    taxonomy = load_taxonomy(raw / "taxonomy.json")
    first = json.loads((raw / "RealStudioFlat" / "query.jsonl").read_text().splitlines()[0])
    assert {e.get("source") for e in first["proposals"]["attributes"].values()} >= {"metadata", "zero-shot:gr-lite-mini-text"}
    gold = write_gold(raw, truth, taxonomy, tmp_path / "gold")

    # reviewers by invitation, through the real command; an adjudicator among them
    tokens = invite(raw, capsys, "--invite", "alice", "--invite", "bob", "--invite", "carol")
    tokens |= invite(raw, capsys, "--invite", "dan", "--adjudicator")
    assert sorted(tokens) == ["alice", "bob", "carol", "dan"]
    served = serve(raw, "--overlap", "2", "--shared", "4", "--gold", str(tmp_path / "gold" / "gold.jsonl"),
                   "--gold-rate", "0.5")
    plan = json.loads((raw / "reviews" / "plan.json").read_text())
    prefix = plan["gold"]["prefix"]
    known = truth | {f"{prefix}/{item_id}": labels for item_id, labels in gold.items()}
    with pytest.raises(Exception, match="no reviewer token"):
        served.client().predict(api_name="/begin")  # an uninvited call
    alice, bob, carol = (served.client(tokens[name]) for name in ("alice", "bob", "carol"))

    # carol accepts what she is shown: wrong on both gold items of her first four places, so flagged
    carols = careless(carol, known, taxonomy, 4)
    assert len([k for k in carols if k.startswith(f"{prefix}/gold-")]) == 2
    store = DecisionStore(raw)
    before = store.events("carol")
    with pytest.raises(Exception, match="alice has nothing to undo"):
        alice.predict(api_name="/undo")  # alice has decided nothing: carol's decisions are not hers to undo
    assert store.events("carol") == before

    # alice and bob review everything; bob disagrees with alice on one shared item's main attribute
    disputed = sorted(k for k in plan["shared"])[0]
    entry = taxonomy.categories[truth[disputed]["category"]]
    value = next(v for v in entry.attributes[entry.main_attribute] if v != truth[disputed]["attributes"][entry.main_attribute])
    bobs = json.loads(json.dumps(known))
    bobs[disputed]["attributes"][entry.main_attribute] = value
    taken = {"alice": [], "bob": []}
    review_all(alice, known, taken["alice"], taxonomy)
    review_all(bob, bobs, taken["bob"], taxonomy)
    review_all(alice, known, taken["alice"], taxonomy)  # the item bob disputes comes back to alice once: she keeps hers
    assert set(truth) <= set(taken["alice"]) | set(taken["bob"])

    # the adjudication app lets in the invited adjudicator only; dan sides with bob
    adjudication = serve(raw, "--adjudicate")
    with pytest.raises(Exception, match="alice is not an adjudicator"):
        adjudication.client(tokens["alice"]).predict(api_name="/begin")
    dan = adjudication.client(tokens["dan"])
    view = dan.predict(api_name="/begin")
    assert shown_key(view) == disputed and "| alice | bob |" in view[0]
    view = dan.predict(*answer(bobs[disputed], taxonomy), api_name="/accept")
    assert "Settled" in view[-1] and shown_key(view) is None
    assert [(e.action, e.item) for e in store.events("dan")] == [(ADJUDICATE, disputed)]

    # audit: the dispute settled by dan, carol flagged by gold
    capsys.readouterr()
    assert cli.main(["audit", str(raw), "--json", str(tmp_path / "audit.json")]) == 0
    report = json.loads((tmp_path / "audit.json").read_text())
    assert report["counts"]["disputed"] == 0 and report["counts"]["settled"] == 1
    assert report["counts"]["settled_by"] == {"dan": 1} and report["counts"]["reviewed"] == len(truth)
    assert report["gold"]["reviewers"]["carol"]["flagged"] is True
    assert report["gold"]["reviewers"]["carol"]["items"]["hits"] == 0
    assert not report["gold"]["reviewers"]["alice"]["flagged"] and not report["gold"]["reviewers"]["bob"]["flagged"]
    assert "by_proposer" in report

    # build onto an earlier release, sealed, without --skip-invalid; stage only the dataset and its labels
    base = write_release(tmp_path / "base", stamps=EARLY)
    assert cli.main(["build", "--source", "raw", "--input", str(base), "--out", str(data), "--quiet"]) == 0
    assert cli.main(["build", "--source", "raw", "--input", str(raw), "--append", "--seal", "--until", "2027-06-01",
                     "--labels-out", str(labels), "--out", str(data), "--quiet"]) == 0
    assert cli.main(["stage", "--out", str(hub), "--data", str(data), "--labels", str(labels),
                     "--only", "dataset,labels"]) == 0
    staged_labels = next(p for p in hub.rglob("lookbench-labels") if p.is_dir())
    public = tmp_path / "public"
    shutil.copytree(hub / "lookbench", public, ignore=shutil.ignore_patterns("lookbench-labels"))
    assert cli.main(["unseal", str(public), "--labels", str(staged_labels)]) == 0
    release = "v" + max(json.loads(l)["timestamp"] for l in (out / "crawl" / "items.jsonl").read_text().splitlines())[:10].replace("-", "")
    main = {k: taxonomy.categories[t["category"]].main_attribute for k, t in truth.items()}
    expected = {k: (t["category"], t["attributes"][main[k]], {(n, v) for n, v in t["attributes"].items() if v != taxonomy.not_applicable})
                for k, t in (truth | {disputed: bobs[disputed]}).items()}
    assert built_rows(public, release) == expected
    assert expected[disputed][1] == value != truth[disputed]["attributes"][main[disputed]]
