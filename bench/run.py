#!/usr/bin/env python
"""Benchmark ltm against the llama-index/FAISS way MetaGPT uses (A), raw FAISS (B) and the embedding model (C).

    python -m bench.run --quick                      # < 2 min smoke run (CI)
    python -m bench.run --all                        # bench/results/: 1k, 10k, 100k (~20 min), plots
    python -m bench.run --all --sizes 1000,10000,100000,1000000   # and 1M (~30+ min more, ~6 GB RAM)
    python -m bench.run --model-only --baseline 4311524^          # ingest only, against ltm on torch

Every system at every size runs in its own worker process (peak RSS is per worker); recovery is timed in a
further fresh process. Each figure is the median over ``--repeats`` runs; baselines run in the same
invocation and ratios are printed next to them. See BENCHMARKS.md for the method and the results.
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
from pathlib import Path
from typing import Any

from bench import module_cmd, module_env

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

FULL_SIZES = [1_000, 10_000, 100_000, 1_000_000]
DEFAULT_SIZES = [1_000, 10_000, 100_000]  # ~20 min; add 1000000 with --sizes (peak ~6 GB RAM, ~30+ min more)
QUICK_SIZES = [1_000, 2_000]
BASELINE_REF = "0703872"  # ltm before its batched write path: the "before" of every ltm figure
RESULTS = Path(__file__).resolve().parent / "results"
BENCHMARKS = RESULTS.parent.parent / "BENCHMARKS.md"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes, one repeat, tiny model run (< 2 min)")
    p.add_argument(
        "--sizes",
        type=lambda s: [int(float(x)) for x in s.split(",")],
        default=None,
        help="comma-separated message counts (default 1000,10000,100000,1000000)",
    )
    p.add_argument("--repeats", type=int, default=None, help="runs per size up to --repeat-max-size (default 3)")
    p.add_argument("--repeat-max-size", type=int, default=1_000, help="larger sizes run once (default 1000)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--extra", type=int, default=1000, help="one-at-a-time adds measured on top of size N")
    p.add_argument("--one-max", type=int, default=10_000, help="ltm: one-at-a-time from empty up to this size")
    p.add_argument("--a-one-max", type=int, default=10_000, help="A: one-at-a-time from empty up to this size")
    p.add_argument("--a-max", type=int, default=100_000, help="A is not run above this size")
    p.add_argument("--a-marginal", type=int, default=20, help="A: one-at-a-time inserts sampled above --a-one-max")
    p.add_argument("--hnsw-min", type=int, default=100_000, help="B builds HNSW from this size")
    p.add_argument(
        "--model-sizes",
        type=lambda s: [int(x) for x in s.split(",") if x],
        default=None,
        help="sizes for the local-model run (C vs ltm ingest); default 1000",
    )
    p.add_argument("--a-local", type=int, default=500, help="A with the local model, one at a time (0: skip)")
    p.add_argument(
        "--baseline",
        default=BASELINE_REF,
        help="git ref whose ltm runs the same ltm and model workers in the same run ('' to skip)",
    )
    p.add_argument("--baseline-max", type=int, default=100_000, help="the baseline is not run above this size")
    p.add_argument("--baseline-only", action="store_true", help=argparse.SUPPRESS)
    p.add_argument(
        "--model-only",
        action="store_true",
        help="only the ingest run with the local model (C, ltm and --baseline's ltm), no store sizes",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="regenerate bench/results/ (results.json, tables.md, plots) for BENCHMARKS.md",
    )
    p.add_argument("--out-json", type=Path, default=None)
    p.add_argument("--plot", type=Path, default=None, help="write a PNG plot here")
    p.add_argument("--md", type=Path, default=None, help="write the markdown tables here")
    p.add_argument("--from-json", type=Path, default=None, help="render tables/plot from an earlier --out-json")
    # internal: worker and probe processes
    p.add_argument("--worker", choices=["ltm", "a", "b", "model"], help=argparse.SUPPRESS)
    p.add_argument("--size", type=int, help=argparse.SUPPRESS)
    p.add_argument("--probe", choices=["ltm", "a"], help=argparse.SUPPRESS)
    p.add_argument("--probe-dir", help=argparse.SUPPRESS)
    p.add_argument("--probe-query", help=argparse.SUPPRESS)
    p.add_argument("--probe-vec", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.sizes = args.sizes or QUICK_SIZES
        args.repeats = args.repeats or 1
        args.model_sizes = [128] if args.model_sizes is None else args.model_sizes
        args.a_one_max, args.one_max, args.extra = min(args.a_one_max, 1000), min(args.one_max, 1000), 100
        args.a_local = 0
    if args.quick:
        args.baseline_max = min(args.baseline_max, QUICK_SIZES[0])
    if args.all:
        args.out_json = args.out_json or RESULTS / "results.json"
        args.md = args.md or RESULTS / "tables.md"
        args.plot = args.plot or RESULTS / "bench.png"
    args.sizes = [] if args.model_only else (args.sizes or DEFAULT_SIZES)
    args.repeats = args.repeats or 3
    args.model_sizes = [1000] if args.model_sizes is None else args.model_sizes
    return args


def _worker_main(args: argparse.Namespace) -> dict[str, Any]:
    from bench import workers as w

    if args.worker == "ltm":
        return w.run_ltm(args.size, args.seed, args.extra, args.one_max)
    if args.worker == "a":
        return w.run_a(args.size, args.seed, args.a_one_max, args.a_marginal)
    if args.worker == "b":
        return w.run_b(args.size, args.seed, args.size >= args.hnsw_min)
    return w.run_model(args.size, args.seed, args.a_local if args.size >= args.a_local > 0 else 0)


def _probe_main(args: argparse.Namespace) -> dict[str, Any]:
    if args.probe == "ltm":
        from bench import ltm_runner as bench_ltm

        return bench_ltm.probe_main(Path(args.probe_dir), args.probe_query, Path(args.probe_vec))
    from bench import workers as bench_workers

    return bench_workers.probe_a(args.probe_dir, args.probe_query, args.probe_vec)


def spawn(args: argparse.Namespace, worker: str, size: int, baseline: Path | None = None) -> dict[str, Any] | None:
    """Run one worker process; its last stdout line is its JSON result. A failure is reported, not fatal.
    With ``baseline`` (a directory holding another version's ``ltm`` package) the worker imports that ltm."""
    cmd = [
        *module_cmd("run"),
        "--worker",
        worker,
        "--size",
        str(size),
        "--seed",
        str(args.seed),
        "--extra",
        str(args.extra),
        "--one-max",
        str(args.one_max),
        "--a-one-max",
        str(args.a_one_max),
        "--a-marginal",
        str(args.a_marginal),
        "--hnsw-min",
        str(args.hnsw_min),
        "--a-local",
        str(args.a_local),
    ]
    t0 = time.perf_counter()
    env = module_env()
    if baseline is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(baseline), env["PYTHONPATH"]])
    # ``python -m`` puts the working directory first on sys.path: the baseline's worker runs from the baseline
    # directory, or the repository's own ltm (in the current directory) would shadow the baseline's
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=baseline)
    wall = time.perf_counter() - t0
    worker = f"{worker}@{args.baseline}" if baseline is not None else worker
    if proc.returncode != 0:
        print(
            f"  ! {worker} n={size} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}",
            file=sys.stderr,
            flush=True,
        )
        return None
    if proc.stderr.strip():
        notes = [ln for ln in proc.stderr.splitlines() if "not measured" in ln]
        for ln in notes:
            print(f"  ! {worker} n={size}: {ln}", file=sys.stderr, flush=True)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall_s"] = wall
    print(f"  {worker:13s} n={size:>9,d} done in {wall:6.1f} s", file=sys.stderr, flush=True)
    return result


def baseline_dir(ref: str) -> Path:
    """``ref``'s ``ltm`` package, extracted once (``git archive``) into the temp dir: outside the repository, so
    linters and type checkers never see a second ``ltm``."""
    target = Path(tempfile.gettempdir()) / f"ltm-bench-baseline-{ref}"
    if not (target / "ltm" / "__init__.py").is_file():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(Path(__file__).resolve().parent.parent), "archive", ref, "ltm"],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def median_of(runs: list[dict[str, Any]]) -> dict[str, float]:
    keys = {k for r in runs for k in r}
    return {k: statistics.median([r[k] for r in runs if k in r]) for k in sorted(keys)}


def machine() -> dict[str, str]:
    import faiss
    import llama_index.core
    import psutil

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import torch

        torch_v = str(torch.__version__)
    except ImportError:
        torch_v = "not installed"
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "ram_gib": f"{psutil.virtual_memory().total / 2**30:.1f}",
        "python": platform.python_version(),
        "faiss": faiss.__version__,
        "torch": torch_v,
        "llama_index_core": llama_index.core.__version__,
        "platform": platform.platform(),
        "load_avg_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "machine": machine(),
        "command": " ".join(["python", "bench/run.py", *sys.argv[1:]]),
        "sizes": args.sizes,
        "systems": {},
    }
    t_start = time.perf_counter()
    base = baseline_dir(args.baseline) if args.baseline else None
    results["baseline"] = args.baseline
    for size in args.sizes:
        reps = args.repeats if size <= args.repeat_max_size else 1
        print(f"n={size:,d}: {reps} repeat(s)", file=sys.stderr, flush=True)
        runs: dict[str, list[dict[str, Any]]] = {"ltm": [], "base": [], "a": [], "b": []}
        for rep in range(reps):
            for worker in ("ltm", "base", "a", "b"):
                if worker == "a" and (size > args.a_max or (rep > 0 and size > 1000 and not args.quick)):
                    continue  # A's O(n) insert makes repeats above 1k cost minutes each: A runs once there
                if worker == "base" and (base is None or size > args.baseline_max):
                    continue
                if args.baseline_only and worker != "base":
                    continue
                res = spawn(args, "ltm", size, base) if worker == "base" else spawn(args, worker, size)
                if res is not None:
                    runs[worker].append(res)
        for worker, rs in runs.items():
            if rs:
                entry = median_of(rs)
                entry["repeats"] = len(rs)
                results["systems"].setdefault(worker, {})[str(size)] = entry
        _save_partial(args, results)
    for size in args.model_sizes:
        reps = args.repeats if size <= 1000 else 1
        runs = {"model": [], "model_base": []}
        for _ in range(reps):  # interleaved: the machine's load moves both the same way
            for system, where in (("model", None), ("model_base", base)):
                if (system == "model_base" and base is None) or (args.baseline_only and system == "model"):
                    continue
                if (r := spawn(args, "model", size, where)) is not None:
                    runs[system].append(r)
        for system, rs in runs.items():
            if rs:
                entry = median_of(rs)
                entry["repeats"] = len(rs)
                results["systems"].setdefault(system, {})[str(size)] = entry
    results["total_s"] = time.perf_counter() - t_start
    return results


def _save_partial(args: argparse.Namespace, results: dict[str, Any]) -> None:
    """Write what is measured so far, so a run cut off at 1M still leaves the smaller sizes on disk."""
    if args.out_json:
        args.out_json.parent.mkdir(parents=True, exist_ok=True)
        args.out_json.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.probe:
        print(json.dumps(_probe_main(args)))
        return 0
    if args.worker:
        print(json.dumps(_worker_main(args)))
        return 0
    from bench import report as bench_report

    results = json.loads(args.from_json.read_text()) if args.from_json else run(args)
    text = bench_report.tables(results)
    print(text)
    if args.md:
        args.md.parent.mkdir(parents=True, exist_ok=True)
        args.md.write_text(text + "\n")
    if args.out_json and not args.from_json:
        args.out_json.parent.mkdir(parents=True, exist_ok=True)
        args.out_json.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    if args.plot:
        bench_report.plot(results, args.plot)
        from bench import plots as bench_plots

        for path in bench_plots.plot_all(results, args.plot.parent):
            print(f"plot: {path}", file=sys.stderr)
    if args.all:
        from bench import page

        page.main(["--plots"])  # BENCHMARKS.md again, from the results.json just written
    return 0


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(BENCHMARKS.parent))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
