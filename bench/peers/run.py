"""The driver of ``python -m bench.peers``: both engines in their own processes, the same calls, interleaved.

Each engine runs in a :mod:`bench.peers.worker` process (ltm in this venv, mem0 in its own). The driver
sends them the same work in alternating rounds (ltm then mem0, mem0 then ltm in the next round), so load
from other processes on the machine falls on both; every figure is timed inside the worker around the
engine's own call.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from bench import ROOT

DATA = ROOT / "bench" / "data" / "realtalk.json"
FIXTURE = ROOT / "tests" / "data" / "conversations.jsonl"
MEM0 = "mem0"


def corpus(n: int) -> tuple[str, list[dict[str, Any]], list[str]]:
    """(name, ``n`` chat turns in order, the questions shuffled): REALTALK when fetched (``python -m
    bench.retrieval.fetch``), else the project's own 12-session conversation repeated with a suffix."""
    if DATA.exists():
        data = json.loads(DATA.read_text("utf-8"))
        turns = [
            {"text": t["text"], "speaker": t["speaker"], "time": t["time"]}
            for c in data["conversations"]
            for t in c["turns"]
        ]
        questions = [q["question"] for c in data["conversations"] for q in c["questions"]]
        name = f"REALTALK ({len(turns)} turns, {len(questions)} questions)"
    else:
        rows = [json.loads(line) for line in FIXTURE.read_text("utf-8").splitlines() if line.strip()]
        turns = [{"text": r["text"], "speaker": r["speaker"], "time": 1.7e9 + i * 60.0} for i, r in enumerate(rows)]
        questions = [f"what did {r['speaker']} say about {' '.join(r['text'].split()[:6])}" for r in rows]
        name = "tests/data/conversations.jsonl (REALTALK not fetched: repeated with a suffix)"
    if n > len(turns):
        turns = [
            dict(turns[i % len(turns)], text=f"{turns[i % len(turns)]['text']} ({i // len(turns)})")
            if i >= len(turns)
            else turns[i]
            for i in range(n)
        ]
    random.Random(7).shuffle(questions)
    return name, turns[:n], questions


def closed_url() -> str:
    """An http URL on a loopback port nothing listens on: mem0's LLM config must name one, and must fail fast
    if anything ever called it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def start_worker(argv: list[str], env: dict[str, str], log: IO[str], cwd: Path) -> subprocess.Popen[str]:
    """A worker process (``argv``, e.g. ``[python, "-m", module]``) that :func:`call_worker` speaks to over its
    standard input and output; what it prints besides goes to ``log``."""
    return subprocess.Popen(
        argv, cwd=str(cwd), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True
    )


def stop_worker(proc: subprocess.Popen[str], name: str) -> None:
    """Ask a :func:`start_worker` process to close its store and wait for it to end; one that fails to close is
    killed (its error is in its log)."""
    if proc.poll() is None:
        try:
            call_worker(proc, name, {"op": "close"})
            proc.wait(timeout=120)
        except (SystemExit, OSError, subprocess.TimeoutExpired) as exc:
            print(f"{name} did not close cleanly: {exc}", file=sys.stderr)
            proc.kill()
            proc.wait()


def call_worker(proc: subprocess.Popen[str], name: str, request: dict[str, Any]) -> dict[str, Any]:
    """One request to a worker process speaking one JSON object per line each way; its death or its error
    ends the run with what it said (the trace is in its answer, the rest in its log)."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(request) + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"the {name} worker died (exit {proc.wait()}); see its log")
    answer: dict[str, Any] = json.loads(line)
    if "error" in answer:
        raise SystemExit(f"{name} failed on {request['op']}: {answer['error']}\n{answer.get('trace', '')}")
    return answer


class Worker:
    """One engine's process and its JSON-lines pipe. It runs in ``cwd`` (not the repository: ``python -m`` puts
    the working directory first on ``sys.path``, and a baseline's ``ltm`` must come from ``PYTHONPATH``)."""

    def __init__(self, engine: str, python: str, env: dict[str, str], log: IO[str], cwd: Path) -> None:
        self.engine = engine
        kind = MEM0 if engine == MEM0 else "ltm"
        self._proc = start_worker([python, "-m", "bench.peers.worker", kind], env, log, cwd)

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        return call_worker(self._proc, self.engine, request)

    def stop(self) -> None:
        if self._proc.poll() is None:
            self.call({"op": "close"})
            self._proc.wait(timeout=60)


@dataclass
class Samples:
    """Per-call seconds, by row name then engine; and how many items each call handled (for per-item rates)."""

    times: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    items: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, row: str, engine: str, times: list[float], items: int) -> None:
        self.times.setdefault(row, {}).setdefault(engine, []).extend(times)
        per = self.items.setdefault(row, {})
        per[engine] = per.get(engine, 0) + items


def rounds(chunks: int, engines: list[str]) -> Iterator[tuple[int, list[str]]]:
    """Round numbers with the engine order for each, rotated every round (each engine goes first in turn)."""
    for r in range(chunks):
        shift = r % len(engines)
        yield r, engines[shift:] + engines[:shift]


def drive(
    workers: dict[str, Worker],
    turns: list[dict[str, Any]],
    questions: list[str],
    sizes: list[int],
    single: int,
    batch: int,
    search_rounds: int,
    block: int,
    deletes: int,
) -> Samples:
    """The whole run: for each size, fill up to it (``single`` one-at-a-time adds, the rest in batches of
    ``batch``), then ``search_rounds`` rounds of search (a fresh ``block`` of questions per mode and round);
    after the last size, ``deletes`` deletes each."""
    samples = Samples()
    engines = list(workers)
    ids: dict[str, list[str]] = {e: [] for e in engines}
    filled, asked = 0, 0
    for size in sizes:
        ones = min(single, size - filled)
        plan = [("add_one", turns[filled + s : filled + min(s + 50, ones)]) for s in range(0, ones, 50)]
        plan += [("add_batch", turns[s : min(s + batch, size)]) for s in range(filled + ones, size, batch)]
        for r, order in rounds(len(plan), engines):
            op, chunk = plan[r]
            row = f"add one at a time (to {size:,})" if op == "add_one" else f"add in batches of {batch} (to {size:,})"
            for engine in order:
                answer = workers[engine].call({"op": op, "turns": chunk, "batch": batch})
                samples.add(row, engine, answer["times"], len(chunk))
                ids[engine].extend(answer["out"])
        filled = size
        print(f"filled to {size:,}; searching", file=sys.stderr, flush=True)
        for _r, order in rounds(search_rounds, engines):
            hybrid, dense = questions[asked : asked + block], questions[asked + block : asked + 2 * block]
            asked += 2 * block
            for engine in order:
                _search(samples, workers, engine, hybrid, "hybrid", size, "search, hybrid")
                _search(samples, workers, engine, dense, "dense", size, "search, dense")
                if engine != MEM0:  # mem0 embeds every query again: nothing to measure
                    _search(samples, workers, engine, hybrid, "hybrid", size, "search, hybrid, repeated query")
                answer = workers[engine].call({"op": "embed", "queries": dense})
                samples.add(f"query embedding alone (at {size:,})", engine, answer["times"], len(dense))
    print("deleting", file=sys.stderr, flush=True)
    gone = {e: random.Random(11).sample(ids[e], min(deletes, len(ids[e]))) for e in engines}
    for r, order in rounds(max(1, -(-deletes // 25)), engines):
        for engine in order:
            doomed = gone[engine][r * 25 : (r + 1) * 25]
            answer = workers[engine].call({"op": "delete", "ids": doomed})
            samples.add(f"delete one (at {sizes[-1]:,})", engine, answer["times"], len(doomed))
    return samples


def _search(
    samples: Samples, workers: dict[str, Worker], engine: str, queries: list[str], mode: str, size: int, row: str
) -> None:
    answer = workers[engine].call({"op": "search", "queries": queries, "mode": mode, "k": 10})
    samples.add(f"{row} (at {size:,})", engine, answer["times"], len(queries))


def baseline_tree(ref: str, tmp: Path) -> Path:
    """A directory holding commit ``ref``'s ``ltm`` package (``git archive``), to import ahead of this tree's."""
    tree = tmp / "baseline"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "ltm"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def start(mem0_python: str, model: str, log: IO[str], tmp: Path, baseline: str | None) -> dict[str, Worker]:
    """The workers (ltm, ltm at ``baseline`` when given, mem0), each opened on an empty store under ``tmp``."""
    common = {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(ROOT),
    }
    ltm_env = dict(os.environ, **common)
    mem0_env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "LTM_"))}
    mem0_env.update(common, MEM0_TELEMETRY="False", MEM0_DIR=str(tmp / "mem0-home"), PEERS_CLOSED_URL=closed_url())
    cwd = tmp / "cwd"
    cwd.mkdir()
    workers = {"ltm": Worker("ltm", sys.executable, ltm_env, log, cwd)}
    if baseline:
        env = dict(ltm_env, PYTHONPATH=f"{baseline_tree(baseline, tmp)}{os.pathsep}{ROOT}")
        workers[f"ltm@{baseline}"] = Worker(f"ltm@{baseline}", sys.executable, env, log, cwd)
    workers[MEM0] = Worker(MEM0, mem0_python, mem0_env, log, cwd)
    for i, worker in enumerate(workers.values()):
        (tmp / f"store-{i}").mkdir()
        worker.call({"op": "open", "dir": str(tmp / f"store-{i}"), "model": model})
    return workers


def measure(
    mem0_python: str,
    model: str,
    sizes: list[int],
    single: int,
    batch: int,
    search_rounds: int,
    block: int,
    deletes: int,
    log_path: Path,
    baseline: str | None = None,
) -> tuple[str, Samples]:
    """(the corpus's name, the samples) of one interleaved run."""
    name, turns, questions = corpus(max(sizes))
    needed = len(sizes) * search_rounds * 2 * block
    if needed > len(questions):
        raise SystemExit(f"{needed} distinct questions needed, the corpus has {len(questions)}: lower --rounds")
    with tempfile.TemporaryDirectory(prefix="ltm-peers-") as tmp, log_path.open("w") as log:
        workers = start(mem0_python, model, log, Path(tmp), baseline)
        try:
            samples = drive(workers, turns, questions, sizes, single, batch, search_rounds, block, deletes)
        finally:
            for worker in workers.values():
                worker.stop()
    return name, samples
