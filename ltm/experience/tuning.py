"""The measured thresholds of ExperienceMemory: when two principles are one, and when a policy fits a task."""

from __future__ import annotations

__all__ = ["DEFAULT_MERGE_SIMILARITY", "DEFAULT_MIN_RELEVANCE", "DEFAULT_RELEVANCE_MARGIN"]

# Cosine similarity (all-MiniLM-L6-v2) at which two principles say the same thing. Rephrasings of one rule
# ("query the order status before a refund" / "check the status is delivered before refund_order") score
# ~0.75-0.9; rules about different tools or checks score below ~0.6. 0.8 merges rephrasings, keeps the rest.
DEFAULT_MERGE_SIMILARITY = 0.8
# Retrieval keeps a policy when its cosine similarity to the task is >= min_relevance AND within
# relevance_margin of the best policy's. Measured with all-MiniLM-L6-v2 on the benchmark's offline policies
# (which quote the tool's docstring) and 13 customer requests: the right policy ranks first for all of them and
# scores 0.39-0.47 on refund and note requests, the next one 0.06-0.14 lower, except for wordings the model
# barely links to a tool ("add a remark": 0.34 vs 0.33). Customer requests all look alike to a small model, so
# an absolute floor alone would let the refund policy onto every note task; the margin keeps it off.
DEFAULT_MIN_RELEVANCE = 0.3
DEFAULT_RELEVANCE_MARGIN = 0.06
