"""Per-query judging of LookBench Fine Recall: ranking checks, fine and coarse hits, nDCG and AP, and their means.

The numpy core of the metric: `fine_recall.py` (the evaluate module) and the LookBench engine both score
through it, so there is one implementation of the scoring. Like its siblings it needs numpy only, so the
leaderboard and the CLI use it without importing datasets or evaluate.
"""

from dataclasses import dataclass
from itertools import islice

import numpy as np

from .records import GalleryColumns
from .records import Vocabulary
from .records import as_rows
from .records import check_mode
from .records import columns_of_records
from .records import encode
from .records import same_main

DEFAULT_K = (1, 5, 10, 20)
# At most this many cut-offs in one call: each K is a column of every per-query array (documented in README.md).
MAX_CUTOFFS = 256
# Upper bound on the 64-bit words of one query x same-category-gallery block of attribute bitsets.
_BLOCK_WORDS = 1 << 22


def check_lengths(num_predictions, num_references, scope=""):
    if num_predictions != num_references:
        missing = "reference" if num_predictions > num_references else "ranking"
        raise ValueError(
            f"predictions has {num_predictions} rankings but references has {num_references} records: "
            f"query {min(num_predictions, num_references)}{scope} has no {missing}"
        )


def _check_k(k):
    if k is None:
        raise ValueError("k must be an integer >= 1 or a list of them, got k=None")
    try:
        ks = [k] if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else list(islice(k, MAX_CUTOFFS + 1))
    except TypeError:
        raise ValueError(f"k must be an integer >= 1 or a list of them, got k={k!r}") from None
    if len(ks) > MAX_CUTOFFS:  # read no further: k may be a huge range or an endless iterator
        count = len(k) if hasattr(k, "__len__") else f"more than {MAX_CUTOFFS}"
        raise ValueError(f"k names {count} cut-offs; at most MAX_CUTOFFS = {MAX_CUTOFFS} are scored in one call")
    for value in ks:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"every K must be an integer >= 1, got k={k!r}")
    if not ks:
        raise ValueError("k must name at least one cut-off")
    return sorted({int(value) for value in ks})


def _is_index(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_rankings(predictions):
    """Reject every ranking that is not a flat, non-empty sequence of integer indices.

    Run on the caller's own values, before evaluate's Arrow cast would truncate a float index (1.9 -> 1)
    or turn a bool into 0/1, so `compute` and `score_retrieval` refuse exactly the same input.
    """
    if predictions is None:
        raise ValueError("predictions is required: one ranking of gallery indices per query")
    if isinstance(predictions, (str, bytes, dict)) or not hasattr(predictions, "__iter__"):
        raise ValueError(f"predictions must be a list of rankings, one per query, got {type(predictions).__name__}")
    if isinstance(predictions, np.ndarray):
        if predictions.ndim != 2:
            raise ValueError(f"predictions as an array must be 2-D (queries x ranks), got shape {predictions.shape}")
        if predictions.shape[1] == 0 and predictions.shape[0]:
            raise ValueError("query 0 has an empty ranking")
        if predictions.dtype.kind not in "iu":
            raise ValueError(f"query 0: rankings must hold integer gallery indices, got {predictions.dtype}")
        return
    for i, ranking in enumerate(predictions):
        if isinstance(ranking, (str, bytes, dict)) or not hasattr(ranking, "__len__"):
            raise ValueError(f"query {i}: a ranking must be a list of gallery indices, got {ranking!r}")
        if isinstance(ranking, np.ndarray):
            if ranking.ndim != 1:
                raise ValueError(f"query {i}: a ranking must be a flat list of gallery indices")
            bad = None if ranking.dtype.kind in "iu" or not ranking.size else (0, ranking[0].item())
        else:
            bad = next(((r, value) for r, value in enumerate(ranking) if not _is_index(value)), None)
        if len(ranking) == 0:
            raise ValueError(f"query {i} has an empty ranking")
        if bad is not None:
            rank, value = bad
            raise ValueError(
                f"query {i}: rankings must hold integer gallery indices, got {value!r} "
                f"({type(value).__name__}) at rank {rank + 1}"
            )


def _ranking_matrix(predictions, gallery_size):
    """Rankings (already through `check_rankings`) as a (queries x length) int64 matrix, -1 = no result;
    indices outside the gallery, a -1 before an index and repeated indices are rejected."""
    if isinstance(predictions, np.ndarray):
        matrix = predictions
    else:
        rankings = [np.asarray(p, dtype=np.int64) for p in predictions]
        lengths = np.array([r.size for r in rankings], dtype=np.int64)
        matrix = np.full((len(rankings), int(lengths.max())), -1, dtype=np.int64)
        matrix[np.arange(matrix.shape[1]) < lengths[:, None]] = np.concatenate(rankings)
    matrix = matrix.astype(np.int64, copy=False)
    outside = (matrix < -1) | (matrix >= gallery_size)
    if outside.any():
        q, r = np.argwhere(outside)[0]
        raise ValueError(
            f"query {q}: predicted index {matrix[q, r]} at rank {r + 1} is outside the gallery (0..{gallery_size - 1})"
        )
    padded = matrix == -1
    resumed = np.logical_or.accumulate(padded, axis=1) & ~padded
    if resumed.any():
        q = np.flatnonzero(resumed.any(axis=1))[0]
        raise ValueError(f"query {q}: -1 (no result) is followed by a gallery index; -1 may only pad the end")
    ordered = np.sort(matrix, axis=1)
    repeated = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)
    if repeated.any():
        q, r = np.argwhere(repeated)[0]
        raise ValueError(f"query {q}: gallery index {ordered[q, r]} appears more than once in its ranking")
    return matrix


def _group_starts(keys, values):
    """For sorted `keys`, the [start, end) slice of every value in `values`."""
    return np.searchsorted(keys, values, "left"), np.searchsorted(keys, values, "right")


def _overlaps(query, gallery, ranking, max_k):
    """|A_q ∩ A_i| for every retrieved item of the query's category, the max_k best relevances of each query
    over the whole gallery (for the ideal DCG), and how many gallery items carry all of A_q (strict fine matches,
    for MAP).

    Relevance is zero across categories, so the work is done per query category: the attributes that the
    category's queries use become bit positions, every query and gallery item of the category a bitset, and
    overlaps are popcounts of their ANDs, in blocks of bounded size. (Popcounts, not a BLAS product: threaded
    BLAS slows down by orders of magnitude on a busy machine.)
    """
    num_queries, length = ranking.shape
    retrieved = np.zeros((num_queries, length), dtype=np.float64)
    ideal = np.zeros((num_queries, max_k), dtype=np.float64)
    complete = np.zeros(num_queries, dtype=np.int64)
    g_order = np.argsort(gallery["category"], kind="stable")
    g_sorted = gallery["category"][g_order]
    position = np.empty(g_order.size, dtype=np.int64)  # row -> column inside its category's block
    position[g_order] = np.arange(g_order.size) - np.searchsorted(g_sorted, g_sorted, "left")
    ge_order = np.argsort(gallery["category"][gallery["rows"]], kind="stable")
    ge_sorted = gallery["category"][gallery["rows"]][ge_order]
    q_order = np.argsort(query["category"], kind="stable")
    q_sorted = query["category"][q_order]
    qe_order = np.argsort(query["category"][query["rows"]], kind="stable")
    qe_sorted = query["category"][query["rows"]][qe_order]
    categories = np.unique(query["category"])
    g_lo, g_hi = _group_starts(g_sorted, categories)
    ge_lo, ge_hi = _group_starts(ge_sorted, categories)
    q_lo, q_hi = _group_starts(q_sorted, categories)
    qe_lo, qe_hi = _group_starts(qe_sorted, categories)
    valid = ranking >= 0
    safe = np.where(valid, ranking, 0)
    ranked_category = np.where(valid, gallery["category"][safe], -1)
    for c, category in enumerate(categories):
        width = g_hi[c] - g_lo[c]
        if width == 0:
            continue
        queries = q_order[q_lo[c]:q_hi[c]]
        local = np.empty(num_queries, dtype=np.int64)
        local[queries] = np.arange(queries.size)
        q_entries = qe_order[qe_lo[c]:qe_hi[c]]
        bit_of, q_columns = np.unique(query["pairs"][q_entries], return_inverse=True)  # sorted pair per bit
        words = max(1, -(-bit_of.size // 64))
        q_bits = _bitsets(queries.size, words, local[query["rows"][q_entries]], q_columns)
        g_entries = ge_order[ge_lo[c]:ge_hi[c]]
        g_pairs = gallery["pairs"][g_entries]
        g_columns = np.searchsorted(bit_of, g_pairs).clip(max=max(bit_of.size - 1, 0))
        known = bit_of[g_columns] == g_pairs if bit_of.size else np.zeros(g_pairs.size, dtype=bool)
        g_bits = _bitsets(width, words, position[gallery["rows"][g_entries][known]], g_columns[known])
        same = ranked_category == category
        block = max(1, _BLOCK_WORDS // (width * words))
        for start in range(0, queries.size, block):
            chunk = queries[start:start + block]
            both = q_bits[start:start + block, None, :] & g_bits[None, :, :]
            counts = np.bitwise_count(both).sum(axis=2, dtype=np.int64)
            hits = same[chunk]
            columns = np.where(hits, position[safe[chunk]], 0)
            retrieved[chunk] = np.where(hits, counts[np.arange(chunk.size)[:, None], columns], 0.0)
            sizes = query["num_attributes"][chunk][:, None]
            relevance = np.where(sizes > 0, counts / np.maximum(sizes, 1), 1.0)
            complete[chunk] = (counts == sizes).sum(axis=1)
            top = min(max_k, width)
            best = -np.partition(-relevance, top - 1, axis=1)[:, :top] if top < width else relevance
            ideal[chunk, :top] = -np.sort(-best, axis=1)[:, :top]
    return retrieved, ideal, complete


def _bitsets(count, words, rows, columns):
    """(count x words) uint64 bitsets with bit `columns[j]` set in row `rows[j]` (pairs are unique)."""
    bits = np.zeros((count, words), dtype=np.uint64)
    np.add.at(bits, (rows, columns // 64), np.left_shift(np.uint64(1), (columns % 64).astype(np.uint64)))
    return bits


def _first_hit(hits):
    """0-based rank of the first hit per row, or infinity when there is none (a miss at every K)."""
    return np.where(hits.any(axis=1), hits.argmax(axis=1), np.inf)


def _same_pair_counts(query, items):
    """For each query, the gallery items with its category and its main attribute (leaderboard mode's matches)."""
    width = max(int(items["main_attribute"].max(initial=0)), int(query["main_attribute"].max(initial=0))) + 1
    g_keys, counts = np.unique(items["category"] * width + items["main_attribute"], return_counts=True)
    q_keys = query["category"] * width + query["main_attribute"]
    at = np.searchsorted(g_keys, q_keys).clip(max=max(g_keys.size - 1, 0))
    # g_keys[at] % width is the found key's main attribute: the query's own where the keys are equal
    found = (g_keys[at] == q_keys) & same_main(query["main_attribute"], g_keys[at] % width)
    return np.where(found, counts[at], 0)


@dataclass(frozen=True, eq=False)
class Core:
    """What `score_queries` computes whatever the mode: the cut-offs `k`, the `coarse` hits and `first_coarse`,
    `ndcg`, `category` and `outfit_id` (as `score_queries` returns them), and what a mode's fine hits are judged
    from: each rank's attribute `overlap`, each query's `complete` (strict) matches, the encoded `query` and
    `items` and the `safe` ranking (-1 pads as row 0). `score_mode` adds one mode's outcomes."""

    k: list
    coarse: np.ndarray
    first_coarse: np.ndarray
    ndcg: np.ndarray
    category: list
    outfit_id: list
    overlap: np.ndarray
    complete: np.ndarray
    query: dict
    items: dict
    safe: np.ndarray


def score_core(predictions, references, gallery, k=DEFAULT_K):
    """The mode-free part of `score_queries` (same inputs and checks, no mode): scoring several modes of one
    ranking shares it, since only the fine hits and AP depend on the mode."""
    return _core(predictions, references, gallery, _check_k(k))


def _core(predictions, references, gallery, ks):
    if gallery is None:
        raise ValueError("gallery is required: the annotation record of every gallery row")
    q_columns = columns_of_records(as_rows(references, "references"), "references")
    check_rankings(predictions)
    check_lengths(len(predictions), q_columns["size"])
    if not q_columns["size"]:
        raise ValueError("there are no queries to score")
    g_columns = GalleryColumns(gallery).columns
    if not g_columns["size"]:
        raise ValueError("gallery is empty: it needs the annotation record of every gallery row")
    ranking = _ranking_matrix(predictions, g_columns["size"])
    vocabulary = Vocabulary()
    query = encode(q_columns, vocabulary, "references")
    items = encode(g_columns, vocabulary, "gallery")
    # Beyond the ranking depth (faiss pads a search deeper than the gallery with -1) and the gallery no score
    # changes: a larger K is a mistake, refused before anything of its size is allocated. The default cut-offs are
    # scored on any gallery, as LookBench reports them for every run.
    depth, bound = ranking.shape[1], max(ranking.shape[1], g_columns["size"], DEFAULT_K[-1])
    if ks[-1] > bound:
        raise ValueError(f"k={ks[-1]} is larger than both the ranking depth ({depth}) and the gallery "
                         f"({g_columns['size']} rows), beyond which no score changes; K can be at most {bound} (the "
                         f"larger of them, or {DEFAULT_K[-1]}, the largest default cut-off)")

    length = ranking.shape[1]
    max_k = ks[-1]
    valid = ranking >= 0
    safe = np.where(valid, ranking, 0)
    coarse = valid & (items["category"][safe] == query["category"][:, None])
    overlap, ideal, complete = _overlaps(query, items, ranking, max_k)
    sizes = query["num_attributes"][:, None]
    relevance = np.where(sizes > 0, overlap / np.maximum(sizes, 1), 1.0) * coarse
    discount = 1.0 / np.log2(np.arange(2, max(length, max_k) + 2))
    dcg = np.cumsum(relevance * discount[:length], axis=1)
    idcg = np.cumsum(ideal * discount[:max_k], axis=1)
    ndcg = np.empty((ranking.shape[0], len(ks)), dtype=np.float64)
    for j, value in enumerate(ks):
        best = idcg[:, value - 1]
        # Clip float rounding: DCG sums the same relevances as the ideal, in a worse order.
        ndcg[:, j] = np.where(best > 0, np.minimum(dcg[:, min(value, length) - 1] / np.where(best > 0, best, 1), 1.0), 0.0)
    return Core(ks, coarse, _first_hit(coarse), ndcg, [vocabulary.texts[c] for c in query["category"]],
                q_columns["outfit_id"], overlap, complete, query, items, safe)


def score_mode(core, mode):
    """`score_queries`' outcomes in `mode` from the mode-free `core` (`score_core`'s): the fine hits, the fine
    matches in the whole gallery (`relevant`) and AP."""
    check_mode(mode)
    query = core.query
    if mode == "strict":
        fine = core.coarse & (core.overlap == query["num_attributes"][:, None])
        relevant = core.complete
    else:
        fine = core.coarse & same_main(query["main_attribute"][:, None], core.items["main_attribute"][core.safe])
        relevant = _same_pair_counts(query, core.items)
    # AP@K (trec_eval's map_cut): the precision at each fine hit within the top K, summed and divided by the
    # number of fine matches in the whole gallery (a query with none scores 0).
    length = fine.shape[1]
    hits = np.cumsum(fine, axis=1)
    precision_sum = np.cumsum(np.where(fine, hits / np.arange(1, length + 1), 0.0), axis=1)
    ap = np.stack([precision_sum[:, min(value, length) - 1] for value in core.k], axis=1)
    ap = np.where(relevant[:, None] > 0, np.minimum(ap / np.maximum(relevant, 1)[:, None], 1.0), 0.0)
    return {
        "k": core.k,
        "fine": fine,
        "coarse": core.coarse,
        "first_fine": _first_hit(fine),
        "first_coarse": core.first_coarse,
        "ndcg": core.ndcg,
        "ap": ap,
        "relevant": relevant,
        "category": core.category,
        "outfit_id": core.outfit_id,
    }


def score_queries(predictions, references, gallery, k=DEFAULT_K, mode="strict"):
    """Per-query outcomes, the building block of `score_retrieval` (which averages them); a demo shows them per result.

    Arguments are those of `score_retrieval`. Returns a dict: `k` (the sorted cut-offs), `fine` and `coarse`
    (boolean queries x ranks: is the item at that rank a fine / coarse hit), `first_fine` and `first_coarse` (the
    0-based rank of each query's first fine / coarse hit, infinity for none), `ndcg` and `ap` (queries x len(k):
    each query's nDCG@K and AP@K as fractions), `relevant` (each query's number of fine matches in the whole
    gallery, the AP normalisation), `category` (each query's normalised category) and `outfit_id`.
    `score_core` + `score_mode`.
    """
    ks = _check_k(k)
    check_mode(mode)
    return score_mode(_core(predictions, references, gallery, ks), mode)


def query_scores(per_query):
    """Each query's share of every mean score, in percent: `fine_recall@K` and `coarse_recall@K` (0 or 100),
    `ndcg@K`, `map@K` and `mrr@K` (1/rank of the first fine hit if it is within the top K, else 0). A score is the
    mean of its column over the queries.

    `per_query` needs `k`, `first_fine`, `first_coarse`, `ndcg` and `ap` as `score_queries` returns them (or as a
    stored result keeps them), so intervals and paired tests can be computed without the rankings.
    """
    ks = list(per_query["k"])
    first_fine = np.asarray(per_query["first_fine"], dtype=np.float64)
    first_coarse = np.asarray(per_query["first_coarse"], dtype=np.float64)
    ndcg = np.asarray(per_query["ndcg"], dtype=np.float64).reshape(first_fine.size, len(ks))
    ap = np.asarray(per_query["ap"], dtype=np.float64).reshape(first_fine.size, len(ks))
    reciprocal = 1.0 / (first_fine + 1.0)
    out = {}
    for key, first in (("fine_recall", first_fine), ("coarse_recall", first_coarse)):
        for value in ks:
            out[f"{key}@{value}"] = 100.0 * (first < value)
    for j, value in enumerate(ks):
        out[f"ndcg@{value}"] = 100.0 * ndcg[:, j]
    for j, value in enumerate(ks):
        out[f"map@{value}"] = 100.0 * ap[:, j]
    for value in ks:
        out[f"mrr@{value}"] = 100.0 * np.where(first_fine < value, reciprocal, 0.0)
    return out


def outfit_hits(first_fine, outfit_ids, k):
    """(outfit ids, outfits x len(k) booleans): an outfit is a hit at K when every one of its item queries is."""
    outfit_ids = np.array(outfit_ids, dtype=object)
    in_outfit = outfit_ids != ""
    outfits, outfit_of = np.unique(outfit_ids[in_outfit].astype(str), return_inverse=True)
    first = np.asarray(first_fine, dtype=np.float64)[in_outfit]
    misses = np.stack([np.bincount(outfit_of, weights=first >= value, minlength=outfits.size) for value in k], axis=1) \
        if outfits.size else np.zeros((0, len(k)))
    return outfits, misses == 0



def summarise(per_query):
    """The scores (percent) of per-query outcomes: what `score_retrieval` returns, from `score_queries`' output."""
    ks = per_query["k"]
    columns = query_scores(per_query)
    results = {key: float(np.mean(values)) for key, values in columns.items()}
    outfits, hit = outfit_hits(per_query["first_fine"], per_query["outfit_id"], ks)
    for j, value in enumerate(ks) if outfits.size else ():
        results[f"outfit_fine_recall@{value}"] = 100.0 * float(np.mean(hit[:, j]))
    results["num_queries"] = int(len(per_query["first_fine"]))
    results["num_outfits"] = int(outfits.size)

    per_category = {}
    categories = np.array(per_query["category"], dtype=object)
    first_fine, first_coarse = np.asarray(per_query["first_fine"]), np.asarray(per_query["first_coarse"])
    for category in sorted(set(per_query["category"])):
        members = categories == category
        per_category[category] = {
            "fine_recall@1": 100.0 * float(np.mean(first_fine[members] < 1)),
            "coarse_recall@1": 100.0 * float(np.mean(first_coarse[members] < 1)),
            "num_queries": int(members.sum()),
        }
    results["per_category"] = per_category
    return results


def combine_subsets(results_by_subset):
    """Overall scores as the leaderboard computes them: the mean over subsets weighted by `num_queries`.

    Every numeric score key common to all subsets is combined; `num_queries` (and `num_outfits`, when all
    subsets report it) are summed. Nested entries such as `per_category` are left out.
    """
    if not results_by_subset:
        raise ValueError("combine_subsets needs the results of at least one subset")
    for name, results in results_by_subset.items():
        if not isinstance(results.get("num_queries"), (int, np.integer)) or results["num_queries"] < 1:
            raise ValueError(f"subset {name!r} has no positive integer 'num_queries'")
    subsets = list(results_by_subset.values())
    counts = {"num_queries", "num_outfits"}
    common = [
        key
        for key in subsets[0]
        if all(isinstance(r.get(key), (int, float, np.number)) and not isinstance(r.get(key), bool) for r in subsets)
    ]
    weights = np.array([r["num_queries"] for r in subsets], dtype=np.float64)
    combined = {}
    for key in common:
        values = np.array([r[key] for r in subsets], dtype=np.float64)
        combined[key] = int(values.sum()) if key in counts else float(values @ weights / weights.sum())
    return combined
