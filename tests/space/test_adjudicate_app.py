"""The adjudication app (`lookbench review RAW --adjudicate --reviewer NAME`) served by the real command and driven
through gradio_client: it shows every reviewer's values of a disputed item (the differing field marked), prefills the
form, and Accept settles the item, which leaves the adjudication queue; a reviewer of the item cannot settle it."""
from __future__ import annotations

import json

import pytest

from lookbench import cli
from lookbench.dataset_builder.decisions import ADJUDICATE, DecisionStore
from lookbench.dataset_builder.reviewed_labels import verdicts
from lookbench.space.review.session import open_review

from tests.helpers import clients
from tests.helpers.annotated_release import write_annotated
from tests.helpers.review_app import answer, serve, shown_key  # noqa: F401  (serve: a fixture)


def two_disputes(raw):
    """ann and ben label the 2-item shared sample; they disagree on the colour of the first and the sleeve of the
    second (a top) or the length (a skirt). The truth by key."""
    truth = write_annotated(raw, n=6)
    review, _ = open_review(raw, overlap=2, shared=2)
    for key in review.plan.shared:
        for name in ("ann", "ben"):
            labels = json.loads(json.dumps(truth[key]))
            if name == "ben":
                attributes = labels["attributes"]
                if key == review.plan.shared[0]:
                    attributes["colour"] = "green" if attributes["colour"] != "green" else "red"
                elif "sleeve" in attributes:
                    attributes["sleeve"] = "short" if attributes["sleeve"] == "long" else "long"
                else:
                    attributes["length"] = "mini" if attributes["length"] == "maxi" else "maxi"
            names = review.taxonomy.categories[labels["category"]].attributes
            review.decide(name, key, labels["category"], [labels["attributes"][n] for n in names])
    return truth, list(review.plan.shared)


@pytest.mark.slow
def test_the_adjudicator_sees_both_reviewers_settles_each_dispute_and_it_leaves_the_queue(tmp_path, serve):
    raw = tmp_path / "raw"
    truth, shared = two_disputes(raw)
    served = serve(raw, "--adjudicate", "--reviewer", "cyd")
    assert "2 open dispute(s)" in "".join(served.output)
    client = served.client()
    view = client.predict(api_name="/begin")
    first = shown_key(view)
    assert first == sorted(shared)[0] and "2 dispute(s) to settle" in view[1]
    header = view[0]
    assert "| ann | ben |" in header  # every reviewer's values side by side
    differing = [line for line in header.splitlines() if line.startswith("| ≠ |")]
    colours = {truth[first]["attributes"]["colour"], "green" if truth[first]["attributes"]["colour"] != "green" else "red"}
    assert len(differing) == 1 and "| colour |" in differing[0] and all(f"**{c}**" in differing[0] for c in colours)
    assert view[4]["value"] == truth[first]["category"]  # the form, prefilled (a tie: the first reviewer's values)
    form = answer(truth[first])
    view = client.predict(*form, api_name="/accept")
    assert "Settled" in view[-1] and shown_key(view) == sorted(shared)[1] and "1 dispute(s) to settle" in view[1]
    view = client.predict(*answer(truth[sorted(shared)[1]]), api_name="/accept")
    assert shown_key(view) is None and "No dispute left to settle" in view[0]
    store = DecisionStore(raw)
    assert [(e.action, e.item) for e in store.events("cyd")] == [(ADJUDICATE, k) for k in sorted(shared)]
    found = verdicts(store)
    assert all(found[k].settled and (found[k].label.category, found[k].label.attributes)
               == (truth[k]["category"], truth[k]["attributes"]) for k in shared)
    view = client.predict(api_name="/undo")  # cyd's own last decision, and it comes back
    assert shown_key(view) == sorted(shared)[1] and not verdicts(store)[sorted(shared)[1]].settled


@pytest.mark.slow
def test_a_reviewer_of_the_dispute_is_not_given_it_to_settle(tmp_path, serve):
    raw = tmp_path / "raw"
    two_disputes(raw)
    client = serve(raw, "--adjudicate", "--reviewer", "ann").client()
    view = client.predict(api_name="/begin")
    assert shown_key(view) is None and "0 dispute(s) to settle · 2 you labelled yourself, left to another adjudicator" in view[1]


def test_adjudicate_needs_a_reviewed_release(tmp_path, capsys):
    raw = tmp_path / "raw"
    write_annotated(raw, n=3)
    assert cli.main(["review", str(raw), "--adjudicate", "--reviewer", "cyd"]) != 0
    assert "has not been reviewed yet" in capsys.readouterr().err and not (raw / "reviews").exists()


@pytest.mark.slow
def test_only_an_invited_adjudicator_is_let_in(tmp_path, serve, capsys):
    """Invitations by the real command: an adjudicator's token settles; a reviewer's token, a revoked one or none is
    refused on every endpoint, and nothing is written."""
    raw = tmp_path / "raw"
    truth, shared = two_disputes(raw)
    capsys.readouterr()
    assert cli.main(["review", str(raw), "--invite", "dee", "--adjudicator"]) == 0
    assert cli.main(["review", str(raw), "--invite", "eve"]) == 0
    links = dict(line.split(": ", 1) for line in capsys.readouterr().out.splitlines() if "token=" in line)
    assert set(links) == {"dee (adjudicator)", "eve"}
    served = serve(raw, "--adjudicate")
    for client, refusal in [(served.client(links["eve"].split("token=")[1]), "eve is not an adjudicator"),
                            (clients.gradio(served.url), "no reviewer token")]:
        for call in [lambda: client.predict(api_name="/begin"),
                     lambda: client.predict(*answer(truth[sorted(shared)[0]]), api_name="/accept"),
                     lambda: client.predict(api_name="/undo")]:
            with pytest.raises(Exception, match=refusal):
                call()
    assert DecisionStore(raw).events("eve") == [] and not (raw / "reviews" / "eve").exists()
    dee = served.client(links["dee (adjudicator)"].split("token=")[1])
    view = dee.predict(api_name="/begin")
    assert shown_key(view) == sorted(shared)[0] and "**dee** adjudicating" in view[1]
    dee.predict(*answer(truth[sorted(shared)[0]]), api_name="/accept")
    assert [e.action for e in DecisionStore(raw).events("dee")] == [ADJUDICATE]
    assert cli.main(["review", str(raw), "--revoke", "dee"]) == 0
    with pytest.raises(Exception, match="token is not valid"):
        dee.predict(api_name="/begin")
