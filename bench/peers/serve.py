"""The JSON-lines loop of a bench worker process: one request a line on stdin, one answer a line on stdout.

Both kinds of worker run it, :mod:`bench.peers.worker` (ltm or mem0) and :mod:`bench.peers.embedded` (ltm or an
embedded vector store), each under its own interpreter: this module imports the standard library only. A request
is a JSON object with an ``op``; ``open`` comes first and ``close`` last (answered, then the loop ends). An answer
is the worker's JSON object, or ``{"error": ..., "trace": ...}`` when its call raised, which the driver reports
before it stops every worker.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import IO, Any

Request = dict[str, Any]


def claim_stdout() -> IO[str]:
    """The protocol's stream, a line-buffered copy of stdout; ``sys.stdout`` is stderr from then on, so what the
    libraries print cannot corrupt the protocol. Called before the libraries are imported."""
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr
    return protocol


def serve(
    protocol: IO[str],
    open_: Callable[[Request], Request],
    handle: Callable[[Request], Request],
    close: Callable[[], None],
) -> int:
    """Answer the requests on stdin until ``close`` (or the end of input): ``open_`` the first, ``handle`` the
    others; the exit status for the process."""
    opened = False
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if request["op"] == "open":
                answer = open_(request)
                opened = True
            elif request["op"] == "close":
                if opened:
                    close()
                protocol.write(json.dumps({"times": []}) + "\n")
                return 0
            else:
                if not opened:
                    raise RuntimeError("open first")
                answer = handle(request)
        except Exception as exc:  # the driver reports it and stops every worker
            answer = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
        protocol.write(json.dumps(answer) + "\n")
    return 0
