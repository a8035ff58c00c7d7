"""Store every public set through the ordinary path and score keyword, dense and hybrid search.

Each conversation becomes its own namespace: ``add_batch`` of ``Message(role=speaker, sent_from=speaker,
content=turn, created_at=turn time)`` (no metadata, no helper), then ``search(question, k=10, mode=...)``
for every question. Beside the store, in the same run: Okapi BM25 with Porter stemming over
"speaker: text", exact cosine search with the same embedding model over bare text and over
"speaker: text", and plain reciprocal-rank fusion of that BM25 and dense ("speaker: text").

    python -m bench.retrieval.fetch                  # once: the public sets into bench/data/ (git-ignored)
    python -m bench.retrieval                        # every set in bench/data/, local MiniLM, prints tables
    python -m bench.retrieval --write bench/results/retrieval.md  # the tables BENCHMARKS.md is built from
    python -m bench.page                             # then BENCHMARKS.md again
    python -m bench.retrieval --session-dates        # and each set again, every turn at its session's date
    python -m bench.retrieval --data tests/data/retrieval_fixture.json --embedding hash   # machinery check
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import report
from bench.retrieval import baselines
from bench.retrieval.metrics import METRICS, mean, score
from ltm.store import Mode

ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = ROOT / "bench" / "data"
RESULTS = ROOT / "bench" / "results" / "retrieval.json"
MODES: tuple[Mode, ...] = ("keyword", "dense", "hybrid")
SYSTEMS = (
    "ltm keyword",
    "ltm dense",
    "ltm hybrid",
    "BM25 stemmed",
    "dense text",
    "dense speaker: text",
    "RRF(BM25, dense speaker)",
)
START, END = "<!-- retrieval:start -->", "<!-- retrieval:end -->"


def load(paths: Sequence[Path]) -> list[dict[str, Any]]:
    return [json.loads(p.read_text("utf-8")) for p in paths]


def session_dated(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with every turn stamped at its session's first time: what a harness stores when it knows only
    each session's date (LoCoMo's shape: every turn of a sitting at one time). Turns without a session keep
    theirs; the set is renamed ``<name>@session``."""
    conversations = []
    for conv in data["conversations"]:
        first: dict[Any, float] = {}
        turns = []
        for t in conv["turns"]:
            session = t.get("session")
            when = t["time"] if session is None else first.setdefault(session, t["time"])
            turns.append({**t, "time": when})
        conversations.append({**conv, "turns": turns})
    return {**data, "name": f"{data['name']}@session", "conversations": conversations}


def _has_sessions(data: dict[str, Any]) -> bool:
    return any("session" in t for conv in data["conversations"] for t in conv["turns"])


def template(speaker: str, text: str) -> str:
    return f"{speaker}: {text}"


def evaluate_set(
    data: dict[str, Any],
    embedding: str,
    storage_dir: Path,
    modes: Sequence[Mode] = MODES,
    cache: Path | None = None,
    runtime: str = "auto",
) -> dict[str, Any]:
    """Rankings of every system for every question of one set, plus ingest and search times."""
    from ltm.config import Settings
    from ltm.llm.embeddings import resolve_embedding
    from ltm.message import Message
    from ltm.store import MemoryStorage

    settings = Settings(storage_dir=storage_dir, embedding=embedding, local_runtime=runtime)
    model = resolve_embedding(settings)
    if cache is not None:
        from bench.retrieval.cache import CachedEmbedding

        model = CachedEmbedding(model, cache)
    ranked: dict[str, dict[str, list[str]]] = {s: {} for s in SYSTEMS}
    questions: list[dict[str, Any]] = []
    ingest = 0.0
    search_ms: dict[str, list[float]] = {m: [] for m in modes}
    tokens: dict[str, list[int]] = {"top5": [], "top10": []}  # what the hybrid's hits hand to a model
    for conv in data["conversations"]:
        turns, qs = conv["turns"], conv["questions"]
        if not qs:
            continue
        ids = [t["id"] for t in turns]
        session = {t["id"]: t.get("session", t["id"]) for t in turns}
        messages = [
            Message(
                id=f"{conv['id']}/{t['id']}",
                content=t["text"],
                role=t["speaker"],
                sent_from=t["speaker"],
                created_at=t["time"],
            )
            for t in turns
        ]
        store = MemoryStorage(conv["id"], kind="bench", settings=settings, embedding=model)
        try:
            started = time.perf_counter()
            store.add_batch(messages)
            ingest += time.perf_counter() - started
            for q in qs:
                for mode in modes:
                    started = time.perf_counter()
                    hits = store.search(q["question"], k=10, mode=mode)
                    search_ms[mode].append(1000 * (time.perf_counter() - started))
                    ranked[f"ltm {mode}"][q["id"]] = [h.message.id.split("/", 1)[1] for h in hits]
                    if mode == "hybrid":
                        tokens["top5"].append(context_tokens(hits[:5]))
                        tokens["top10"].append(context_tokens(hits))
        finally:
            store.close()
        bm25 = baselines.BM25([template(t["speaker"], t["text"]) for t in turns])
        bare = np.array(model.get_text_embedding_batch([t["text"] for t in turns]), dtype=np.float32)
        spoken = np.array(
            model.get_text_embedding_batch([template(t["speaker"], t["text"]) for t in turns]), dtype=np.float32
        )
        bare /= np.linalg.norm(bare, axis=1, keepdims=True)
        spoken /= np.linalg.norm(spoken, axis=1, keepdims=True)
        for q in qs:
            qv = np.array(model.get_query_embedding(q["question"]), dtype=np.float32)
            qv /= np.linalg.norm(qv)
            kw = bm25.top(q["question"], 50)
            dn = baselines.dense_top(spoken, qv, 50)
            ranked["BM25 stemmed"][q["id"]] = [ids[i] for i in kw[:10]]
            ranked["dense text"][q["id"]] = [ids[i] for i in baselines.dense_top(bare, qv, 10)]
            ranked["dense speaker: text"][q["id"]] = [ids[i] for i in dn[:10]]
            ranked["RRF(BM25, dense speaker)"][q["id"]] = [ids[i] for i in baselines.rrf([kw, dn], 10)]
            questions.append(
                {
                    "id": q["id"],
                    "category": q["category"],
                    "evidence": q["evidence"],
                    "shape": shape(q["evidence"], session),
                }
            )
    return {
        "questions": questions,
        "ranked": ranked,
        "ingest_seconds": ingest,
        "search_ms_p50": {m: float(np.median(v)) if v else 0.0 for m, v in search_ms.items()},
        "search_ms_p95": {m: float(np.percentile(v, 95)) if v else 0.0 for m, v in search_ms.items()},
        "context_tokens": {n: float(np.median(v)) if v else 0.0 for n, v in tokens.items()},
        "turns": sum(len(c["turns"]) for c in data["conversations"] if c["questions"]),
    }  # the turns stored


def context_tokens(hits: Sequence[Any]) -> int:
    """The tokens (cl100k) of the hits' contents as a prompt holds them, one "speaker: text" line each."""
    from ltm.llm.tokens import count_tokens

    return count_tokens("\n".join(template(h.message.role, h.message.content) for h in hits))


SHAPES = ("one turn", "2+ turns", "2+ sessions")


def shape(evidence: Sequence[str], session: dict[str, Any]) -> list[str]:
    """The evidence shapes a question belongs to (:data:`SHAPES`): one turn, or two or more; two or more sessions
    (a turn without a session counts as its own)."""
    out = ["one turn" if len(evidence) < 2 else "2+ turns"]
    if len({session.get(e, e) for e in evidence}) > 1:
        out.append("2+ sessions")
    return out


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    """Mean metrics per system, overall, per category and per evidence shape (:func:`shape`)."""
    questions = result["questions"]
    categories = sorted({q["category"] for q in questions})
    out: dict[str, Any] = {"n": len(questions), "categories": {}, "shapes": {}, "systems": {}}
    for c in categories:
        out["categories"][c] = sum(1 for q in questions if q["category"] == c)
    shapes = [s for s in SHAPES if any(s in q.get("shape", ()) for q in questions)]
    for s in shapes:
        out["shapes"][s] = sum(1 for q in questions if s in q.get("shape", ()))
    for system, ranked in result["ranked"].items():
        if not ranked:
            continue
        rows = {q["id"]: score(ranked[q["id"]], q["evidence"]) for q in questions}
        per_cat = {c: mean([rows[q["id"]] for q in questions if q["category"] == c]) for c in categories}
        per_shape = {s: mean([rows[q["id"]] for q in questions if s in q.get("shape", ())]) for s in shapes}
        out["systems"][system] = {"all": mean(list(rows.values())), "by_category": per_cat, "by_shape": per_shape}
    return out


def type_table(summary: dict[str, Any], result: dict[str, Any]) -> str:
    """One sentence (:func:`with_types` puts it on the set's title line, so the page grows no longer): the hybrid's
    recall@5 / @10 overall, per question type and per evidence shape, its search latency and the context tokens
    its top 5 / top 10 hold (medians). With the vector cache (the default) a question's vector is embedded on its
    first run only: the latency is the store's work then, and ``bench.retrieval.latency`` times the model."""
    hybrid = summary["systems"]["ltm hybrid"]
    rows = [("all", summary["n"], hybrid["all"])]
    rows += [(c, n, hybrid["by_category"][c]) for c, n in summary["categories"].items()]
    rows += [(s, n, hybrid["by_shape"][s]) for s, n in summary.get("shapes", {}).items()]
    p50, p95 = result["search_ms_p50"].get("hybrid", 0.0), result.get("search_ms_p95", {}).get("hybrid", 0.0)
    tokens = result.get("context_tokens", {})
    cells = ", ".join(f"{label} ({n}) {m['recall@5']:.3f} / {m['recall@10']:.3f}" for label, n, m in rows)
    return (
        f"ltm hybrid, recall@5 / recall@10 by question type: {cells}; search p50 {p50:.1f} ms, p95 "
        f"{p95:.1f} ms; context tokens of the top 5 / top 10 (median) {tokens.get('top5', 0):.0f} / "
        f"{tokens.get('top10', 0):.0f}"
    )


def table(name: str, summary: dict[str, Any], extra: str = "") -> str:
    """Markdown: one row per system with the five metrics, then recall@10 per category."""
    cats = list(summary["categories"])
    head = (
        f"**{name}** ({summary['n']} questions{extra})\n\n| system | "
        + " | ".join(METRICS)
        + " | "
        + " | ".join(f"r@10 {c} ({summary['categories'][c]})" for c in cats)
        + " |"
    )
    lines = [head, "|---|" + "---:|" * (len(METRICS) + len(cats))]
    for system, s in summary["systems"].items():
        cells = [f"{s['all'][m]:.3f}" for m in METRICS] + [f"{s['by_category'][c]['recall@10']:.3f}" for c in cats]
        bold = "**" if system == "ltm hybrid" else ""
        lines.append(f"| {bold}{system}{bold} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def with_types(table_text: str, types: str) -> str:
    """``table_text`` (:func:`table`) with ``types`` (:func:`type_table`) at the end of its title line."""
    title, rest = table_text.split("\n", 1)
    return f"{title}. {types}.\n{rest}"


def write_section(path: Path, text: str) -> None:
    """Replace the text between the retrieval markers of ``path`` (appended when absent)."""
    report.write_section(path, text, START, END)


def run(
    paths: Sequence[Path],
    embedding: str = "local",
    progress: Callable[[str], None] = print,
    cache: Path | None = None,
    runtime: str = "auto",
    session_dates: bool = False,
) -> dict[str, Any]:
    """Evaluate every set; returns {set name: {summary, ingest, search p50, ranked}}. ``session_dates``: each
    set whose turns name their session is stored again with :func:`session_dated` times, beside itself."""
    out: dict[str, Any] = {}
    sets = load(paths)
    if session_dates:
        sets = [
            variant for data in sets for variant in ((data, session_dated(data)) if _has_sessions(data) else (data,))
        ]
    for data in sets:
        with tempfile.TemporaryDirectory(prefix="ltm-retrieval-") as tmp:
            started = time.perf_counter()
            result = evaluate_set(data, embedding, Path(tmp), cache=cache, runtime=runtime)
        out[data["name"]] = {
            "summary": summarise(result),
            "ingest_seconds": result["ingest_seconds"],
            "search_ms_p50": result["search_ms_p50"],
            "search_ms_p95": result["search_ms_p95"],
            "context_tokens": result["context_tokens"],
            "turns": result["turns"],
            "source": data.get("source"),
            "commit": data.get("commit"),
            "ranked": result["ranked"],
        }
        progress(f"{data['name']}: {len(result['questions'])} questions in {time.perf_counter() - started:.0f} s")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Retrieval quality on public conversational-memory sets.")
    parser.add_argument("--data", type=Path, nargs="*", help="set files (default: every bench/data/*.json)")
    parser.add_argument("--embedding", choices=["local", "hash"], default="local")
    parser.add_argument(
        "--runtime",
        choices=["auto", "onnx", "onnx-int8", "torch"],
        default="auto",
        help="the local model's runtime (LTM_LOCAL_RUNTIME); onnx-int8 vectors are cached apart",
    )
    parser.add_argument("--json", type=Path, help="write all numbers and rankings here")
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="embed everything afresh (default: vectors cached in bench/data/cache/vectors.sqlite; "
        "quality only, times come from bench.retrieval.latency)",
    )
    parser.add_argument("--write", type=Path, help="replace the retrieval section of this Markdown file")
    parser.add_argument(
        "--session-dates",
        action="store_true",
        help="also store each set with every turn at its session's first time (LoCoMo's shape)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    paths = args.data or sorted(DATA_DIR.glob("*.json"))
    if not paths:
        parser.error("no sets: run `python -m bench.retrieval.fetch` first, or pass --data")
    name = "vectors-int8.sqlite" if args.runtime == "onnx-int8" else "vectors.sqlite"
    cache = None if args.no_cache or args.embedding != "local" else DATA_DIR / "cache" / name
    results = run(paths, args.embedding, cache=cache, runtime=args.runtime, session_dates=args.session_dates)
    tables = []
    for name, r in results.items():
        extra = f", {r['turns']} turns; ingest {r['ingest_seconds']:.1f} s"
        tables.append(with_types(table(name, r["summary"], extra), type_table(r["summary"], r)))
    text = "\n\n".join(tables)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results) + "\n", "utf-8")
    if args.write:
        write_section(args.write, text)
    return 0
