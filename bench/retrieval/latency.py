"""Search and ingest time of this tree's store against an older commit's, measured in one run.

The older commit's ``ltm/`` is extracted (``git archive``) into a temp dir; each round runs one worker
process per tree, alternating, on the same data: 10,000 real turns (REALTALK from bench/data/ when fetched,
else the synthetic fixture repeated), added with ``add_batch`` in batches of 500, then the same 200 queries
in each mode. The hash embedding is used so the figures are the store's own work (the model's time,
identical for both trees, would hide it); reported: ingest seconds and search p50 per mode, medians over
the rounds, and after/before ratios.

    python -m bench.retrieval.latency --baseline fb8cae6 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a baseline's ltm may predate the name: the worker imports it from that tree
    from ltm.store import Mode

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data" / "realtalk.json"
FIXTURE = ROOT / "tests" / "data" / "retrieval_fixture.json"
MODES: tuple[Mode, ...] = ("hybrid", "keyword", "dense")


def corpus(n: int, queries: int) -> tuple[list[dict[str, Any]], list[str]]:
    """``n`` turns and ``queries`` questions (real ones when REALTALK is fetched)."""
    data = json.loads((DATA if DATA.exists() else FIXTURE).read_text("utf-8"))
    turns = [t for c in data["conversations"] for t in c["turns"]]
    questions = [q["question"] for c in data["conversations"] for q in c["questions"]]
    out = [
        dict(t, text=t["text"] if i < len(turns) else f"{t['text']} ({i // len(turns)})")
        for i, t in enumerate(turns[j % len(turns)] for j in range(n))
    ]
    return out, [questions[i % len(questions)] for i in range(queries)]


def worker(n: int, queries: int) -> dict[str, Any]:
    """Run inside one tree: ingest ``n`` turns, then time every query in every mode."""
    from ltm.config import Settings
    from ltm.message import Message
    from ltm.store import MemoryStorage

    turns, questions = corpus(n, queries)
    messages = [
        Message(content=t["text"], role=t["speaker"], sent_from=t["speaker"], created_at=t["time"]) for t in turns
    ]
    with tempfile.TemporaryDirectory(prefix="ltm-latency-") as tmp:
        settings = Settings(storage_dir=Path(tmp), embedding="hash")
        with MemoryStorage("latency", kind="bench", settings=settings) as store:
            started = time.perf_counter()
            for start in range(0, len(messages), 500):
                store.add_batch(messages[start : start + 500])
            ingest = time.perf_counter() - started
            out: dict[str, Any] = {"ingest_seconds": ingest}
            for mode in MODES:
                store.search(questions[0], k=10, mode=mode)  # warm
                times = []
                for q in questions:
                    started = time.perf_counter()
                    store.search(q, k=10, mode=mode)
                    times.append(1000 * (time.perf_counter() - started))
                out[f"{mode}_p50_ms"] = statistics.median(times)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Store search/ingest time: this tree vs an older commit.")
    parser.add_argument("--baseline", default="fb8cae6", help="git ref of the tree to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.messages, args.queries)))
        return 0
    with tempfile.TemporaryDirectory(prefix="ltm-baseline-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.baseline, "ltm"], check=True, capture_output=True
        ).stdout
        old = Path(tmp) / "tree"
        old.mkdir()
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        # each worker runs outside both trees: ``python -m`` puts the working directory first on sys.path
        trees = {"before": str(old), "after": str(ROOT)}
        runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for _ in range(args.rounds):
            for name, src in trees.items():
                env = dict(
                    os.environ,
                    PYTHONPATH=f"{src}{os.pathsep}{ROOT}",
                    HF_HUB_OFFLINE="1",
                    TRANSFORMERS_OFFLINE="1",
                    TOKENIZERS_PARALLELISM="false",
                )
                done = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "bench.retrieval.latency",
                        "--worker",
                        "--messages",
                        str(args.messages),
                        "--queries",
                        str(args.queries),
                    ],
                    env=env,
                    cwd=tmp,
                    check=True,
                    capture_output=True,
                    text=True,
                )
                runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    keys = list(runs["before"][0])
    print(
        f"{args.messages} messages, {args.queries} queries, hash embedding, {args.rounds} rounds "
        f"(medians); baseline {args.baseline}; load {os.getloadavg()[0]:.1f}\n"
    )
    print("| figure | before | after | after/before |\n|---|---:|---:|---:|")
    for key in keys:
        before = statistics.median(r[key] for r in runs["before"])
        after = statistics.median(r[key] for r in runs["after"])
        print(f"| {key} | {before:.3f} | {after:.3f} | {after / before:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
