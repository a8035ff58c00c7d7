"""How fast the store's catalog lists a data root with many namespaces (``ltm stats`` runs it).

``build`` makes one real namespace (a few messages, hash embedding), then copies its folder ``--n`` times
under the names ``ns-<i>`` of three kinds, each with its own manifest; ``list`` times
``ltm.store.namespaces`` over the root (once first, when it opens every log, then ``--repeat`` runs, warm
page cache, where the catalog reuses what it read of unchanged namespaces) beside the baseline measured in the
same run: what the CLI did before the catalog (glob the manifests, ``json.loads`` each, open a read-write
``MessageLog`` and count).

    python -m bench.catalog build --n 10000 --dir /tmp/catalog10k
    python -m bench.catalog list --dir /tmp/catalog10k --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ltm.config import Settings
from ltm.message import Message
from ltm.store import MemoryStorage, namespace_path, namespaces

KINDS = ("role", "user", "agent")


def _settings(directory: Path) -> Settings:
    return Settings(storage_dir=directory, embedding="hash")


def build(n: int, directory: Path) -> None:
    settings = _settings(directory)
    store = MemoryStorage("template", settings=settings)
    store.add_batch([Message(f"template note {i}") for i in range(5)])
    template = store.path
    store.close()
    assert template is not None
    for i in range(n):
        kind, name = KINDS[i % len(KINDS)], f"ns-{i}"
        target = namespace_path(settings, kind, name)
        shutil.copytree(template, target)
        manifest = json.loads((target / "manifest.json").read_text("utf-8"))
        (target / "manifest.json").write_text(json.dumps({**manifest, "namespace": name}), "utf-8")
    shutil.rmtree(template)


def _baseline(root: Path) -> int:
    """The CLI's stats loop before the catalog (ltm/cli/namespaces.py at 826b132), minus the table."""
    from ltm.store.embedded import MessageLog

    total = 0
    for manifest in sorted(root.glob("*/*/manifest.json")):
        json.loads(manifest.read_text("utf-8"))
        log = MessageLog(manifest.parent / "memory.sqlite")
        total += log.count()
        log.close()
        sum(f.stat().st_size for f in manifest.parent.iterdir() if f.is_file())
    return total


def _catalog(settings: Settings) -> int:
    return sum(info.messages or 0 for info in namespaces(settings))


def list_root(directory: Path, repeat: int) -> None:
    settings = _settings(directory)
    wall: dict[str, list[float]] = {"catalog": [], "baseline": []}
    cpu: dict[str, list[float]] = {"catalog": [], "baseline": []}
    found: dict[str, int] = {}
    runs: tuple[tuple[str, Callable[[], int]], ...] = (
        ("catalog", lambda: _catalog(settings)),
        ("baseline", lambda: _baseline(directory)),
    )
    started = time.perf_counter()
    _catalog(settings)  # the first listing in this process opens every log
    first = time.perf_counter() - started
    for _ in range(repeat):
        for name, run in runs:
            started, cpu_started = time.perf_counter(), time.process_time()
            found[name] = run()
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - cpu_started)
    count = sum(1 for _ in namespaces(settings))
    median = {name: statistics.median(times) for name, times in wall.items()}
    median_cpu = {name: statistics.median(times) for name, times in cpu.items()}
    print(
        json.dumps(
            {
                "namespaces": count,
                "messages": found,
                "repeat": repeat,
                "first_catalog_wall_s": round(first, 3),
                "median_wall_s": {k: round(v, 3) for k, v in median.items()},
                "median_cpu_s": {k: round(v, 3) for k, v in median_cpu.items()},
                "baseline_over_catalog_wall": round(median["baseline"] / median["catalog"], 2),
                "load_average": os.getloadavg(),
            }
        )
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("build", "list"))
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    if args.action == "build":
        build(args.n, args.dir)
    else:
        list_root(args.dir, args.repeat)


if __name__ == "__main__":
    main()
