"""A separate process that uses a store, for durability and concurrency tests.

python -m tests.support.store_worker write DIR NAMESPACE PREFIX N [SNAPSHOT_EVERY [THREADS]]
    adds N messages one by one (from THREADS threads at once, default 1: their adds are group-committed);
    prints "ACK <id> <content>" after each add returned (durable), then DONE
python -m tests.support.store_worker forkserver DIR NAMESPACE SNAPSHOT_EVERY
    imports once, then for each stdin line "run PREFIX N [THREADS]" forks a writer child (prints "PID <pid>",
    then what `write` prints) and prints "EXIT <status>" when it ends: a kill -9 target that does not
    pay the interpreter's start-up for every run
python -m tests.support.store_worker read DIR NAMESPACE
    opens once, prints READY, then answers stdin lines without reopening:
    "stats" -> "<messages> <vectors>", "find <text>" -> id of the best dense hit (or "-"),
    "search <text>" -> the ids of a default search's 5 hits (space-separated, "-" for none), "quit"
python -m tests.support.store_worker experience DIR AGENT
    like forkserver, for an ExperienceMemory: for each stdin line "run" forks a child (prints "PID <pid>")
    that serves the held policies for their own texts over and over (every call rewrites each policy
    served: hits + 1) and prints "ACK <json {policy id: hits}>" after each call returned
python -m tests.support.store_worker ltm DIR ROLE ACTION JSON_TEXTS
    a LongTermMemory recovered for ROLE watching the user requirement; ACTION "add" adds each text,
    "news" prints the JSON list of texts find_news keeps; "recover" prints the recovered texts
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterable

from ltm import ExperienceMemory, LongTermMemory, MemoryStorage, Message, Settings, UserRequirement


def acked(writers: Iterable[subprocess.Popen[str]]) -> dict[str, str]:
    """{message id: content} of every add that finished ``write`` workers acknowledged ("ACK <id> <content>");
    each worker must have exited 0."""
    found: dict[str, str] = {}
    for writer in writers:
        out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
        for line in out.splitlines():
            if line.startswith("ACK"):
                _, message_id, content = line.split(" ", 2)
                found[message_id] = content
    return found


def _settings(directory: str, snapshot_every: int = 10_000) -> Settings:
    # LTM_STORE_URL from the test's environment puts the worker on the same PostgreSQL as the test
    return Settings.load(storage_dir=directory, embedding="hash", snapshot_every=snapshot_every)


def write(directory: str, namespace: str, prefix: str, n: int, snapshot_every: int, threads: int = 1) -> None:
    store = MemoryStorage(namespace, settings=_settings(directory, snapshot_every))
    printing = threading.Lock()

    def adds(part: range) -> None:
        for i in part:
            message = Message(f"{prefix} item {i} token{prefix}x{i}", role="writer")
            store.add(message)
            with printing:  # one write(2) per line, below PIPE_BUF: a kill -9 lands before or after it,
                # never inside (print() wrote a line in pieces; a kill between them glued the half line to
                # the parent's "EXIT" and the test waited forever)
                os.write(sys.stdout.fileno(), f"ACK {message.id} {message.content}\n".encode())

    workers = [threading.Thread(target=adds, args=(range(t, n, threads),)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    store.close()
    print("DONE", flush=True)


def forkserver(directory: str, namespace: str, snapshot_every: int) -> None:
    print("READY", flush=True)
    for line in sys.stdin:
        parts = line.split()
        if not parts or parts[0] != "run":
            break
        pid = os.fork()
        if pid == 0:  # the child: a fresh store handle, nothing inherited from the parent but modules
            try:
                print("PID", os.getpid(), flush=True)
                write(
                    directory,
                    namespace,
                    parts[1],
                    int(parts[2]),
                    snapshot_every,
                    int(parts[3]) if len(parts) > 3 else 1,
                )
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        print("EXIT", status, flush=True)


def experience(directory: str, agent: str) -> None:
    print("READY", flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        pid = os.fork()
        if pid == 0:
            try:
                print("PID", os.getpid(), flush=True)
                memory = ExperienceMemory(agent, settings=_settings(directory), min_relevance=0.0, relevance_margin=1.0)
                tasks = [p.text for p in memory.policies()]
                for i in range(100_000):
                    served = memory.policies_for(tasks[i % len(tasks)], k=len(tasks))
                    # one write below PIPE_BUF per line: a kill lands before or after it, never inside
                    os.write(sys.stdout.fileno(), f"ACK {json.dumps({p.id: p.hits for p in served})}\n".encode())
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        print("EXIT", status, flush=True)


def read(directory: str, namespace: str) -> None:
    store = MemoryStorage(namespace, settings=_settings(directory))
    print("READY", flush=True)
    for line in sys.stdin:
        command, _, arg = line.rstrip("\n").partition(" ")
        if command == "stats":
            stats = store.stats()
            print(stats.messages, stats.vectors, flush=True)
        elif command == "find":
            hits = store.search(arg, k=1, mode="dense")
            print(hits[0].message.id if hits else "-", flush=True)
        elif command == "search":
            print(" ".join(h.message.id for h in store.search(arg, k=5)) or "-", flush=True)
        else:
            break
    store.close()


def longterm(directory: str, role: str, action: str, texts: list[str]) -> None:
    memory = LongTermMemory(settings=_settings(directory))
    recovered = memory.recover_memory(role, watch=[UserRequirement])
    messages = [Message(t, role="user", cause_by=UserRequirement) for t in texts]
    if action == "add":
        for message in messages:
            memory.add(message)
    elif action == "news":
        print(json.dumps([m.content for m in memory.find_news(messages)]), flush=True)
    elif action == "recover":
        print(json.dumps([m.content for m in recovered] + [m.content for m in memory.get()]), flush=True)
    memory.memory_storage.close()


def main(argv: list[str]) -> None:
    command, args = argv[0], argv[1:]
    if command == "write":
        write(
            args[0],
            args[1],
            args[2],
            int(args[3]),
            int(args[4]) if len(args) > 4 else 10_000,
            int(args[5]) if len(args) > 5 else 1,
        )
    elif command == "forkserver":
        forkserver(args[0], args[1], int(args[2]))
    elif command == "experience":
        experience(args[0], args[1])
    elif command == "read":
        read(args[0], args[1])
    elif command == "ltm":
        longterm(args[0], args[1], args[2], json.loads(args[3]))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
