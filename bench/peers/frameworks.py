"""``python -m bench.peers.frameworks``: ltm's framework adapters against each framework's own stores.

    python -m bench.peers.frameworks                            # LangGraph, AutoGen, CrewAI at 10,000 items
    python -m bench.peers.frameworks --frameworks langgraph --pg --size 100000
    python -m bench.peers.frameworks --venv-dir /elsewhere      # <dir>/langgraph, <dir>/autogen, <dir>/crewai
    python -m bench.peers.frameworks --frameworks autogen --baseline main   # also ltm's adapters as of main

Every store runs in its own :mod:`bench.peers.framework_worker` process inside its framework's environment,
``<venv-dir>/<framework>`` (default ``.venv-frameworks``, built by ``scripts/frameworks/<framework>``:
``LTM_FRAMEWORKS=langgraph bash scripts/test-frameworks`` builds it, then runs the framework tests), with ltm
taken from this checkout. ``--pg`` needs ``langgraph-checkpoint-postgres`` in the LangGraph environment
(``<venv-dir>/langgraph/bin/python -m pip install langgraph-checkpoint-postgres``) and ``pgserver`` (the build
installs it): both LangGraph's ``PostgresStore`` and ``LtmStore`` on PostgreSQL use one private server.

The stores, each through its framework's own API (see :mod:`bench.peers.framework_worker`):

- LangGraph: ``LtmStore`` (embedded; with ``--pg`` also on PostgreSQL) against ``InMemoryStore``, ``SqliteStore``
  (sqlite-vec) and, with ``--pg``, ``PostgresStore`` (pgvector); the same ``IndexConfig`` for all, puts by
  ``batch()``.
- AutoGen: ``LtmMemory`` against ``ChromaDBVectorMemory`` (persistent) and ``ListMemory`` (adds only: its query
  returns everything); adds one at a time, as the ``Memory`` protocol has no batch.
- CrewAI: ``LtmStorage`` against its default storage backend, ``LanceDBStorage``; records saved with their vectors.

The data: :mod:`bench.peers.corpus` (REALTALK then FriendsQA turns, fetched by ``python -m bench.retrieval.fetch``;
past ~14,000 blended from them) and its REALTALK questions; one embed function for every store, a lookup of the
texts' precomputed all-MiniLM-L6-v2 vectors, so the model costs nothing. Puts go in ``--batch`` chunks, each chunk
to every store in an order rotated per chunk; the questions are split into ``--rounds`` rounds, the stores'
order rotated per round; then each durable store is reopened in a new process (``--reopens`` rounds) and asked
the first question. Quality: recall@10 of the REALTALK questions' labelled evidence turns, and the overlap of
each store's top 10 with the exact dense top 10. The load average is recorded at the start and after each
framework. ltm's modules are byte-compiled first by each environment's interpreter, as pip compiles an installed
package (the frameworks' own are): with ``PYTHONDONTWRITEBYTECODE`` set, every reopen would otherwise compile the
engine's modules from source again, ~0.15 s of a reopen on a busy machine that no user's reopen pays.

Writes ``bench/results/peers_frameworks.json`` and ``.md`` (the table BENCHMARKS.md quotes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import numpy as np

from bench import ROOT
from bench.peers import corpus
from bench.peers.run import baseline_tree, call_worker, start_worker, stop_worker
from bench.peers.stores import rotations

RESULTS = ROOT / "bench" / "results"
BASELINES: dict[str, Path] = {}  # git ref -> a directory holding that commit's ltm package (--baseline)
FRAMEWORKS = ("langgraph", "autogen", "crewai")
PG = "PostgreSQL"


@dataclass(frozen=True)
class Spec:
    """One store of a framework: its class, what its search returns, whether it keeps data across a restart and
    whether it searches (ListMemory only adds), and whether it runs on the private PostgreSQL server."""

    framework: str
    store: str
    returns: str
    durable: bool = True
    searches: bool = True
    pg: bool = False
    ref: str | None = None  # ltm's adapter as of this git ref (--baseline), beside this tree's

    @property
    def label(self) -> str:
        label = f"{self.store} on {PG}" if self.pg and self.store.startswith("Ltm") else self.store
        return label if self.ref is None else f"{label}@{self.ref}"


HYBRID = "hybrid: dense + keyword (BM25), fused"
SPECS = (
    Spec("langgraph", "LtmStore", HYBRID),
    Spec("langgraph", "InMemoryStore", "dense: exact cosine over every item (numpy)", durable=False),
    Spec("langgraph", "SqliteStore", "dense: exact cosine (sqlite-vec)"),
    Spec("langgraph", "LtmStore", HYBRID, pg=True),
    Spec("langgraph", "PostgresStore", "dense: cosine (pgvector HNSW)", pg=True),
    Spec("autogen", "LtmMemory", HYBRID),
    Spec("autogen", "ChromaDBVectorMemory", "dense: cosine (Chroma's HNSW)"),
    Spec("autogen", "ListMemory", "no search: query returns every memory", durable=False, searches=False),
    Spec("crewai", "LtmStorage", "dense: the vector CrewAI gives (ltm's index)"),
    Spec("crewai", "LanceDBStorage", "dense: the vector CrewAI gives (LanceDB)"),
)


def default_out(size: int) -> Path:
    """Where a run of ``size`` items writes its tables: the page shows the 10,000-item run and a 100,000-item one."""
    return RESULTS / ("peers_frameworks" if size == 10_000 else f"peers_frameworks_{size // 1000}k")


def venv_python(venv_dir: Path, framework: str) -> Path:
    """The framework environment's interpreter; a clear exit naming the command that builds it when missing."""
    python = venv_dir / framework / "bin" / "python"
    if not python.exists():
        raise SystemExit(
            f"{python} is missing: build the {framework} environment with "
            f"`LTM_FRAMEWORKS={framework} bash scripts/test-frameworks` (it builds {venv_dir / framework} once, "
            "then runs the framework's tests), or pass --venv-dir"
        )
    return python


def labels(size: int, questions: list[str]) -> list[set[int]]:
    """Per question, the corpus rows of its REALTALK evidence turns below ``size`` (empty when unlabelled)."""
    data = json.loads((corpus.DATA / "realtalk.json").read_text("utf-8"))
    rows: dict[tuple[str, str], int] = {}
    evidence: dict[str, set[tuple[str, str]]] = {}
    row = 0
    for conversation in data["conversations"]:
        for turn in conversation["turns"]:
            if turn["text"].strip():  # the rows of bench.peers.corpus.real_turns
                rows[(conversation["id"], str(turn["id"]))] = row
                row += 1
        for question in conversation["questions"]:
            found = {(conversation["id"], str(e)) for e in question["evidence"]}
            evidence.setdefault(question["question"], set()).update(found)
    return [{rows[e] for e in evidence.get(q, ()) if e in rows and rows[e] < size} for q in questions]


def recall(found: list[int], wanted: set[int], k: int) -> float | None:
    return len(set(found[:k]) & wanted) / len(wanted) if wanted else None


class Worker:
    """One store's process in its framework's environment, speaking JSON lines (cwd outside the repository, so
    the environment's packages are imported, not a folder of the checkout)."""

    def __init__(self, spec: Spec, python: Path, log: IO[str], cwd: Path) -> None:
        self.spec = spec
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "LTM_"))}
        path = str(ROOT) if spec.ref is None else f"{BASELINES[spec.ref]}{os.pathsep}{ROOT}"
        env.update(
            PYTHONPATH=path,
            LTM_QUERY_CACHE_SIZE="0",  # each question is asked once per round: no cache may answer a repeat
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            TOKENIZERS_PARALLELISM="false",
            OMP_NUM_THREADS="1",
            ANONYMIZED_TELEMETRY="False",
            CREWAI_DISABLE_TELEMETRY="true",
            OTEL_SDK_DISABLED="true",
        )
        self._proc = start_worker([str(python), "-m", "bench.peers.framework_worker"], env, log, cwd)

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        return call_worker(self._proc, self.spec.label, request)

    def stop(self) -> None:
        """Close the store and end the process; one that fails to close is killed (its error is in the log)."""
        stop_worker(self._proc, self.spec.label)


class PostgresServer:
    """A private pgserver (PostgreSQL + pgvector) started by tests/support/postgres.py in the LangGraph
    environment, stopped with SIGTERM (its cleanup runs) by :meth:`stop`."""

    def __init__(self, python: Path, work: Path, log: IO[str]) -> None:
        target = work / "pg-url"
        script = (
            "import signal, sys, time\nfrom pathlib import Path\n"
            "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
            "from tests.support.postgres import PostgresServer\n"
            "server = PostgresServer().start()\n"
            f"Path({str(target) + '.tmp'!r}).write_text(server.url)\n"
            f"Path({str(target) + '.tmp'!r}).rename({str(target)!r})\n"
            "try:\n    while True:\n        time.sleep(3600)\nfinally:\n    server.close()\n"
        )
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self._proc = subprocess.Popen([str(python), "-c", script], cwd=str(ROOT), env=env, stderr=log)
        for _ in range(1200):
            if target.exists():
                break
            if self._proc.poll() is not None:
                raise SystemExit("the private PostgreSQL server did not start (is pgserver in the environment?)")
            time.sleep(0.1)
        else:
            self.stop()
            raise SystemExit("the private PostgreSQL server did not start within 120 s")
        self.url = target.read_text()

    def stop(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


@dataclass
class Samples:
    """One store's measurements: seconds per put chunk and items in them, seconds per search and per reopen +
    first query, recall@10 against the labels and the overlap with the exact dense top 10, per question."""

    put: list[float]
    items: int = 0
    search: list[float] | None = None
    reopen: list[float] | None = None
    labelled: list[float] | None = None
    exact: list[float] | None = None


def one_framework(
    framework: str, specs: list[Spec], args: argparse.Namespace, python: Path, url: str | None, log: IO[str], tmp: Path
) -> dict[str, Samples]:
    """Fill a fresh store of each spec with ``args.size`` items, search it, reopen it (module docstring)."""
    path = corpus.build(args.size, args.queries)
    questions = json.loads(path.read_text("utf-8"))["questions"]
    if len(questions) < args.queries:  # made earlier for fewer questions: made again
        path.unlink()
        path = corpus.build(args.size, args.queries)
        questions = json.loads(path.read_text("utf-8"))["questions"]
    arrays = np.load(path.with_suffix(".npz"))
    wanted = labels(args.size, questions)
    exact = np.argsort(-(arrays["queries"] @ arrays["vectors"][: args.size].T), axis=1, kind="stable")[:, : args.k]
    cwd = tmp / "cwd"
    cwd.mkdir(exist_ok=True)
    dirs = {s.label: tmp / f"{framework}-{s.label.replace(' ', '-')}" for s in specs}
    base = {"op": "open", "framework": framework, "corpus": str(path), "k": args.k}

    def opening(spec: Spec, first: int | None) -> dict[str, Any]:
        return {**base, "store": spec.store, "dir": str(dirs[spec.label]), "url": url if spec.pg else None,
                "first": first}  # fmt: skip

    out = {s.label: Samples(put=[]) for s in specs}
    labels_of = [s.label for s in specs]
    by_label = {s.label: s for s in specs}
    workers: dict[str, Worker] = {}
    try:
        for spec in specs:
            dirs[spec.label].mkdir()
            workers[spec.label] = Worker(spec, python, log, cwd)
            workers[spec.label].call(opening(spec, None))
        chunks = [list(range(s, min(s + args.batch, args.size))) for s in range(0, args.size, args.batch)]
        for r, order in rotations(len(chunks), labels_of):
            for label in order:
                out[label].put += workers[label].call({"op": "put", "rows": chunks[r]})["times"]
                out[label].items += len(chunks[r])
        print(f"{framework}: put {args.size:,} items", file=sys.stderr, flush=True)
        block = -(-args.queries // args.rounds)
        searching = [s.label for s in specs if s.searches]
        for r, order in rotations(args.rounds, searching):
            rows = list(range(r * block, min((r + 1) * block, len(questions))))
            for label in order:
                answer = workers[label].call({"op": "search", "rows": rows, "k": args.k})
                got = out[label]
                got.search = (got.search or []) + answer["times"]
                got.exact = (got.exact or []) + [
                    len(set(ids) & set(exact[q].tolist())) / args.k for q, ids in zip(rows, answer["out"], strict=True)
                ]
                scored = [recall(ids, wanted[q], args.k) for q, ids in zip(rows, answer["out"], strict=True)]
                got.labelled = (got.labelled or []) + [s for s in scored if s is not None]
        print(f"{framework}: searched", file=sys.stderr, flush=True)
    finally:
        for worker in workers.values():
            worker.stop()
    durable = [s.label for s in specs if s.durable and s.searches]
    for _r, order in rotations(args.reopens, durable):
        for label in order:
            worker = Worker(by_label[label], python, log, cwd)
            try:
                answer = worker.call(opening(by_label[label], 0))
            finally:
                worker.stop()
            out[label].reopen = (out[label].reopen or []) + answer["times"]
    return out


def _ms(seconds: float) -> str:
    ms = 1000 * seconds
    return f"{ms:.1f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def rows_of(framework: str, specs: list[Spec], samples: dict[str, Samples]) -> list[dict[str, Any]]:
    """One row per store: items/s over every put chunk, search p50 / p95, median reopen + first query (seconds),
    mean recall@10 against the labels and overlap with the exact dense top 10."""
    rows = []
    for spec in specs:
        got = samples[spec.label]
        searched = sorted(got.search or [])
        rows.append(
            {
                "framework": framework,
                "store": spec.label,
                "returns": spec.returns,
                "put_per_s": got.items / sum(got.put) if got.put else None,
                "search_p50": float(np.percentile(searched, 50)) if searched else None,
                "search_p95": float(np.percentile(searched, 95)) if searched else None,
                "reopen_first": statistics.median(got.reopen) if got.reopen else None,
                "recall_labels": float(np.mean(got.labelled)) if got.labelled else None,
                "overlap_exact": float(np.mean(got.exact)) if got.exact else None,
            }
        )
    return rows


def table(rows: list[dict[str, Any]], k: int = 10) -> str:
    """The markdown table of :func:`rows_of`'s rows ("-" where a store has no such figure)."""
    lines = [
        "| framework | store | put / add | search p50 | search p95 | reopen + first query "
        f"| recall@{k} (labelled evidence) | top {k} ∩ exact dense | what search returns |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        cells = [
            row["framework"],
            row["store"],
            "-" if row["put_per_s"] is None else f"{row['put_per_s']:,.0f} items/s",
            "-" if row["search_p50"] is None else _ms(row["search_p50"]),
            "-" if row["search_p95"] is None else _ms(row["search_p95"]),
            "-" if row["reopen_first"] is None else _ms(row["reopen_first"]),
            "-" if row["recall_labels"] is None else f"{row['recall_labels']:.3f}",
            "-" if row["overlap_exact"] is None else f"{row['overlap_exact']:.3f}",
            row["returns"],
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def versions(python: Path, framework: str) -> str:
    """The framework's release(s) in its environment, for the table's head."""
    dists = {
        "langgraph": ["langgraph", "langgraph-checkpoint-sqlite", "langgraph-checkpoint-postgres"],
        "autogen": ["autogen-agentchat", "autogen-ext", "chromadb"],
        "crewai": ["crewai", "lancedb"],
    }[framework]
    probe = "import importlib.metadata as m, sys\nfor d in sys.argv[1:]:\n    try:\n        print(d, m.version(d))\n"
    probe += "    except m.PackageNotFoundError:\n        pass\n"
    done = subprocess.run([str(python), "-c", probe, *dists], capture_output=True, text=True)
    return ", ".join(line for line in done.stdout.splitlines() if line) if done.returncode == 0 else "?"


def write(
    out: Path,
    args: argparse.Namespace,
    rows: list[dict[str, Any]],
    released: list[str],
    started: float,
    loads: list[tuple[float, float, float]],
) -> None:
    """Print and write the table of the frameworks measured so far (rewritten after each framework)."""
    real = min(len(corpus.real_turns()[0]), args.size)
    head = (
        f"{args.size:,} items per store ({real:,} real chat turns, REALTALK then FriendsQA"
        + (f", {args.size - real:,} blended from them" if args.size > real else "")
        + f"); {args.queries} REALTALK questions, k={args.k}, {args.rounds} interleaved rounds, puts in batches of "
        f"{args.batch}; every store embeds with the same lookup of precomputed all-MiniLM-L6-v2 vectors; "
        f"{'; '.join(released)}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, "
        f"{time.time() - started:.0f} s; load average (1 min) {' -> '.join(f'{x[0]:.1f}' for x in loads)}; "
        f"{platform.machine()}, {os.cpu_count()} cores"
    )
    text = table(rows, args.k)
    print(f"{head}\n\n{text}", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(f"{head}\n\n{text}\n")
    out.with_suffix(".json").write_text(json.dumps({"head": head, "rows": rows, "loads": loads}, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ltm's framework adapters vs each framework's own stores.")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="which frameworks, comma-separated")
    parser.add_argument("--stores", default="", help="only these stores (labels as in the table), comma-separated")
    parser.add_argument("--size", type=int, default=10_000, help="items per store (100000 supported)")
    parser.add_argument("--pg", action="store_true", help="LangGraph: also LtmStore on PostgreSQL vs PostgresStore")
    parser.add_argument("--venv-dir", default=str(ROOT / ".venv-frameworks"), help="holds <framework>/bin/python")
    parser.add_argument("--queries", type=int, default=200, help="REALTALK questions searched per store")
    parser.add_argument("--rounds", type=int, default=2, help="search rounds (the questions split among them)")
    parser.add_argument("--batch", type=int, default=500, help="items per put batch (AutoGen: adds per chunk)")
    parser.add_argument("--reopens", type=int, default=2, help="reopen + first query rounds")
    parser.add_argument("-k", type=int, default=10, help="results per search")
    parser.add_argument(
        "--out",
        default="",
        help="writes OUT.json and OUT.md (default bench/results/peers_frameworks, with _100k at --size 100000)",
    )
    parser.add_argument("--baseline", help="also run ltm's adapters as of this git ref (its ltm/ package), interleaved")
    args = parser.parse_args(argv)
    chosen = [f for f in args.frameworks.split(",") if f]
    unknown = set(chosen) - set(FRAMEWORKS)
    if unknown:
        parser.error(f"unknown framework(s) {sorted(unknown)}: pick from {', '.join(FRAMEWORKS)}")
    only = {s for s in args.stores.split(",") if s} or {s.label for s in SPECS}
    if only - {s.label for s in SPECS}:
        parser.error(f"unknown store(s) {sorted(only - {s.label for s in SPECS})}: see the table's store column")
    venv_dir = Path(args.venv_dir)
    pythons = {f: venv_python(venv_dir, f) for f in chosen}
    started, loads = time.time(), [os.getloadavg()]
    rows: list[dict[str, Any]] = []
    released: list[str] = []
    logs = corpus.OUT / "frameworks.log"  # the workers' stderr, git-ignored with the corpus
    logs.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ltm-frameworks-") as tmp, logs.open("w") as log:
        for framework in chosen:
            specs = [s for s in SPECS if s.framework == framework and (args.pg or not s.pg) and s.label in only]
            if args.baseline:
                if args.baseline not in BASELINES:
                    BASELINES[args.baseline] = baseline_tree(args.baseline, Path(tmp))
                ref = args.baseline  # each ltm store followed by itself at the baseline
                specs = [t for s in specs for t in ([s, replace(s, ref=ref)] if s.store.startswith("Ltm") else [s])]
            server = (
                PostgresServer(pythons[framework], Path(tmp), log) if args.pg and framework == "langgraph" else None
            )
            subprocess.run([str(pythons[framework]), "-m", "compileall", "-q", str(ROOT / "ltm")], check=True)
            try:
                samples = one_framework(
                    framework, specs, args, pythons[framework], server.url if server else None, log, Path(tmp)
                )
            finally:
                if server is not None:
                    server.stop()
            rows += rows_of(framework, specs, samples)
            released.append(versions(pythons[framework], framework))
            loads.append(os.getloadavg())
            write(Path(args.out or default_out(args.size)), args, rows, released, started, loads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
