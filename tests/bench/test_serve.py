"""The bench workers' JSON-lines loop (bench.peers.serve): one answer a request, errors as answers, stdout kept for
the protocol, and nothing served before ``open``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench import ROOT

WORKER = """
from bench.peers.serve import claim_stdout, serve
protocol = claim_stdout()
print("a library's chatter")  # must reach stderr, not the protocol
state = {}
def open_(request):
    state["n"] = request["n"]
    return {"times": [0.0]}
def handle(request):
    if request["op"] == "add":
        state["n"] += request["by"]
        return {"times": [], "out": state["n"]}
    raise ValueError(f"unknown op {request['op']!r}")
raise SystemExit(serve(protocol, open_, handle, lambda: print("closed")))
"""


def _run(tmp_path: Path, requests: list[dict[str, object]]) -> tuple[list[dict[str, object]], str, int]:
    done = subprocess.run(
        [sys.executable, "-c", WORKER],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr, done.returncode


def test_each_request_gets_one_answer_and_close_ends_the_loop(tmp_path: Path) -> None:
    requests: list[dict[str, object]] = [
        {"op": "open", "n": 1},
        {"op": "add", "by": 2},
        {"op": "nonsense"},
        {"op": "close"},
        {"op": "add", "by": 5},
    ]
    answers, stderr, code = _run(tmp_path, requests)
    assert code == 0
    assert answers[:2] == [{"times": [0.0]}, {"times": [], "out": 3}]
    assert answers[2]["error"] == "ValueError: unknown op 'nonsense'" and "Traceback" in str(answers[2]["trace"])
    assert answers[3] == {"times": []} and len(answers) == 4  # nothing is read after close
    assert "a library's chatter" in stderr and "closed" in stderr


def test_nothing_is_served_before_open(tmp_path: Path) -> None:
    answers, stderr, code = _run(tmp_path, [{"op": "add", "by": 1}, {"op": "close"}])
    assert code == 0
    assert answers[0]["error"] == "RuntimeError: open first"
    assert answers[1] == {"times": []} and "closed" not in stderr  # close without open closes nothing
