"""A LangGraph agent whose memories outlive its process: the graph's store is ltm's ``LtmStore``.

    python examples/langgraph_agent.py

One node writes what the user said into the store, another searches it for what the user asks. The demo runs
the graph in a first process that writes its memories and is then killed with SIGKILL (no clean shutdown),
and asks in a second run of the graph: the memories are there, found by meaning. No LLM is needed; ltm's
configured model (the local all-MiniLM-L6-v2 by default) embeds. ``remember DIR`` and ``recall DIR QUESTION``
run one side alone (tests/integrations/test_langgraph.py kills the first itself).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

from ltm import Settings
from ltm.integrations.langgraph import LtmStore

USER = "u7"
SAID = [
    "My cat is called Mochi and she is afraid of the vacuum cleaner.",
    "I am allergic to peanuts, so no satay for me.",
    "I moved to Lisbon last spring and I am learning Portuguese.",
]


class State(TypedDict):
    user_id: str
    said: list[str]
    question: str
    recalled: list[str]


def remember(state: State, *, store: BaseStore) -> dict[str, list[str]]:
    """Store each thing the user said as a memory of theirs (durable when put returns)."""
    for text in state["said"]:
        store.put(("memories", state["user_id"]), uuid.uuid4().hex, {"text": text})
    return {}


def recall(state: State, *, store: BaseStore) -> dict[str, list[str]]:
    """The user's two memories closest to the question."""
    if not state["question"]:
        return {"recalled": []}
    hits = store.search(("memories", state["user_id"]), query=state["question"], limit=2)
    return {"recalled": [hit.value["text"] for hit in hits]}


def graph(storage_dir: str) -> CompiledStateGraph[State, None, State, State]:
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=LtmStore(Settings.load(storage_dir=storage_dir)))


def run_remember(storage_dir: str) -> None:
    graph(storage_dir).invoke({"user_id": USER, "said": SAID, "question": "", "recalled": []})
    print(f"remembered {len(SAID)}", flush=True)
    while True:  # wait to be killed
        time.sleep(60)


def run_recall(storage_dir: str, question: str) -> list[str]:
    result = graph(storage_dir).invoke({"user_id": USER, "said": [], "question": question, "recalled": []})
    return list(result["recalled"])


def main() -> None:
    storage_dir = os.environ.get("LTM_STORAGE_DIR") or tempfile.mkdtemp()
    first = subprocess.Popen([sys.executable, __file__, "remember", storage_dir], stdout=subprocess.PIPE, text=True)
    assert first.stdout is not None
    said = first.stdout.readline().strip()
    if not said.startswith("remembered"):
        raise SystemExit(f"the first process failed (exit {first.wait()})")
    print("first process:", said)
    first.send_signal(signal.SIGKILL)  # no clean shutdown: whatever put() returned from is on disk
    first.wait()
    print("killed with SIGKILL; a new process asks")
    recalled = run_recall(storage_dir, "What food should I avoid cooking for them?")
    print("recalled:", recalled)
    assert any("peanuts" in text for text in recalled), recalled


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "remember":
        run_remember(sys.argv[2])
    elif len(sys.argv) > 3 and sys.argv[1] == "recall":
        print("\n".join(run_recall(sys.argv[2], sys.argv[3])))
    else:
        main()
