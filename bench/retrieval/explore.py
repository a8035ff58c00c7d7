"""Fusion experiments on cached candidate lists (dev/test split), to choose the store's fusion on public data.

Signals: stemmed BM25 over "speaker: text" (what the store's porter FTS5 index computes) and MiniLM cosine over
"speaker: text" or bare text; each gives its top 100 with scores. Fusions are scored on the dev split
(REALTALK chats 1-5, MADial even-numbered dialogues) and reported on the test split (the rest).

    python -m bench.retrieval.explore
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench.retrieval import baselines
from bench.retrieval.metrics import mean, score
from bench.retrieval.run import DATA_DIR, template
from ltm.store.search.when import query_window

CACHE = DATA_DIR / "cache"
Cand = list[tuple[int, float]]


def embed(model: Any, texts: list[str]) -> np.ndarray:
    key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:20]
    path = CACHE / f"{key}.npy"
    if path.exists():
        cached: np.ndarray = np.load(path)
        return cached
    vecs = np.array(model.get_text_embedding_batch(texts), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vecs)
    return vecs


def is_dev(name: str, conv_id: str, qid: str) -> bool:
    """The dev half: REALTALK chats 1-5, MADial's even-numbered dialogues, FriendsQA's dev file (its question ids
    start with the half: bench.retrieval.fetch.friendsqa)."""
    if name.startswith("friendsqa"):
        return qid.startswith("dev:")
    if name == "realtalk":
        return int(conv_id.split("_")[1]) <= 5
    return int(qid.rsplit(":", 1)[1]) % 2 == 0


def candidates(data: dict[str, Any], model: Any) -> list[dict[str, Any]]:
    out = []
    for conv in data["conversations"]:
        turns = conv["turns"]
        ids = [t["id"] for t in turns]
        bm25 = baselines.BM25([template(t["speaker"], t["text"]) for t in turns])
        spoken = embed(model, [template(t["speaker"], t["text"]) for t in turns])
        bare = embed(model, [t["text"] for t in turns])
        qvecs = embed(model, [q["question"] for q in conv["questions"]])
        newest = max(t["time"] for t in turns)  # relative dates count from the newest message, as the store does
        for q, qv in zip(conv["questions"], qvecs, strict=True):
            kw = bm25.scores(q["question"])
            korder = [int(i) for i in np.argsort(-kw, kind="stable")[:100] if kw[i] > 0]
            cands = {
                "kw": [(i, float(kw[i])) for i in korder],
                "_t": [(i, float(t["time"])) for i, t in enumerate(turns)],
            }
            allsims = spoken @ qv
            for name, mat in (("dense", spoken), ("bare", bare)):
                sims = mat @ qv
                order = np.argsort(-sims, kind="stable")[:100]
                cands[name] = [(int(i), float(sims[i])) for i in order]
            window = query_window(q["question"], newest)
            if window is not None:
                inside = [i for i, t in enumerate(turns) if window[0] <= t["time"] < window[1]]
                cands["time"] = sorted(((i, float(allsims[i])) for i in inside), key=lambda x: -x[1])[:50]
            out.append(
                {
                    "ids": ids,
                    "evidence": q["evidence"],
                    "category": q["category"],
                    "cands": cands,
                    "dev": is_dev(data["name"], conv["id"], q["id"]),
                    "times": [t["time"] for t in turns],
                }
            )
    return out


def wrrf(wk: float, k: int, dense: str = "dense") -> Callable[[dict[str, Cand]], list[int]]:
    def fuse(c: dict[str, Cand]) -> list[int]:
        s: dict[int, float] = {}
        for name, w in (("kw", wk), (dense, 1 - wk)):
            for r, (i, _) in enumerate(c[name], 1):
                s[i] = s.get(i, 0.0) + w / (k + r)
        return sorted(s, key=lambda i: (-s[i], i))[:10]

    return fuse


def convex(alpha: float, dense: str = "dense", norm: str = "max") -> Callable[[dict[str, Cand]], list[int]]:
    """alpha * keyword score / best keyword score + (1 - alpha) * normalised cosine."""

    def fuse(c: dict[str, Cand]) -> list[int]:
        s: dict[int, float] = {}
        kw, dn = c["kw"], c[dense]
        top = kw[0][1] if kw else 1.0
        for i, v in kw:
            s[i] = s.get(i, 0.0) + alpha * v / top
        hi, lo = dn[0][1], dn[-1][1]
        for i, v in dn:
            x = (v - lo) / (hi - lo) if norm == "minmax" and hi > lo else v
            s[i] = s.get(i, 0.0) + (1 - alpha) * x
        return sorted(s, key=lambda i: (-s[i], i))[:10]

    return fuse


def calibrated(
    wk: float,
    depth: int = 50,
    dense: str = "dense",
    kw_floor: str = "zero",
    neighbours: float = 0.0,
    wt: float = 0.0,
    gap: float | None = None,
) -> Callable[[dict[str, Cand]], list[int]]:
    """Each signal min-max normalised between its top and its score at ``depth`` (keyword: 0 when fewer
    matched), flat signals dropped; optionally a share of the best neighbouring turn's score (only from a
    neighbour said within ``gap`` seconds, when given)."""

    def norm(hits: Cand, zero_floor: bool) -> dict[int, float]:
        hits = hits[:depth]
        if not hits:
            return {}
        top = hits[0][1]
        floor = 0.0 if zero_floor and len(hits) < depth else hits[-1][1]
        if kw_floor == "zero" and zero_floor:
            floor = 0.0
        if top - floor <= 1e-9:
            return {}
        return {i: (v - floor) / (top - floor) for i, v in hits}

    def fuse(c: dict[str, Cand]) -> list[int]:
        kn, dn = norm(c["kw"], True), norm(c[dense], False)
        s = {i: wk * kn.get(i, 0.0) + (1 - wk) * dn.get(i, 0.0) for i in set(kn) | set(dn)}
        if wt and c.get("time"):
            top, floor = c[dense][0][1], c[dense][min(depth, len(c[dense])) - 1][1]
            for i, v in c["time"]:
                s[i] = s.get(i, 0.0) + wt
                if i not in dn and top > floor:
                    s[i] += (1 - wk) * max(0.0, (v - floor) / (top - floor))
        if neighbours:
            times = c["_t"]

            def near(i: int, j: int) -> float:
                if gap is not None and not (0 <= j < len(times) and abs(times[i][1] - times[j][1]) <= gap):
                    return 0.0
                return s.get(j, 0.0)

            s = {i: v + neighbours * max(near(i, i - 1), near(i, i + 1)) for i, v in s.items()}
        return sorted(s, key=lambda i: (-s[i], i))[:10]

    return fuse


def single(name: str) -> Callable[[dict[str, Cand]], list[int]]:
    return lambda c: [i for i, _ in c[name][:10]]


def evaluate(rows: Sequence[dict[str, Any]], fuse: Callable[[dict[str, Cand]], list[int]]) -> dict[str, float]:
    return mean([score([r["ids"][i] for i in fuse(r["cands"])], r["evidence"]) for r in rows])


def main() -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from bench.retrieval.cache import local_model

    model = local_model()
    systems: dict[str, Callable[[dict[str, Cand]], list[int]]] = {
        "bm25": single("kw"),
        "dense": single("dense"),
        "bare": single("bare"),
        "rrf60": wrrf(0.5, 60),
    }
    for wk in (0.3, 0.4, 0.5, 0.6, 0.7):
        for k in (5, 20, 60):
            systems[f"wrrf w={wk} k={k}"] = wrrf(wk, k)
    for a in (0.2, 0.3, 0.4, 0.5, 0.6):
        systems[f"convex a={a} max"] = convex(a)
        systems[f"convex a={a} minmax"] = convex(a, norm="minmax")
    for wk in (0.2, 0.3, 0.4, 0.5, 0.6):
        for kf in ("zero", "depth"):
            systems[f"cal w={wk} kf={kf}"] = calibrated(wk, kw_floor=kf)
        systems[f"cal w={wk} d100"] = calibrated(wk, depth=100)
        systems[f"cal w={wk} bare"] = calibrated(wk, dense="bare")
        for wt in (0.1, 0.2, 0.3, 0.5):
            systems[f"cal w={wk} time={wt}"] = calibrated(wk, wt=wt)
        for nb in (0.1, 0.2, 0.3, 0.4):
            systems[f"cal w={wk} nb={nb}"] = calibrated(wk, neighbours=nb)
            for hours in (1, 6, 24):
                systems[f"cal w={wk} nb={nb} gap={hours}h"] = calibrated(wk, neighbours=nb, gap=hours * 3600.0)
            systems[f"cal w={wk} nb={nb} gap=6h bare"] = calibrated(wk, neighbours=nb, gap=6 * 3600.0, dense="bare")
    only = os.environ.get("SYSTEMS")
    if only:
        systems = {k: v for k, v in systems.items() if re.search(only, k)}
    for path in sorted(DATA_DIR.glob(os.environ.get("SETS", "*") + ".json")):
        data = json.loads(path.read_text("utf-8"))
        rows = candidates(data, model)
        dev = [r for r in rows if r["dev"]]
        test = [r for r in rows if not r["dev"]]
        print(
            f"## {data['name']}: dev {len(dev)}, test {len(test)}, "
            f"with a date window {sum(1 for r in rows if 'time' in r['cands'])}"
        )
        timed = [r for r in rows if "time" in r["cands"]]
        for name, fuse in systems.items():
            d, t = evaluate(dev, fuse), evaluate(test, fuse)
            cats = {
                c: evaluate([r for r in rows if r["category"] == c], fuse)["recall@10"]
                for c in sorted({r["category"] for r in rows})
            }
            w = evaluate(timed, fuse)["recall@10"] if timed else 0.0
            print(
                f"{name:28s} dev r@10 {d['recall@10']:.3f} mrr {d['mrr']:.3f} | "
                f"test r@10 {t['recall@10']:.3f} mrr {t['mrr']:.3f} | dated {w:.3f} | "
                + " ".join(f"{c} {v:.3f}" for c, v in cats.items()),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
