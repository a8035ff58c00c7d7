"""The tools that justify a constant ltm ships: each re-measures what chose it.

- :mod:`bench.tuning.hnsw_sweep`: HNSW's efSearch floor (``Settings.hnsw_ef_search``) against recall@10;
- :mod:`bench.tuning.prior_fit` (with :mod:`bench.tuning.levers`): the weights of hybrid search's prior
  (``ltm.store.search.fusion.PRIOR``), a logistic regression on the public chat sets' candidates.

The one-off probes of the retrieval tuning (the other harness rounds, the swapped-speaker slice, the IVF and PCA
index probes, the embedding-cost and pool checks) left the tree in commit 03168049fd; its parent aa059f083a holds
them (``git show aa059f083a:bench/ivf_probe.py``) with the round-by-round record that cites them
(``git show aa059f083a:docs/RETRIEVAL.md``). What chose each constant today: docs/search.md#the-constants.
"""
