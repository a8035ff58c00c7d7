"""ltm against its peers, measured side by side in one run: ``python -m bench.peers``.

mem0 (``mem0ai``) runs in its own virtual environment, ``bench/.venvs/mem0`` (git-ignored, made by
:mod:`bench.peers.venv` on the first run), never in the project's; each engine is a :mod:`bench.peers.worker`
process and :mod:`bench.peers.run` interleaves them. This package imports no ltm code at import time: the
worker runs under mem0's interpreter too.
"""
