"""bench/peers: the worker protocol, the interleaving, the ratios, the corpus and the closed LLM port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bench import ROOT
from bench.peers import run
from bench.peers.__main__ import markdown, table


def test_every_engine_goes_first_in_turn() -> None:
    orders = [order for _, order in run.rounds(3, ["ltm", "ltm@base", "mem0"])]
    assert [o[0] for o in orders] == ["ltm", "ltm@base", "mem0"]
    assert all(sorted(o) == ["ltm", "ltm@base", "mem0"] for o in orders)
    assert [o[0] for _, o in run.rounds(4, ["ltm", "mem0"])] == ["ltm", "mem0", "ltm", "mem0"]


def test_ratios_are_of_medians_and_per_message_for_batches() -> None:
    samples = run.Samples()
    samples.add("search, dense (at 1,000)", "ltm", [0.004, 0.005, 0.100], 3)
    samples.add("search, dense (at 1,000)", "mem0", [0.010, 0.010, 0.011], 3)
    samples.add("add in batches of 100 (to 1,000)", "ltm", [1.0, 3.0], 200)
    samples.add("add in batches of 100 (to 1,000)", "mem0", [4.0, 4.0], 200)
    rows = {r["operation"]: r for r in table(samples, ["ltm", "mem0"])}
    assert rows["search, dense (at 1,000)"]["ltm / mem0"] == pytest.approx(0.5)  # 5 ms / 10 ms: the tail ignored
    assert rows["add in batches of 100 (to 1,000)"]["ltm / mem0"] == pytest.approx(0.5)  # 20 ms / 40 ms per message
    text = markdown(list(rows.values()), ["ltm", "mem0"])
    assert "| search, dense (at 1,000) | 5.00 | 10.00 | 0.50x |" in text


def test_the_fallback_corpus_repeats_with_distinct_texts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(run, "DATA", tmp_path / "absent.json")
    name, turns, questions = run.corpus(1000)
    assert "not fetched" in name and len(turns) == 1000
    n = sum(1 for line in run.FIXTURE.read_text("utf-8").splitlines() if line.strip())
    assert all(turns[i]["text"] == f"{turns[i % n]['text']} ({i // n})" for i in range(n, 1000))  # new text
    assert questions


def test_the_llm_url_names_a_closed_port() -> None:
    port = int(run.closed_url().rsplit(":", 1)[1].split("/")[0])
    with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
        probe.connect(("127.0.0.1", port))


def test_the_ltm_worker_speaks_only_the_protocol_on_stdout(tmp_path: Path) -> None:
    requests = [
        {"op": "open", "dir": str(tmp_path), "model": "unused"},
        {"op": "add_one", "turns": [{"text": "I moved to Bishopston", "speaker": "Maya", "time": 1.7e9}]},
        {
            "op": "add_batch",
            "batch": 2,
            "turns": [{"text": f"turn {i}", "speaker": "Theo", "time": 1.7e9 + i} for i in range(3)],
        },
        {"op": "search", "queries": ["where does Maya live?"], "mode": "hybrid", "k": 2},
        {"op": "nonsense"},
        {"op": "close"},
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT), LTM_EMBEDDING="hash")
    done = subprocess.run(
        [sys.executable, "-m", "bench.peers.worker", "ltm"],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(answers) == len(requests)
    opened, one, batch, search, bad, _ = answers
    assert len(one["times"]) == 1 and len(one["out"]) == 1
    assert len(batch["times"]) == 2 and len(batch["out"]) == 3  # two calls: 2 + 1 messages
    assert search["out"][0][0] == one["out"][0]  # the stored id comes back
    assert "unknown op" in bad["error"]
