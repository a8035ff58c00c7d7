"""A client process of an ``ltm serve``, for the service's read-your-writes test (tests/service).

python -m tests.support.remote_reader URL KEY NAMESPACE
    opens one RemoteStorage, prints READY, then answers each stdin line "search <text>" with the ids of its default
    search's 5 hits (space-separated, "-" for none); any other line ends it
"""

from __future__ import annotations

import sys

from ltm.client import RemoteStorage


def main(url: str, key: str, namespace: str) -> None:
    store = RemoteStorage(namespace, url=url, api_key=key)
    print("READY", flush=True)
    for line in sys.stdin:
        command, _, text = line.rstrip("\n").partition(" ")
        if command != "search":
            break
        print(" ".join(h.message.id for h in store.search(text, 5)) or "-", flush=True)
    store.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
