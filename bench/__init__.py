"""ltm's benchmarks and evaluations, run as modules: ``python -m bench.run --quick``, ``python -m bench.brain``...

Results go to ``bench/results/``; BENCHMARKS.md quotes them with the command that produced them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def module_cmd(module: str, *args: str) -> list[str]:
    """The command line that runs ``bench.<module>`` in a fresh interpreter (see :func:`module_env`)."""
    return [sys.executable, "-m", f"bench.{module}", *args]


def module_env() -> dict[str, str]:
    """The environment for :func:`module_cmd`: the repository root on ``PYTHONPATH`` so ``bench`` imports."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env
