"""The tools that justify a constant ltm ships: each re-measures what chose it.

- :mod:`bench.tuning.hnsw_sweep`: HNSW's efSearch floor (``Settings.hnsw_ef_search``) against recall@10;
- :mod:`bench.tuning.prior_fit` (with :mod:`bench.tuning.levers`): the weights of hybrid search's prior
  (``ltm.store.search.fusion.PRIOR``), a logistic regression on the public chat sets' candidates.

The one-off probes of the retrieval tuning (the other harness rounds, the swapped-speaker slice, the IVF and PCA
index probes, the embedding-cost and pool checks) are kept at the git tag ``research/retrieval-2026``
(``git show research/retrieval-2026:bench/ivf_probe.py``), where BENCHMARKS.md and docs/search.md cite them.
"""
