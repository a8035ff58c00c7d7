"""A separate process that reads or supersedes versions, for the read-your-writes tests of
:mod:`ltm.store.validity` (LTM_STORE_URL from the test's environment puts it on the test's PostgreSQL).

python -m tests.support.versions_worker supersede DIR NAMESPACE OLD_ID CONTENT
    supersedes OLD_ID with a new version holding CONTENT; prints "ACK <new id>" once it returned
python -m tests.support.versions_worker forget DIR NAMESPACE ID
    forgets ID; prints "ACK <how many removed>" once it returned
python -m tests.support.versions_worker read DIR NAMESPACE
    opens once, prints READY, then answers each stdin line "<mode> <query>" with the JSON list of the ids of
    its default search (k=5), without reopening; "quit" ends it
"""

from __future__ import annotations

import json
import sys

from ltm import MemoryStorage, Message, Settings


def main(argv: list[str]) -> None:
    command, directory, namespace = argv[:3]
    store = MemoryStorage(namespace, settings=Settings.load(storage_dir=directory, embedding="hash"))
    if command == "supersede":
        new = store.supersede(argv[3], Message(argv[4]), reason="from another process")
        print(f"ACK {new}", flush=True)
    elif command == "forget":
        print(f"ACK {store.forget(argv[3], reason='from another process').removed}", flush=True)
    elif command == "read":
        print("READY", flush=True)
        for line in sys.stdin:
            if line.strip() == "quit":
                break
            mode, query = line.rstrip("\n").split(" ", 1)
            hits = store.search(query, 5, mode=mode)  # type: ignore[arg-type]
            print(json.dumps([h.message.id for h in hits]), flush=True)
    store.close()


if __name__ == "__main__":
    main(sys.argv[1:])
