"""Is a long turn found by any part of it? Recall for questions about the first window of a long turn and later.

The public sets (``python -m bench.retrieval.fetch``) are turned into long turns: each conversation's consecutive
turns are joined, as "speaker: text" lines, into messages of 1-4 KB (a length drawn per message, seeded), the
way a long assistant answer or a pasted transcript arrives. A question's evidence becomes the messages holding its
evidence turns, and its part is where those turns sit in their message, in the local model's word pieces: all
within the model's first window (``first``), all past it (``later``), or some of each (``across``).

Each message's vector is made three ways from the same model windows (``WINDOW_OVERLAP`` pieces of overlap):
``first`` (the first window only: what ltm stored before), ``mean`` (the windows' mean weighted by their pieces:
what ``OnnxModel.text_vectors`` stores now; checked against it) and ``max`` (one vector per window, a message
scored by its best window: the multi-vector alternative, numpy only, the engines keep one vector a message).
Dense recall@10 of each comes from exact cosines in numpy; ``first`` and ``mean`` are also stored in a real store
(``add_batch(..., vectors=...)``) and searched there, dense and hybrid (the default).

    python -m bench.retrieval.long_turns                          # friendsqa, realtalk, qmsum (12 meetings)
    python -m bench.retrieval.long_turns --sets friendsqa --meetings 4
    python -m bench.retrieval.long_turns --write bench/results/long_turns.md   # the table BENCHMARKS.md shows
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import random
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.retrieval.metrics import recall
from ltm.config import Settings
from ltm.message import Message

DATA = Path(__file__).resolve().parents[1] / "data"
LOW, HIGH = 1024, 4096
PARTS = ("first", "later", "across")
K = 10


@dataclass
class LongTurn:
    id: str
    text: str
    time: float
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)  # turn id -> word pieces [start, end)


def join_turns(turns: list[dict[str, Any]], rng: random.Random, tokenizer: Any, prefix: str) -> list[LongTurn]:
    """Consecutive turns joined into messages of LOW-HIGH bytes, with each turn's word-piece span."""
    out: list[LongTurn] = []
    group: list[dict[str, Any]] = []
    target = rng.randint(LOW, HIGH)
    size = 0
    for turn in turns:
        line = f"{turn['speaker']}: {turn['text']}"
        if group and size + len(line.encode()) > HIGH:
            out.append(_make(group, tokenizer, f"{prefix}{len(out)}"))
            group, size, target = [], 0, rng.randint(LOW, HIGH)
        group.append(turn)
        size += len(line.encode()) + 1
        if size >= target:
            out.append(_make(group, tokenizer, f"{prefix}{len(out)}"))
            group, size, target = [], 0, rng.randint(LOW, HIGH)
    if group:
        out.append(_make(group, tokenizer, f"{prefix}{len(out)}"))
    return out


def _make(group: list[dict[str, Any]], tokenizer: Any, ident: str) -> LongTurn:
    lines, starts = [], []
    at = 0
    for turn in group:
        line = f"{turn['speaker']}: {turn['text']}"
        starts.append((turn["id"], at, at + len(line)))
        lines.append(line)
        at += len(line) + 1
    text = "\n".join(lines)
    offsets = [start for start, _ in tokenizer.encode(text, add_special_tokens=False).offsets]
    spans = {tid: (bisect.bisect_left(offsets, a), bisect.bisect_left(offsets, b)) for tid, a, b in starts}
    return LongTurn(ident, text, float(group[0]["time"]), spans)


def part(turns: list[LongTurn], evidence: list[str], window: int) -> str:
    """Where a question's evidence turns sit in their messages: first window, later, or across."""
    where = set()
    for turn in turns:
        for tid in evidence:
            if tid in turn.spans:
                start, end = turn.spans[tid]
                where.add("first" if end <= window else "later" if start >= window else "across")
    return where.pop() if len(where) == 1 else "across"


def window_vectors(model: Any, texts: list[str]) -> tuple[list[np.ndarray], list[list[int]]]:
    """Each text's window vectors (rows) and their word-piece counts, as ``text_vectors`` runs them."""
    encodings = model._tokenizer.encode_batch(texts)
    flat = [w for e in encodings for w in (e, *e.overflowing)]
    vectors = np.concatenate([model._embed_encodings(flat[i : i + 256]) for i in range(0, len(flat), 256)])
    out, sizes, at = [], [], 0
    for e in encodings:
        n = 1 + len(e.overflowing)
        out.append(vectors[at : at + n])
        sizes.append([len(w.ids) for w in (e, *e.overflowing)])
        at += n
    return out, sizes


def pooled(windows: list[np.ndarray], sizes: list[list[int]]) -> np.ndarray:
    rows = []
    for w, s in zip(windows, sizes, strict=True):
        v = (w * np.array(s, dtype=np.float32)[:, None]).sum(axis=0) if len(w) > 1 else w[0]
        rows.append(v / np.linalg.norm(v))
    return np.stack(rows).astype(np.float32)


def evaluate(name: str, meetings: int, seed: int, tmp: Path, model: Any) -> dict[str, Any]:
    """Every conversation of the set as long turns in ONE namespace (a question competes with all of them)."""
    from ltm.store import MemoryStorage

    data = json.loads((DATA / f"{name}.json").read_text())
    conversations = [c for c in data["conversations"] if c["questions"]]
    if name == "qmsum":
        conversations = conversations[:meetings]
    rng = random.Random(seed)
    window = model._tokenizer.truncation["max_length"] - 2  # the first window's word pieces, without [CLS] [SEP]
    joined = [join_turns(c["turns"], rng, model._tokenizer, f"c{i}-") for i, c in enumerate(conversations)]
    turns = [t for part_ in joined for t in part_]
    texts = [t.text for t in turns]
    windows, sizes = _cached_windows(name, seed, len(conversations), model, texts)
    first = np.stack([w[0] for w in windows])
    mean = pooled(windows, sizes)
    check = model.text_vectors(texts[:8])  # the numpy mean is what the store gets from the model
    assert np.allclose(check, mean[:8], atol=1e-5), "pooled() no longer matches OnnxModel.text_vectors"
    owner = np.concatenate([[i] * len(w) for i, w in enumerate(windows)])
    all_windows = np.concatenate(windows)
    ids = [t.id for t in turns]
    stores = {}
    for variant, vectors in (("first", first), ("mean", mean)):
        store = MemoryStorage(name, kind="role", settings=Settings(storage_dir=tmp / variant, embedding="local"))
        store.add_batch(
            [Message(id=t.id, content=t.text, role="assistant", created_at=t.time) for t in turns], vectors=vectors
        )
        stores[variant] = store
    hits: dict[str, dict[str, list[tuple[float, ...]]]] = defaultdict(lambda: defaultdict(list))
    counts: dict[str, int] = defaultdict(int)
    for conversation, own in zip(conversations, joined, strict=True):
        for question in conversation["questions"]:
            evidence = sorted({t.id for t in own if any(e in t.spans for e in question["evidence"])})
            if not evidence:
                continue
            where = part(own, question["evidence"], window)
            counts[where] += 1
            qv = model.vectors([question["question"]])[0]
            best = np.full(len(turns), -2.0, dtype=np.float32)
            np.maximum.at(best, owner, all_windows @ qv)
            for variant, scores in (("first", first @ qv), ("mean", mean @ qv), ("max", best)):
                ranked = [ids[i] for i in np.argsort(-scores, kind="stable")[:K]]
                hits[f"numpy dense {variant}"][where].append(_at(ranked, evidence))
            for variant, store in stores.items():
                for mode in ("dense", "hybrid"):
                    found = [h.message.id for h in store.search(question["question"], K, mode=mode)]
                    hits[f"store {mode} {variant}"][where].append(_at(found, evidence))
    for store in stores.values():
        store.close()
    table = {
        key: {p: _mean(v[p]) for p in PARTS} | {"all": _mean([x for p in PARTS for x in v[p]])}
        for key, v in hits.items()
    }
    return {
        "set": name,
        "messages": len(turns),
        "windows_per_message": len(all_windows) / max(len(turns), 1),
        "questions": dict(counts),
        "recall@1/5/10": table,
    }


def _at(ranked: list[str], evidence: list[str]) -> tuple[float, ...]:
    return tuple(recall(ranked, evidence, k) for k in (1, 5, 10))


def _mean(rows: list[tuple[float, ...]]) -> tuple[float, ...]:
    return tuple(float(np.mean(c)) for c in zip(*rows, strict=True)) if rows else (float("nan"),) * 3


def _cached_windows(
    name: str, seed: int, n: int, model: Any, texts: list[str]
) -> tuple[list[np.ndarray], list[list[int]]]:
    """window_vectors, kept in bench/data/ (git-ignored) so a rerun does not embed the set again."""
    path = DATA / f"long_turns-{name}-{seed}-{n}.npz"
    if path.is_file():
        saved = np.load(path)
        if int(saved["count"]) == len(texts):
            cuts = np.cumsum(saved["lengths"])[:-1]
            sizes = [list(map(int, s)) for s in np.split(saved["sizes"], cuts)]
            return np.split(saved["vectors"], cuts), sizes
    windows, sizes = window_vectors(model, texts)
    np.savez(
        path,
        count=len(texts),
        lengths=np.array([len(w) for w in windows]),
        vectors=np.concatenate(windows),
        sizes=np.concatenate([np.array(s) for s in sizes]),
    )
    return windows, sizes


def render(results: list[dict[str, Any]]) -> str:
    """The before/after table BENCHMARKS.md shows: recall@10 by part, the first window alone -> the windows' mean."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    loads = ", ".join(f"{r['set']} {r['load']:.1f}" for r in results)
    lines = [
        f"`python -m bench.retrieval.long_turns --write bench/results/long_turns.md` ({when}; load average (1 min) "
        f"at the end of each set: {loads}). Recall@10, the first window alone (what ltm stored before) -> the "
        "windows' mean (now); each set's consecutive turns joined into messages of 1-4 KB, all in one namespace; "
        "a question is *first* when its evidence turns sit in the model's first window, *later* when all sit "
        "after it.",
        "",
        "| set | messages | windows / message | questions first / later / across | dense first | dense later "
        "| hybrid first | hybrid later | hybrid all |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        q, table = r["questions"], r["recall@1/5/10"]

        def cell(mode: str, where: str, table: dict[str, Any] = table) -> str:
            return f"{table[f'store {mode} first'][where][2]:.3f} -> {table[f'store {mode} mean'][where][2]:.3f}"

        lines.append(
            f"| {r['set']} | {r['messages']} | {r['windows_per_message']:.2f} | {q.get('first', 0)} / "
            f"{q.get('later', 0)} / {q.get('across', 0)} | {cell('dense', 'first')} | {cell('dense', 'later')} | "
            f"{cell('hybrid', 'first')} | {cell('hybrid', 'later')} | {cell('hybrid', 'all')} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", nargs="+", default=["friendsqa", "realtalk", "qmsum"])
    p.add_argument("--meetings", type=int, default=12, help="QMSum meetings used (the first ones with questions)")
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--out", type=Path, help="also write the results as JSON")
    p.add_argument("--write", type=Path, help="also write the before/after table (bench/results/long_turns.md)")
    args = p.parse_args(argv)

    from ltm.llm.local import onnx_model

    model = onnx_model(Settings(embedding="local"))
    results = []
    with tempfile.TemporaryDirectory(prefix="ltm-long-turns-") as tmp:
        for name in args.sets:
            start = time.perf_counter()
            result = evaluate(name, args.meetings, args.seed, Path(tmp), model)
            result["seconds"], result["load"] = time.perf_counter() - start, os.getloadavg()[0]
            results.append(result)
            q = result["questions"]
            print(
                f"\n{name}: {result['messages']} messages of {LOW}-{HIGH} bytes, "
                f"{result['windows_per_message']:.2f} model windows each; questions first {q.get('first', 0)}, "
                f"later {q.get('later', 0)}, across {q.get('across', 0)}; load {result['load']:.2f}"
            )
            print("| recall@1 / @5 / @10 | first | later | across | all |\n|---|---:|---:|---:|---:|")
            for key, row in sorted(result["recall@1/5/10"].items()):
                cells = [" / ".join(f"{x:.3f}" for x in row[c]) for c in (*PARTS, "all")]
                print(f"| {key} | " + " | ".join(cells) + " |", flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    if args.write:
        args.write.write_text(render(results))
    return results


if __name__ == "__main__":
    main()
