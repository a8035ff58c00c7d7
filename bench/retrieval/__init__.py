"""Retrieval quality on public, human-written conversational-memory benchmarks.

``python -m bench.retrieval.fetch`` converts the public sets into ``bench/data/`` (git-ignored: their data is
never committed); ``python -m bench.retrieval`` stores every set through the ordinary path
(``MemoryStorage.add_batch``, then ``search(question, k=10, mode=...)``) and reports recall@1/5/10, MRR and
nDCG@10 per set and per category for keyword, dense and hybrid search, beside plain BM25 and plain dense
baselines computed in the same run. ``python -m bench.retrieval.latency`` compares search and ingest time
with an older commit in one run. LoCoMo (snap-research) is held out for acceptance: nothing here fetches it.
"""
