"""ltm's default search against ltm at another commit (or with one setting changed), in pairs:
``python -m bench.peers.pairs --size 100000 --baseline REF`` or ``--set READ_BESIDE_FROM=1000000000`` (a constant
of ``ltm.store.embedded.backend``; ``--set ltm.store.embedded.snapshot.HALF_FROM=1000000000``: of that module).

Fills one store with :mod:`bench.peers.corpus`'s rows (given vectors, batches of 1,000), copies it for each side, and
starts one worker process per side (this module with ``--serve``): this tree, and either this tree with commit
REF's ``ltm`` package ahead of it on the path (``git archive``, as :mod:`bench.peers.stores` does) or this tree
with a module constant changed. Each side answers every question once before the
clock starts (the page cache and the model warm). Then each question goes to both sides in turn, in a random order,
end to end (the model embeds it; with ``--given``, with its precomputed vector: the store's work alone), for
``--rounds`` rounds. Prints each side's median, the median of the
per-question ratios (the two sides share the machine's load question by question, so the ratio is the finding)
and how many of the top-10 lists are identical.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.peers import corpus
from bench.peers.run import baseline_tree, call_worker
from bench.peers.serve import Request, claim_stdout, serve

ROOT = Path(__file__).resolve().parents[2]


def summary(times: dict[str, list[float]], lists: dict[str, list[list[str]]]) -> list[str]:
    """Lines of the result: each side's median (ms) and median per-question ratio to the first side, and how many
    questions got the same top 10 from every side."""
    first = next(iter(times))
    lines = []
    for name, spent in times.items():
        ratio = statistics.median(a / b for a, b in zip(spent, times[first], strict=True))
        lines.append(f"{name:12s} p50 {1000 * statistics.median(spent):7.2f} ms   paired ratio to {first} {ratio:.3f}")
    same = sum(len({tuple(ids) for ids in answers}) == 1 for answers in zip(*lists.values(), strict=True))
    lines.append(f"identical top 10: {same} of {len(lists[first])}")
    return lines


def _worker(name: str, python: str, env: dict[str, str], store: Path, corpus_path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [python, "-m", "bench.peers.pairs", "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=store.parent,
    )
    call_worker(proc, name, {"op": "open", "dir": str(store), "corpus": str(corpus_path)})
    return proc


def apply_set(constants: dict[str, str]) -> None:
    """Set each module constant (a bare name: ``ltm.store.embedded.backend``'s) to its value, as its type."""
    for name, value in constants.items():
        module, _, constant = name.rpartition(".")
        owner = importlib.import_module(module or "ltm.store.embedded.backend")
        setattr(owner, constant, type(getattr(owner, constant))(value))


def _serve() -> int:
    protocol = claim_stdout()
    state: dict[str, Any] = {}

    def open_(request: Request) -> Request:
        from ltm.config import Settings
        from ltm.store import MemoryStorage

        apply_set(json.loads(os.environ.get("PAIRS_SET", "{}")))
        state["questions"] = json.loads(Path(request["corpus"]).read_text("utf-8"))["questions"]
        import numpy as np

        vectors = Path(request["corpus"]).with_suffix(".npz")  # the questions' vectors, for --given
        state["vectors"] = np.load(vectors)["queries"] if vectors.exists() else None
        state["store"] = MemoryStorage(
            "pairs", kind="bench", settings=Settings.load(storage_dir=request["dir"], query_cache_size=0)
        )
        for question in state["questions"]:  # warm: the pages, the graph, the model
            state["store"].search(question, k=10)
        return {}

    def handle(request: Request) -> Request:
        import time

        question = state["questions"][request["question"]]
        if request.get("given") and state["vectors"] is None:
            raise ValueError("--given needs the corpus's .npz beside its .json (bench.peers.corpus writes both)")
        vector = state["vectors"][request["question"]] if request.get("given") else None
        started = time.perf_counter()
        hits = state["store"].search(question, k=10, vector=vector)
        return {"seconds": time.perf_counter() - started, "ids": [h.message.id for h in hits]}

    return serve(protocol, open_, handle, lambda: state["store"].close())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", help="the other side: ltm as of this git ref")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="the other side: this tree with ltm.store.embedded.backend.NAME = VALUE (or, when "
        "NAME is dotted, that module's constant)",
    )
    parser.add_argument(
        "--given", action="store_true", help="search with each question's vector given: the store's work alone"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return _serve()
    if bool(args.baseline) == bool(args.set):
        parser.error("give either --baseline REF or --set NAME=VALUE")
    import numpy as np

    from ltm.config import Settings
    from ltm.store import MemoryStorage

    path = corpus.build(args.size + 1200, 200)
    data = json.loads(path.read_text("utf-8"))
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory(prefix="ltm-pairs-") as tmp:
        root = Path(tmp)
        store = MemoryStorage("pairs", kind="bench", settings=Settings.load(storage_dir=root / "this"))
        corpus.fill(store, data["turns"], np.load(path.with_suffix(".npz"))["vectors"], args.size)
        store.close()
        shutil.copytree(root / "this", root / "other")
        if args.baseline:
            other_name = f"ltm@{args.baseline}"
            other_env = dict(env, PYTHONPATH=f"{baseline_tree(args.baseline, root)}{os.pathsep}{ROOT}")
        else:
            other_name = "ltm " + " ".join(args.set)
            other_env = dict(env, PAIRS_SET=json.dumps(dict(item.split("=", 1) for item in args.set)))
        sides = {
            "ltm": _worker("ltm", sys.executable, env, root / "this", path),
            other_name: _worker(other_name, sys.executable, other_env, root / "other", path),
        }
        times: dict[str, list[float]] = {name: [] for name in sides}
        lists: dict[str, list[list[str]]] = {name: [] for name in sides}
        rng = random.Random(3)
        for _ in range(args.rounds):
            for question in range(len(data["questions"])):
                for name in rng.sample(list(sides), len(sides)):
                    ask = {"op": "search", "question": question, "given": args.given}
                    answer = call_worker(sides[name], name, ask)
                    times[name].append(answer["seconds"])
                    lists[name].append(answer["ids"])
        for name, proc in sides.items():
            call_worker(proc, name, {"op": "close"})
            proc.wait()
    how = "the query vector given" if args.given else "end to end"
    print(f"{args.size:,} messages, {len(data['questions'])} questions x {args.rounds} rounds, {how}, k=10")
    print("\n".join(summary(times, lists)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
