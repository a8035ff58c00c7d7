"""A private Redis Cluster for the tests: 3 masters + 3 replicas from Debian's redis-server on free loopback ports.

``RedisCluster().start()`` launches six ``redis-server --cluster-enabled yes`` processes in a temp dir, joins
them with ``redis-cli --cluster create --cluster-replicas 1`` and waits until every node reports
``cluster_state:ok`` and every replica's link to its master is up. ``cluster-node-timeout`` is short (1 s) so
a killed master is failed over in a few seconds instead of the default 15. ``kill(port)`` sends SIGKILL to
one node (a crash, not a shutdown); ``wait_failover(port)`` waits until another node owns its slots.
Never the machine's shared services: the ports are free ones, and everything is stopped by ``close()``.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis

from tests.support.redis_server import free_port

NODE_TIMEOUT_MS = 1000


def cluster_port(taken: set[int] | None = None) -> int:
    """A free port whose cluster bus port (port + 10000) is a valid, free port too: an ephemeral port above
    55535 has no bus port, and redis-server then exits at once."""
    taken = taken or set()
    for _ in range(500):
        port = free_port()
        if port + 10000 > 65535 or port in taken or port + 10000 in taken:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair (port, port + 10000) for a cluster node")


class RedisCluster:
    """Six nodes (``masters`` masters, one replica each); ``url`` is a ``redis+cluster://`` seed URL."""

    def __init__(self, masters: int = 3) -> None:
        binary, cli = shutil.which("redis-server"), shutil.which("redis-cli")
        if binary is None or cli is None:
            raise RuntimeError("redis-server / redis-cli are not installed: run scripts/setup (apt-get redis-server)")
        self.binary, self.cli = binary, cli
        self.masters = masters
        self.dir = Path(tempfile.mkdtemp(prefix="ltm-cluster-"))
        self.ports: list[int] = []
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.initial_masters: list[int] = []

    @property
    def url(self) -> str:
        """A seed URL: the client discovers the other nodes from any live one."""
        return f"redis+cluster://127.0.0.1:{self.ports[0]}"

    def start(self, timeout: float = 30.0) -> RedisCluster:
        taken: set[int] = set()
        for _ in range(2 * self.masters):
            port = cluster_port(taken)
            taken.update((port, port + 10000))
            self.ports.append(port)
        for port in self.ports:
            self._launch(port)
        for port in self.ports:
            self._wait_ping(port, timeout)
        nodes = [f"127.0.0.1:{p}" for p in self.ports]
        done = subprocess.run(
            [self.cli, "--cluster", "create", *nodes, "--cluster-replicas", "1", "--cluster-yes"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            self.close()
            raise RuntimeError(f"redis-cli --cluster create failed: {done.stdout[-2000:]} {done.stderr[-2000:]}")
        self.wait_healthy(timeout)
        self.initial_masters = sorted(p for p, role in self.roles().items() if role == "master")
        return self

    def _launch(self, port: int) -> None:
        folder = self.dir / str(port)
        folder.mkdir(exist_ok=True)
        args = [
            self.binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(folder),
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            str(folder / "nodes.conf"),
            "--cluster-node-timeout",
            str(NODE_TIMEOUT_MS),
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "yes",
            "--daemonize",
            "no",
            "--logfile",
            str(folder / "redis.log"),
        ]
        self.procs[port] = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _wait_ping(self, port: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.2)
        try:
            while True:
                try:
                    if client.ping():
                        return
                except redis.ConnectionError:
                    pass
                proc = self.procs[port]
                if proc.poll() is not None or time.monotonic() > deadline:
                    log = self.dir / str(port) / "redis.log"
                    text = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                    raise RuntimeError(f"cluster node on port {port} did not start: {text}")
                time.sleep(0.05)
        finally:
            client.close()

    def node(self, port: int) -> redis.Redis:
        """A plain (non-cluster) client of one node, for admin commands; the caller closes it."""
        return redis.Redis(host="127.0.0.1", port=port, decode_responses=True, socket_timeout=2)

    def alive(self) -> list[int]:
        return [p for p, proc in self.procs.items() if proc.poll() is None]

    def roles(self) -> dict[int, str]:
        """{port: "master" | "slave"} of the live nodes."""
        out = {}
        for port in self.alive():
            client = self.node(port)
            try:
                out[port] = str(client.info("replication")["role"])
            finally:
                client.close()
        return out

    def wait_healthy(self, timeout: float = 30.0) -> None:
        """Every live node says cluster_state:ok, every live master owns slots, and every replica is in sync."""
        deadline = time.monotonic() + timeout
        while True:
            problems = self._problems()
            if not problems:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster not healthy after {timeout} s: {problems}")
            time.sleep(0.1)

    def _problems(self) -> list[str]:
        problems = []
        for port in self.alive():
            client = self.node(port)
            try:
                if client.cluster("info").get("cluster_state") != "ok":
                    problems.append(f"{port}: cluster_state not ok")
                replication = client.info("replication")
                if replication["role"] == "slave" and replication.get("master_link_status") != "up":
                    problems.append(f"{port}: replica link down")
            except redis.RedisError as exc:
                problems.append(f"{port}: {exc}")
            finally:
                client.close()
        return problems

    def master_of(self, key: str) -> int:
        """The port of the master that serves ``key``'s hash slot now."""
        client = self.node(self.alive()[0])
        try:
            slot = int(client.cluster("keyslot", key))
            for start, end, master, *_ in client.execute_command("CLUSTER", "SLOTS"):  # type: ignore[no-untyped-call]
                if int(start) <= slot <= int(end):
                    return int(master[1])
        finally:
            client.close()
        raise RuntimeError(f"no master serves the slot of {key!r}")

    def kill(self, port: int) -> None:
        """SIGKILL one node: a crash (nothing flushed, no goodbye to the cluster)."""
        proc = self.procs[port]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)

    def restart(self, port: int, timeout: float = 30.0) -> None:
        """Start a killed node again on its port and data dir: it rejoins the cluster (a failed-over master
        comes back as a replica of the node that replaced it)."""
        self._launch(port)
        self._wait_ping(port, timeout)

    def wait_failover(self, dead: int, timeout: float = 30.0) -> int:
        """Wait until a replica of the killed master ``dead`` was promoted and the cluster is ok; its port."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                client = self.node(self.alive()[0])
                try:
                    owners = {int(m[1]) for _s, _e, m, *_ in client.execute_command("CLUSTER", "SLOTS")}  # type: ignore[no-untyped-call]
                finally:
                    client.close()
                if dead not in owners and len(owners) == self.masters and not self._problems():
                    promoted = [p for p, role in self.roles().items() if role == "master"]
                    return next(p for p in promoted if p in owners and p not in self.initial_masters)
            except (redis.RedisError, StopIteration):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"no failover of {dead} within {timeout} s")
            time.sleep(0.1)

    def flush(self) -> None:
        """Empty every master (replicas follow)."""
        for port, role in self.roles().items():
            if role == "master":
                client = self.node(port)
                try:
                    client.flushall()
                finally:
                    client.close()

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
        shutil.rmtree(self.dir, ignore_errors=True)
