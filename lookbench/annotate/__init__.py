"""`lookbench annotate`: a crawl folder in, a raw release folder of *proposed* labels out (issue 48).

Why proposals and not labels: machine labels fail exactly where a benchmark needs them (fine attributes, "not
applicable"), so nothing a proposer says becomes a label until a person has reviewed it (`lookbench review`). The
row contract (docs/architecture.md §4, "Annotated raw release"): ``RAW/<Config>/{query,gallery}.jsonl`` +
``RAW/<Config>/images/…`` + ``RAW/taxonomy.json`` (the taxonomy proposed against); each row keeps the crawl's item
fields (``item_id``, ``image``, ``timestamp``, optional ``bbox``, ``outfit_id``, ``raw_image``, ``title``,
``description``, ``shop_category``) and carries NO ``category``, ``main_attribute`` or ``attributes`` — only::

    "proposals": {"category": {"value": str | None, "confidence": float},
                  "attributes": {name: {"value": value | "not applicable" | None, "confidence": float}}},
    "proposer": {"name": str, "revision": str}

``attributes`` names every attribute of the proposed category; a value None is "not proposed" (counted). Several
proposers layered (``lookbench.annotate.layered``) name themselves in order in ``proposer`` (``"a > b"``) and each
field adds ``"source"`` (the proposer whose answer it is, or None) and ``"by"`` (every proposer's own answer).
"""
