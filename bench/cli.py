"""How fast the ``ltm`` command answers: wall time of each command in a fresh process, first run and median of
the next runs, on a namespace of ``--messages`` messages.

    python -m bench.cli                    # 1,000 messages, 3 warm runs each
    python -m bench.cli --messages 10000

Commands that do not embed (recent, get, stats, export) must not load the model; search loads it once.
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

from bench import module_env


def timed(args: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ltm.cli", *args], env=env, check=True, capture_output=True, timeout=600)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> dict[str, tuple[float, float]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--messages", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="ltm-cli-bench-"))
    env = {**module_env(), "LTM_STORAGE_DIR": str(root), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("LTM_EMBEDDING", None)
    lines = "\n".join(
        json.dumps({"content": f"note {i}: the team decided item {i % 97} in meeting {i // 97}"})
        for i in range(args.messages)
    )
    subprocess.run(
        [sys.executable, "-m", "ltm.cli", "import", "-n", "bench"],
        input=lines,
        text=True,
        env=env,
        check=True,
        capture_output=True,
        timeout=1800,
    )
    first_id = json.loads(
        subprocess.run(
            [sys.executable, "-m", "ltm.cli", "recent", "-n", "bench", "-N", "1", "--json"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )["id"]
    commands = {
        "--version": ["--version"],
        "recent": ["recent", "-n", "bench"],
        "get": ["get", "-n", "bench", first_id],
        "stats": ["stats"],
        "export": ["export", "-n", "bench", "-o", os.devnull],
        "search (keyword)": ["search", "-n", "bench", "item 42", "--mode", "keyword"],
        "search (hybrid, local model)": ["search", "-n", "bench", "what did the team decide?"],
    }
    results = {}
    print(f"| command ({args.messages:,} messages) | first run s | warm median s |\n|---|---|---|")
    for name, cmd in commands.items():
        first = timed(cmd, env)
        warm = statistics.median(timed(cmd, env) for _ in range(args.repeat))
        results[name] = (first, warm)
        print(f"| `ltm {' '.join(cmd[:1])}` {name if name != cmd[0] else ''} | {first:.2f} | {warm:.2f} |")
    return results


if __name__ == "__main__":
    main()
