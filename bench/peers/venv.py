"""mem0's own virtual environment (``bench/.venvs/mem0``, git-ignored): made once, never the project's venv.

``python -m venv`` from this interpreter, then pip installs ``mem0ai`` at the pinned version, the
sentence-transformers runtime its huggingface embedder imports, and the torch build the project's venv has
(the same wheel, so both engines run the same torch).
"""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

from bench import ROOT

VENV = ROOT / "bench" / ".venvs" / "mem0"
MEM0_VERSION = "2.2.1"


def python(venv: Path = VENV) -> Path:
    return venv / "bin" / "python"


def installed(venv: Path = VENV) -> str | None:
    """mem0ai's version in ``venv`` when it and sentence-transformers import there, else None."""
    if not python(venv).exists():
        return None
    probe = "import mem0, sentence_transformers, importlib.metadata as m; print(m.version('mem0ai'))"
    done = subprocess.run([str(python(venv)), "-c", probe], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def ensure(version: str = MEM0_VERSION, venv: Path = VENV) -> str:
    """mem0ai ``version`` ready in ``venv`` (created and installed when missing); returns the version."""
    have = installed(venv)
    if have == version:
        return have
    if not python(venv).exists():
        print(f"creating {venv} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    torch = f"torch=={metadata.version('torch')}"
    print(f"installing mem0ai=={version} into {venv} (once) ...", file=sys.stderr)
    subprocess.run(
        [str(python(venv)), "-m", "pip", "install", "-q", f"mem0ai=={version}", "sentence-transformers", torch],
        check=True,
    )
    have = installed(venv)
    if have != version:
        raise SystemExit(f"mem0ai {version} did not install into {venv} (found {have}); see pip's output above")
    return have
