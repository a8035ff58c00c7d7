#!/usr/bin/env python
"""Load and faults of ``ltm serve``: 16 concurrent clients mixing writes and searches on loopback.

    python -m bench.service                       # 30 s per phase, local model (all-MiniLM-L6-v2)
    python -m bench.service --seconds 10 --embedding hash     # quick look

Phases, all in one invocation:

1. **in-process baseline**: the same mix, 16 threads calling one ``MemoryStorage`` directly;
2. **HTTP**: ``ltm serve`` in its own process, 16 client threads (one ``httpx.Client`` each): throughput,
   p50/p99 per operation, errors (target: none), the server's RSS before and after;
3. **kill -9**: the same load; half-way the server is killed with SIGKILL and restarted on the same port.
   Every write the server acknowledged (200 with its ids) must be readable afterwards; requests in flight
   at the kill fail and are counted apart (their writes may or may not have committed: never acknowledged).

Writes are one message per request (the worst case for per-request overhead); searches are hybrid, k=10.
Results go to ``bench/results/service.json``; BENCHMARKS.md quotes them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench import ROOT, module_env

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

WORDS = [
    "deploy",
    "refund",
    "invoice",
    "customer",
    "order",
    "shipping",
    "ticket",
    "password",
    "vpn",
    "certificate",
    "billing",
    "webhook",
    "database",
    "backup",
    "latency",
    "timeout",
    "retry",
    "queue",
    "cache",
    "index",
    "search",
    "memory",
    "agent",
    "policy",
    "lesson",
    "report",
    "meeting",
    "friday",
    "monday",
    "budget",
    "contract",
    "release",
    "rollback",
    "incident",
    "alert",
    "disk",
    "network",
]
NAMESPACE = "bench/load"


@dataclass
class Tally:
    """What the clients of one phase saw."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {"write": [], "search": []})
    errors: dict[str, int] = field(default_factory=dict)
    acked: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ok(self, op: str, seconds: float, ids: list[str] | None = None) -> None:
        with self.lock:
            self.latencies[op].append(seconds)
            if ids:
                self.acked.extend(ids)

    def failed(self, kind: str) -> None:
        with self.lock:
            self.errors[kind] = self.errors.get(kind, 0) + 1

    def summary(self, seconds: float) -> dict[str, Any]:
        out: dict[str, Any] = {"seconds": round(seconds, 1), "errors": dict(self.errors)}
        total = 0
        for op, values in self.latencies.items():
            total += len(values)
            if values:
                ordered = sorted(values)
                out[op] = {
                    "n": len(values),
                    "p50_ms": round(1000 * statistics.median(ordered), 2),
                    "p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 2),
                }
        out["ops_per_s"] = round(total / seconds, 1)
        return out


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))) + f" #{rng.randrange(10**9)}"


def run_clients(n: int, seconds: float, op: Callable[[random.Random, Tally], None], tally: Tally) -> float:
    """``n`` threads calling ``op`` until ``seconds`` pass; returns the wall time."""
    stop = time.monotonic() + seconds

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        while time.monotonic() < stop:
            op(rng, tally)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def in_process(storage_dir: Path, embedding: str, clients: int, seconds: float, write_share: float) -> dict[str, Any]:
    from ltm import MemoryStorage, Message, Settings

    store = MemoryStorage(NAMESPACE, settings=Settings(storage_dir=storage_dir, embedding=embedding))
    store.add_batch([Message(sentence(random.Random(i))) for i in range(200)])  # warm: model loaded, index made
    tally = Tally()

    def op(rng: random.Random, t: Tally) -> None:
        start = time.perf_counter()
        try:
            if rng.random() < write_share:
                message = Message(sentence(rng))
                store.add(message)
                t.ok("write", time.perf_counter() - start, [message.id])
            else:
                store.search(" ".join(rng.sample(WORDS, 3)), 10)
                t.ok("search", time.perf_counter() - start)
        except Exception as exc:  # a benchmark counts failures instead of stopping
            t.failed(type(exc).__name__)

    wall = run_clients(clients, seconds, op, tally)
    store.close()
    return tally.summary(wall)


class Server:
    """``ltm serve`` in a subprocess on a fixed loopback port."""

    def __init__(self, storage_dir: Path, embedding: str, port: int) -> None:
        self.storage_dir, self.embedding, self.port = storage_dir, embedding, port
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Server:
        cmd = [
            sys.executable,
            "-m",
            "ltm.cli",
            "serve",
            "--no-auth",
            "--port",
            str(self.port),
            "--storage-dir",
            str(self.storage_dir),
            "--embedding",
            self.embedding,
            "--log-level",
            "warning",
        ]
        self.proc = subprocess.Popen(cmd, env=module_env(), cwd=str(ROOT), stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ltm serve exited with {self.proc.returncode}")
            try:
                if httpx.get(self.url + "/v1/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("ltm serve did not answer within 120 s")

    def rss_mb(self) -> float:
        assert self.proc is not None
        return round(float(psutil.Process(self.proc.pid).memory_info().rss) / 2**20, 1)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def http_op(url: str, write_share: float) -> Callable[[random.Random, Tally], None]:
    local = threading.local()
    path = f"/v1/namespaces/{NAMESPACE}"

    def op(rng: random.Random, t: Tally) -> None:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(base_url=url, timeout=60)
        start = time.perf_counter()
        try:
            if rng.random() < write_share:
                response = client.post(path + "/messages", json={"messages": [{"content": sentence(rng)}]})
                if response.status_code == 200:
                    t.ok("write", time.perf_counter() - start, response.json()["ids"])
                else:
                    t.failed(f"HTTP {response.status_code}")
            else:
                response = client.post(path + "/search", json={"query": " ".join(rng.sample(WORDS, 3)), "k": 10})
                if response.status_code == 200:
                    t.ok("search", time.perf_counter() - start)
                else:
                    t.failed(f"HTTP {response.status_code}")
        except httpx.HTTPError as exc:
            t.failed(type(exc).__name__)
            time.sleep(0.05)  # the server is down (kill phase): do not spin

    return op


def verify(url: str, ids: list[str]) -> int:
    """How many acknowledged ids are missing on the server."""
    missing = 0
    with httpx.Client(base_url=url, timeout=60) as client:
        for message_id in ids:
            if client.get(f"/v1/namespaces/{NAMESPACE}/messages/{message_id}").status_code != 200:
                missing += 1
    return missing


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=30.0, help="length of each phase (default 30)")
    p.add_argument("--clients", type=int, default=16, help="concurrent clients (default 16)")
    p.add_argument("--write-share", type=float, default=0.5, help="share of writes in the mix (default 0.5)")
    p.add_argument("--embedding", choices=["local", "hash"], default="local", help="default local")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "service.json")
    args = p.parse_args(argv)
    results: dict[str, Any] = {
        "clients": args.clients,
        "write_share": args.write_share,
        "embedding": args.embedding,
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg()[0],
    }
    with tempfile.TemporaryDirectory(prefix="ltm-bench-service-") as tmp:
        print(f"== in-process baseline ({args.clients} threads, {args.seconds:.0f} s)", file=sys.stderr)
        results["in_process"] = in_process(
            Path(tmp) / "inproc", args.embedding, args.clients, args.seconds, args.write_share
        )

        server = Server(Path(tmp) / "served", args.embedding, free_port()).start()
        try:
            warm = httpx.post(
                server.url + f"/v1/namespaces/{NAMESPACE}/messages",
                timeout=120,
                json={"messages": [{"content": sentence(random.Random(i))} for i in range(200)]},
            )
            warm.raise_for_status()
            print(f"== HTTP ({args.clients} clients, {args.seconds:.0f} s)", file=sys.stderr)
            rss_before = server.rss_mb()
            tally = Tally()
            wall = run_clients(args.clients, args.seconds, http_op(server.url, args.write_share), tally)
            results["http"] = {
                **tally.summary(wall),
                "rss_before_mb": rss_before,
                "rss_after_mb": server.rss_mb(),
                "missing_acked": verify(server.url, tally.acked),
            }

            print(f"== kill -9 half-way ({args.seconds:.0f} s)", file=sys.stderr)
            fault = Tally()
            restart: dict[str, float] = {}

            def killer() -> None:
                time.sleep(args.seconds / 2)
                server.kill()
                start = time.perf_counter()
                server.start()
                restart["seconds"] = round(time.perf_counter() - start, 2)

            thread = threading.Thread(target=killer)
            thread.start()
            wall = run_clients(args.clients, args.seconds, http_op(server.url, args.write_share), fault)
            thread.join()
            results["kill9"] = {
                **fault.summary(wall),
                "restart_s": restart.get("seconds"),
                "acked_writes": len(fault.acked),
                "missing_acked": verify(server.url, fault.acked),
            }
        finally:
            server.stop()
    results["load_after"] = os.getloadavg()[0]
    base, http = results["in_process"]["ops_per_s"], results["http"]["ops_per_s"]
    results["http_vs_in_process_throughput"] = round(http / base, 2) if base else None
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0 if results["http"]["missing_acked"] == 0 and results["kill9"]["missing_acked"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
