"""kill -9 in the middle of policy rewrites: every policy survives, as its old or its new version.

A real child process (tests/support/store_worker.py ``experience``) serves the held policies over and over;
every call rewrites each served policy (``hits`` + 1) through ``MemoryStorage.replace``. It is killed at a
random moment, many times. Before ``replace`` a rewrite was a delete then an add, two transactions, and a
kill between them lost the policy.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time

import pytest

from ltm import ExperienceMemory, MemoryStorage, Settings
from tests.store.contract.test_durability import _line, _send, _worker

pytestmark = pytest.mark.slow


def _distilled(settings: Settings, agent: str) -> dict[str, int]:
    """Three policies distilled offline from failures; {policy id: hits}."""
    with ExperienceMemory(agent, settings=settings) as memory:
        for tool, error in (
            ("refund_order", "Order ORD-{} is still pending"),
            ("add_note", "Order ORD-{} not found"),
            ("ship_order", "Address of ORD-{} is missing"),
        ):
            for i in range(3):
                memory.record_failure(tool, error.format(i), args={"order_id": f"ORD-{i}"}, task=f"{tool} task")
        policies = memory.distill(min_lessons=3, keep_recent=0, max_policies=3)
        assert len(policies) == 3
        return {p.id: p.hits for p in policies}


def test_kill_9_during_policy_rewrites_never_loses_a_policy(settings: Settings) -> None:
    settings = settings.with_(embedding="hash")  # what the worker uses
    held = _distilled(settings, "crash-agent")
    with ExperienceMemory("crash-agent", settings=settings) as memory:
        lessons = len(memory.lessons(pending_only=False))
    rng = random.Random(20261123)
    server = _worker("experience", str(settings.storage_dir), "crash-agent")
    acked = dict(held)  # the hits each policy had when a rewrite was last acknowledged
    rewrites = 0
    try:
        assert _line(server) == "READY"
        for _ in range(30):
            _send(server, "run")
            pid = int(_line(server).split()[1])
            for _ in range(rng.randint(1, 6)):
                kind, served = _line(server).split(" ", 1)
                assert kind == "ACK"
                acked.update(json.loads(served))
                rewrites += len(json.loads(served))
            time.sleep(rng.uniform(0, 0.02))  # lands inside a later call: a search, a replace, a snapshot
            os.kill(pid, signal.SIGKILL)
            while not (line := _line(server)).startswith("EXIT"):
                acked.update(json.loads(line.split(" ", 1)[1]))
            with ExperienceMemory("crash-agent", settings=settings) as memory:
                found = {p.id: p.hits for p in memory.policies()}
                assert set(found) == set(held), "a policy was lost or duplicated by the kill"
                assert all(found[pid_] >= acked[pid_] for pid_ in held), (found, acked)  # acknowledged = durable
                assert len(memory.lessons(pending_only=False)) == lessons
            store = MemoryStorage("crash-agent", kind="experience", settings=settings)
            stats = store.stats()
            store.close()
            assert stats.messages == stats.vectors == len(held) + lessons  # FAISS follows SQLite
    finally:
        if server.stdin:
            server.stdin.close()
        server.wait(timeout=60)
    assert rewrites >= 30  # the worker really rewrote policies before the kills
