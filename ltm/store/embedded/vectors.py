"""The FAISS side of a namespace: an ``IndexIDMap2`` keyed by message ``seq``, and its snapshot file.

Flat (``IndexFlatIP`` over unit vectors, exact cosine; from ``snapshot.HALF_FROM`` vectors over their float16
copies, whose products are scaled into exact cosines: :meth:`VectorIndex._exact_flat`) until the namespace holds
``hnsw_threshold`` live vectors, then HNSW over 8-bit codes (``IndexHNSWSQ``: cosines within ~1e-3; older
stores' float32 ``IndexHNSWFlat`` snapshots still load and serve as they are until their next rebuild). A deleted seq
becomes a *ghost* in both kinds: it stays in the index and searches leave it out. HNSW cannot remove vectors,
so searches exclude ghosts with an ``IDSelectorNot`` and the store rebuilds the graph from SQLite when ghosts
pass a fifth of it (no re-embedding: vectors are stored in SQLite). Vectors added to an existing graph first go
to its *fresh segment* (LSM-style): a small exact flat index searched beside the graph, folded into it in
one parallel add once :data:`FOLD_AT` accumulate. Only the graph is snapshotted, claiming the seqs it holds
(:attr:`VectorIndex.snapshot_seq`); the store replays the newer rows from SQLite into a new fresh segment on open,
so a few adds neither copy a memory-mapped graph into RAM nor rewrite its snapshot. A flat index could remove
one vector at a time, but ``remove_ids`` compacts the whole array (O(N): 10 ms per delete at 100k), so flat ghosts
are removed together once :data:`_FLAT_GHOSTS_MAX` accumulate, and meanwhile a flat search over-fetches by the
ghost count and drops them (keeping FAISS's BLAS path, which a selector would leave).

:meth:`VectorIndex.save` / :meth:`VectorIndex.load` go through :mod:`ltm.store.embedded.snapshot`, which owns both
file layouts (flat: float16 ids + vectors read into RAM; HNSW: FAISS's bytes, memory-mapped when big). A
mapped index is read-only, since FAISS 1.15 aborts on any write to a mapped index (checked): the first add to
the graph (a fold) swaps in an in-RAM copy, and deletes are ghosts that need none. A file that is truncated or
fails a CRC is reported as None by :meth:`VectorIndex.load` (or flagged :attr:`VectorIndex.damaged` shortly
after), and the store rebuilds it from SQLite without re-embedding. How FAISS is tuned (the graph's build
parameters, its search breadth, threads) is :mod:`ltm.store.embedded.hnsw`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import faiss
import numpy as np

from ltm.store.embedded import snapshot
from ltm.store.embedded.excluding import plain_without, selector_of, without_ghosts
from ltm.store.embedded.hnsw import (
    ADD_THREADS,
    BATCH_FROM_QUERIES,
    EF_CONSTRUCTION,
    EF_SEARCH,
    HNSW_M,
    PARALLEL_ADD_FROM,
    SEARCH_THREADS,
    ef_search_for,
    merge_found,
    omp_threads,
    quantizer_ranges,
)
from ltm.store.embedded.older_faiss import IDMAP_TAKES_PARAMS, search_by_position

__all__ = ["VectorIndex", "ef_search_for", "omp_threads", "quantizer_ranges"]

# LSM-style fresh segment: vectors added to a non-empty HNSW graph first go to a small exact flat
# index searched beside it, and are folded into the graph together once FOLD_AT of them accumulate (one parallel
# FAISS add of FOLD_AT instead of many small ones; no graph snapshot between folds; a crash replays at most this
# many rows, into the flat segment, on open). A search scans the whole segment beside the graph, and the scan also
# pushes the graph out of the cache: a hybrid's 50 from a 100,000-vector graph took 0.51 ms alone, 0.70 ms beside a
# full segment of 2,048 and 1.06 ms beside one of 8,192 (docs/SEARCH_SPEED.md, bench/peers/threshold.py --fresh).
# Folding more often costs no more in all: each vector is inserted into the graph once either way.
FOLD_AT = 2048
_EXACT_FILTER_MAX = 20_000  # HNSW + a filter this selective: score the allowed vectors exactly instead
_FLAT_GHOSTS_MAX = 256  # flat: deleted vectors are removed together (one O(N) compaction per this many)
_FLAT_MARGIN = 8  # flat: a top-k scan fetches max(2k, k + this) to order by exact cosines (_exact_flat)
_faiss: Any = faiss  # its bundled stubs miss SearchParameters' keywords, the HNSW parameter class, IndexHNSWSQ(qtype)


class VectorIndex:
    """An IndexIDMap2 (flat or HNSW) plus the seqs it covers; methods never touch SQLite."""

    def __init__(self, dim: int, kind: str = "flat") -> None:
        if kind not in ("flat", "hnsw"):
            raise ValueError(f"index kind must be flat or hnsw, got {kind!r}")
        self.dim, self.kind = dim, kind
        # which log this snapshot follows: {"log": the log's id, "tail": [seq, id] of the last live row it saw}
        # (set by the mirror before a save; None in snapshots written before logs had an id)
        self.binding: dict[str, Any] | None = None
        inner: Any
        if kind == "flat":
            inner = snapshot.flat_index(dim)
        else:
            inner = _faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, HNSW_M, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efConstruction = EF_CONSTRUCTION
        self.index: Any = faiss.IndexIDMap2(inner)
        self.last_seq = 0  # every message seq <= this is applied
        self.last_tseq = 0  # every tombstone <= this is applied
        self.ghosts: set[int] = set()  # HNSW only: removed seqs still in the graph
        self.fresh: VectorIndex | None = None  # HNSW only: the newest vectors, not yet folded into the graph
        self.graph_changes = 0  # HNSW only: vectors folded into the graph and ghosts added since the last save
        self.ef_search = EF_SEARCH  # HNSW only: see ef_search_for
        self._loaded: snapshot.Loaded | None = None  # the snapshot this index came from, while it maps it
        # flat and holding float16 copies (from snapshot.HALF_FROM vectors), whose products _exact_flat scales
        self.halved = False
        # then: the seqs held, ascending, and 1 / the norm of each one's copy (None: to be worked out from the index)
        self._scales: tuple[np.ndarray, np.ndarray] | None = None

    # -- size --------------------------------------------------------------------------------------------
    @property
    def live(self) -> int:
        return int(self.index.ntotal) - len(self.ghosts) + (self.fresh.live if self.fresh is not None else 0)

    @property
    def ghost_count(self) -> int:
        """Removed seqs still held (graph and fresh segment): what a compaction or rebuild would drop."""
        return len(self.ghosts) + (len(self.fresh.ghosts) if self.fresh is not None else 0)

    @property
    def snapshot_seq(self) -> int:
        """The ``last_seq`` a snapshot of the graph alone can claim: every seq up to it is in the graph or was
        deleted. The fresh segment is not saved: it holds the newest live rows, which the store replays from
        SQLite on open (into a new fresh segment)."""
        if self.fresh is None or not self.fresh.index.ntotal:
            return self.last_seq
        return int(faiss.vector_to_array(self.fresh.index.id_map).min()) - 1

    @property
    def quantized(self) -> bool:
        """Whether the vectors are held as 8-bit codes (HNSW): scores are cosines to ~1e-3 only,
        so callers that need exact cosines rescore the candidates (ltm.store.embedded.retrieval). A flat
        index's scores are exact (:meth:`_exact_flat`)."""
        return self.kind == "hnsw" and isinstance(faiss.downcast_index(self.index.index), faiss.IndexHNSWSQ)

    # -- changes -----------------------------------------------------------------------------------------
    def add(self, seqs: np.ndarray, vectors: np.ndarray) -> None:
        """Add vectors under their seqs (ascending, above every seq held). HNSW: into the graph when it is empty
        or the batch alone is FOLD_AT or more (a rebuild), else into the fresh segment, folded at FOLD_AT."""
        if not len(seqs):
            return
        if self.kind == "hnsw" and self.index.ntotal and len(seqs) < FOLD_AT:
            if self.fresh is None:
                self.fresh = VectorIndex(self.dim)
            self.fresh.add(seqs, vectors)
            if self.fresh.index.ntotal >= FOLD_AT:
                self.fold()
            return
        if self.kind == "hnsw" and self.fresh is not None and self.fresh.index.ntotal:
            self.fold()
        self._graph_add(seqs, vectors)

    def fold(self) -> None:
        """HNSW: move the fresh segment's live vectors into the graph in one (parallel) add."""
        fresh, self.fresh = self.fresh, None
        if fresh is None or not fresh.index.ntotal:
            return
        seqs = faiss.vector_to_array(fresh.index.id_map).astype(np.int64)
        vectors = fresh.index.index.reconstruct_n(0, int(fresh.index.ntotal))
        if fresh.ghosts:
            keep = ~np.isin(seqs, np.fromiter(fresh.ghosts, dtype=np.int64, count=len(fresh.ghosts)))
            seqs, vectors = seqs[keep], vectors[keep]
        self._graph_add(seqs, vectors)

    def _graph_add(self, seqs: np.ndarray, vectors: np.ndarray) -> None:
        if not len(seqs):
            return
        self._own()
        self.graph_changes += len(seqs)
        if self.kind == "flat" and not self.halved and int(self.index.ntotal) + len(seqs) >= snapshot.HALF_FROM:
            self._halve()
        start, known = int(self.index.ntotal), self._scales is not None or not self.index.ntotal
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        inner = faiss.downcast_index(self.index.index)
        if not inner.is_trained:  # a new HNSW-SQ index: its first add (the rebuild's vectors) sets the ranges
            inner.train(quantizer_ranges(vectors))
        if self.kind == "hnsw" and len(seqs) >= PARALLEL_ADD_FROM:
            with omp_threads(ADD_THREADS):  # per calling thread (libgomp): searches elsewhere keep theirs
                self.index.add_with_ids(vectors, seqs.astype(np.int64))
        else:
            with omp_threads(SEARCH_THREADS):
                self.index.add_with_ids(vectors, seqs.astype(np.int64))
        if self.halved and known:  # the copies' norms, from FAISS's own rounding of them
            self._keep_scales(np.asarray(seqs, dtype=np.int64), inner.reconstruct_n(start, len(seqs)))

    def remove(self, seqs: np.ndarray) -> None:
        if not len(seqs):
            return
        if self.fresh is not None and self.fresh.index.ntotal:  # the newest seqs: in the fresh segment
            first = self.snapshot_seq
            seqs = np.asarray(seqs, dtype=np.int64)
            self.fresh.remove(seqs[seqs > first])
            seqs = seqs[seqs <= first]
        ghosts = {int(s) for s in seqs if int(s) not in self.ghosts and self._holds(int(s))}
        self.ghosts |= ghosts
        if self.kind == "hnsw":
            self.graph_changes += len(ghosts)
        if self.kind == "flat" and len(self.ghosts) >= _FLAT_GHOSTS_MAX:
            self.compact()

    def compact(self) -> None:
        """Flat only: really remove the ghosts (one pass over the array). HNSW is rebuilt by the store."""
        if self.kind == "flat" and self.ghosts:
            self._own()
            gone = np.array(sorted(self.ghosts), dtype=np.int64)
            self.index.remove_ids(gone)
            if self.halved and self._scales is not None:
                keep = ~np.isin(self._scales[0], gone)
                self._scales = (self._scales[0][keep], self._scales[1][keep])
            self.ghosts = set()

    def _holds(self, seq: int) -> bool:
        try:  # IndexIDMap2 looks the id up in its reverse map; an absent id raises
            self.index.reconstruct(seq)
        except RuntimeError:
            return False
        return True

    # -- queries -----------------------------------------------------------------------------------------
    def search(
        self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None, excluded: frozenset[int] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(scores, seqs) of shape (n, k'), best first; seq -1 pads when fewer than k exist. HNSW: the graph's
        and the fresh segment's results merged. ``excluded``: seqs left out as ghosts are (the rows the default
        view of versions hides: one search, however many of them rank high)."""
        fresh = self.fresh if self.fresh is not None and self.fresh.live else None
        with omp_threads(SEARCH_THREADS if len(queries) < BATCH_FROM_QUERIES else ADD_THREADS):
            if fresh is None:
                return self._search(queries, k, allowed, excluded)
            k = max(1, min(k, max(self.live, 1)))
            found = [fresh.search(queries, k, allowed, excluded)]
            if int(self.index.ntotal) > len(self.ghosts):
                found.append(self._search(queries, k, allowed, excluded))
        return merge_found(found, k)

    def _search(
        self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None, excluded: frozenset[int] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The graph's (or the flat index's) own search."""
        k = max(1, min(k, max(int(self.index.ntotal) - len(self.ghosts), 1)))
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if faiss.cvar.distance_compute_blas_threshold != BATCH_FROM_QUERIES * self.dim:
            faiss.cvar.distance_compute_blas_threshold = BATCH_FROM_QUERIES * self.dim
        if self.halved:
            fetch = min(max(2 * k, k + _FLAT_MARGIN), int(self.index.ntotal) - len(self.ghosts))
            return self._exact_flat(*self._scan(queries, max(fetch, 1), allowed, excluded), k)
        return self._scan(queries, k, allowed, excluded)

    def _scan(
        self, queries: np.ndarray, k: int, allowed: np.ndarray | None, excluded: frozenset[int] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """FAISS's own answer: the graph's, or the flat index's inner products (with float16 copies: unscaled)."""
        if excluded and allowed is not None:
            allowed = allowed[~np.isin(allowed, np.fromiter(excluded, dtype=np.int64, count=len(excluded)))]
            excluded = None
        if self.kind == "hnsw" and allowed is not None and len(allowed) <= _EXACT_FILTER_MAX:
            return self._exact(queries, k, allowed)
        if self.kind == "flat" and allowed is None and self.ghosts and not excluded:
            return without_ghosts(self.index, self.ghosts, queries, k)
        if allowed is None and excluded:
            found = plain_without(self, queries, k, excluded)
            if found is not None:
                return found
        selector = selector_of(allowed, self.ghosts, excluded)
        if self.kind == "flat":
            params = _faiss.SearchParameters(sel=selector) if selector is not None else None
        else:
            params = _faiss.SearchParametersHNSW(efSearch=ef_search_for(k, self.ef_search, int(self.index.ntotal)))
            if selector is not None:
                params.sel = selector
        if params is not None and not IDMAP_TAKES_PARAMS:
            return search_by_position(self.index, self.ghosts | (excluded or set()), queries, k, allowed, params)
        scores, ids = self.index.search(queries, k, params=params)
        return scores, ids

    def _exact_flat(self, scores: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The flat scan's candidates with exact cosines, best ``k`` first: each inner product with a float16 copy
        divided by that copy's norm is the cosine with the unit vector searched (what
        :func:`~ltm.store.records.decode` makes of SQLite's copy), to float rounding (and to ~1e-6 where a component
        lies halfway between two float16 values: FAISS rounds it away from zero, numpy, which writes SQLite's copy,
        to even). The scan fetched more than ``k``, so that two candidates whose order the copies' norms (1 +- ~2e-4)
        swap both get here."""
        for _ in range(2):
            held, inverse = self._scales if self._scales is not None else self._worked_out_scales()
            at = np.clip(np.searchsorted(held, ids), 0, max(len(held) - 1, 0))
            found = (ids >= 0) & (held[at] == ids) if len(held) else np.zeros(ids.shape, dtype=bool)
            if np.array_equal(found, ids >= 0):
                break
            self._scales = None  # out of step with the index (never expected): work them out again
        exact = np.where(found, scores * (inverse[at] if len(held) else 1.0), -np.inf).astype(np.float32)
        order = np.argsort(-exact, axis=1, kind="stable")[:, :k]
        best = np.take_along_axis(exact, order, axis=1)
        seqs = np.where(np.isfinite(best), np.take_along_axis(ids, order, axis=1), -1)
        return best, seqs

    def _halve(self) -> None:
        """Flat: move the float32 vectors to float16 copies (the namespace reached ``snapshot.HALF_FROM``)."""
        seqs = faiss.vector_to_array(self.index.id_map).astype(np.int64)
        vectors = self.index.index.reconstruct_n(0, int(self.index.ntotal)) if len(seqs) else None
        self.index, self._scales = faiss.IndexIDMap2(snapshot.flat_index(self.dim, snapshot.HALF_FROM)), None
        self.halved = True
        if vectors is not None:
            self.index.add_with_ids(vectors, seqs)
            self._worked_out_scales()

    def _keep_scales(self, seqs: np.ndarray, copies: np.ndarray) -> None:
        """Flat: remember the new copies' inverse norms beside those held (in seq order)."""
        inverse = _inverse_norms(copies)
        held, scales = self._scales if self._scales is not None else (np.empty(0, np.int64), np.empty(0, np.float32))
        seqs, inverse = np.concatenate([held, seqs]), np.concatenate([scales, inverse])
        if len(held) and len(seqs) > len(held) and seqs[len(held)] <= held[-1]:  # not above every seq held
            order = np.argsort(seqs, kind="stable")
            seqs, inverse = seqs[order], inverse[order]
        self._scales = (seqs, inverse)

    def _worked_out_scales(self) -> tuple[np.ndarray, np.ndarray]:
        """Flat: the seqs and inverse norms from the index's own copies (after a snapshot is read)."""
        held = faiss.vector_to_array(self.index.id_map).astype(np.int64)
        copies = self.index.index.reconstruct_n(0, int(self.index.ntotal)) if len(held) else np.empty((0, self.dim))
        inverse = _inverse_norms(copies)
        order = np.argsort(held, kind="stable")
        self._scales = (held[order], inverse[order])
        return self._scales

    def _exact(self, queries: np.ndarray, k: int, allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ids = np.array([s for s in allowed.tolist() if s not in self.ghosts], dtype=np.int64)
        if self.fresh is not None and len(ids):  # the fresh segment answers for its own seqs
            ids = ids[ids <= self.snapshot_seq]
        if not len(ids):
            return np.full((len(queries), k), -np.inf, np.float32), np.full((len(queries), k), -1, np.int64)
        vectors = np.vstack([self.index.reconstruct(int(i)) for i in ids])
        sims = queries @ vectors.T
        order = np.argsort(-sims, axis=1)[:, :k]
        scores = np.take_along_axis(sims, order, axis=1)
        found = ids[order]
        if found.shape[1] < k:
            pad = k - found.shape[1]
            scores = np.hstack([scores, np.full((len(queries), pad), -np.inf, np.float32)])
            found = np.hstack([found, np.full((len(queries), pad), -1, np.int64)])
        return scores.astype(np.float32), found

    def best(self, queries: np.ndarray, excluded: frozenset[int] | None = None) -> np.ndarray:
        """Each query's highest cosine to any live vector (none of ``excluded``); -1.0 when there is none."""
        if self.live == 0 or not len(queries):
            return np.full(len(queries), -1.0, dtype=np.float32)
        scores, ids = self.search(queries, 1, None, excluded)
        return np.where(ids[:, 0] >= 0, scores[:, 0], -1.0).astype(np.float32)

    # -- snapshot (the file layouts: ltm.store.embedded.snapshot) -----------------------------------------------------
    def save(self, path: Path) -> None:
        """Write the snapshot atomically: flat as ids + float16 vectors, HNSW streamed by FAISS."""
        header = {
            "last_seq": self.snapshot_seq,
            "last_tseq": self.last_tseq,
            "kind": self.kind,
            "dim": self.dim,
            "ghosts": sorted(self.ghosts),
            "binding": self.binding,
        }
        snapshot.write(path, self.index, header)
        self.graph_changes = 0

    @property
    def damaged(self) -> bool:
        """True when the background check of a big snapshot found its vectors corrupted: rebuild."""
        return self._loaded is not None and self._loaded.damaged

    def _own(self) -> None:
        """Before any write: swap a memory-mapped (read-only) index for an in-RAM copy."""
        if self._loaded is not None and self._loaded.mapped:
            self.index = self._loaded.owned()
            self._loaded.close()

    @classmethod
    def load(cls, path: Path, dim: int, inline_max: int | None = None) -> VectorIndex | None:
        """The snapshot at ``path``; None when it is missing, truncated, corrupted or of another dim.

        A big HNSW payload (above ``inline_max`` bytes, default ``snapshot.INLINE_VERIFY_MAX``) is
        memory-mapped and its vectors are checked in the background (:attr:`damaged`); the first write makes
        an in-RAM copy. A flat snapshot is always read into RAM."""
        loaded = snapshot.read(path, snapshot.INLINE_VERIFY_MAX if inline_max is None else inline_max)
        if loaded is None:
            return None
        header = loaded.header
        if header.get("dim") != dim or header.get("kind") not in ("flat", "hnsw") or int(loaded.index.d) != dim:
            loaded.close()
            return None
        index = cls(dim, header["kind"])
        index.index = loaded.index
        index.halved = index.kind == "flat" and isinstance(
            faiss.downcast_index(index.index.index), faiss.IndexScalarQuantizer
        )
        index._loaded = None if header["kind"] == "flat" else loaded  # flat: in RAM, nothing to check later
        index.last_seq, index.last_tseq = int(header["last_seq"]), int(header["last_tseq"])
        index.ghosts = {int(g) for g in header["ghosts"]}
        binding = header.get("binding")
        index.binding = binding if isinstance(binding, dict) else None
        return index


def _inverse_norms(copies: np.ndarray) -> np.ndarray:
    """1 / each row's norm (float32)."""
    rows = np.asarray(copies, dtype=np.float32)
    return np.asarray(1.0 / np.sqrt(np.maximum(np.einsum("ij,ij->i", rows, rows), 1e-30)), dtype=np.float32)
