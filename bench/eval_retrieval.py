#!/usr/bin/env python
"""Recall@1/5/10 of MemoryStorage's dense, keyword and hybrid search on a labelled multi-session conversation.

Loads tests/data/conversations.jsonl (turns: id, session, date, speaker, text) into a fresh MemoryStorage
namespace in a temp directory, asks every question of tests/data/conversation_questions.jsonl (question,
answers = the ids of the turns that answer it, kind) in each mode, and prints a table.

Each turn is stored the way a caller should store a conversation turn: ``role`` = the speaker,
``created_at`` = when it was said (the session date, one minute per turn), and ``metadata`` naming the
session, its date and the turn id. The store builds its conversation-aware index from those fields
(speaker and date words in the keyword index, neighbouring turns of the same session as context). Questions
are passed verbatim, with no filters and no rewriting.

Recall@k of a question = |answers among the top k hits| / |answers|, averaged over the questions.

    python -m bench.eval_retrieval                      # the local all-MiniLM-L6-v2 model (offline)
    python -m bench.eval_retrieval --embedding hash     # fast, meaningless vectors (machinery check)
    python -m bench.eval_retrieval --json out.json      # also write every number as JSON
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

DATA_DIR = ROOT / "tests" / "data"
TURNS_PATH = DATA_DIR / "conversations.jsonl"
QUESTIONS_PATH = DATA_DIR / "conversation_questions.jsonl"
MODES = ("dense", "keyword", "hybrid")
KS = (1, 5, 10)
SESSION_START_HOUR = 9  # sessions are morning check-ins; turns a minute apart


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    """One JSON object per non-empty line."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def turn_time(turn: dict[str, Any], index_in_session: int) -> float:
    """Unix seconds when a turn was said: its session's date at 09:00 timezone.utc plus one minute per turn."""
    day = datetime.fromisoformat(turn["date"]).replace(hour=SESSION_START_HOUR, tzinfo=timezone.utc)
    return day.timestamp() + 60.0 * index_in_session


def to_messages(turns: Sequence[dict[str, Any]], context_window: int = 1) -> list[Any]:
    """Turns as ltm Messages in conversation order: speaker -> role and metadata ``speaker``, session and date
    -> metadata and ``created_at``, turn id -> metadata ``turn``; and, through ``with_context``, the
    ``context_window`` turns before and after it in the same session (keyword-indexed, weighted lowest)."""
    from ltm.message import Message, with_context

    sessions: dict[str, list[Any]] = {}
    for turn in turns:
        session = sessions.setdefault(turn["session"], [])
        session.append(
            Message(
                content=turn["text"],
                role=turn["speaker"],
                created_at=turn_time(turn, len(session)),
                metadata={
                    "speaker": turn["speaker"],
                    "session": turn["session"],
                    "date": turn["date"],
                    "turn": turn["id"],
                },
            )
        )
    if context_window <= 0:
        return [m for session in sessions.values() for m in session]
    return [m for session in sessions.values() for m in with_context(session, context_window)]


def recall(found: Sequence[str], answers: Sequence[str], k: int) -> float:
    """Share of ``answers`` among the first ``k`` of ``found``."""
    top = set(found[:k])
    return sum(1 for a in answers if a in top) / len(answers)


def evaluate(
    storage: Any,
    questions: Sequence[dict[str, Any]],
    modes: Sequence[str] = MODES,
    ks: Sequence[int] = KS,
) -> dict[str, Any]:
    """Search every question in every mode; mean recall@k per mode, per mode and kind, and the ranked ids."""
    depth = max(ks)
    results: dict[str, Any] = {"modes": {}, "by_kind": {}, "ranked": {}}
    kinds = sorted({q["kind"] for q in questions})
    for mode in modes:
        sums = {k: 0.0 for k in ks}
        kind_sums = {kind: [0.0, 0] for kind in kinds}
        ranked: dict[str, list[str]] = {}
        started = time.perf_counter()
        for q in questions:
            hits = storage.search(q["question"], k=depth, mode=mode)
            ids = [str(hit.message.metadata.get("turn")) for hit in hits]
            ranked[q["id"]] = ids
            for k in ks:
                sums[k] += recall(ids, q["answers"], k)
            kind_sums[q["kind"]][0] += recall(ids, q["answers"], depth)
            kind_sums[q["kind"]][1] += 1
        elapsed = time.perf_counter() - started
        n = len(questions)
        results["modes"][mode] = {f"recall@{k}": sums[k] / n for k in ks} | {"ms_per_query": 1000 * elapsed / n}
        results["by_kind"][mode] = {kind: s / c for kind, (s, c) in kind_sums.items()}
        results["ranked"][mode] = ranked
    return results


def run(
    embedding: str = "local",
    turns_path: Path = TURNS_PATH,
    questions_path: Path = QUESTIONS_PATH,
    storage_dir: Path | None = None,
    modes: Sequence[str] = MODES,
    context_window: int = 1,
) -> dict[str, Any]:
    """Load the set into a fresh namespace under ``storage_dir`` (a temp dir when None) and evaluate it."""
    from ltm.config import Settings
    from ltm.store import MemoryStorage

    turns, questions = load_jsonl(turns_path), load_jsonl(questions_path)
    with tempfile.TemporaryDirectory(prefix="ltm-eval-") as tmp:
        settings = Settings(storage_dir=storage_dir or Path(tmp), embedding=embedding)
        storage = MemoryStorage("eval", kind="eval", settings=settings)
        try:
            started = time.perf_counter()
            storage.add_batch(to_messages(turns, context_window))
            ingest = time.perf_counter() - started
            results = evaluate(storage, questions, modes)
        finally:
            storage.close()
    results["dataset"] = {
        "turns": len(turns),
        "sessions": len({t["session"] for t in turns}),
        "questions": len(questions),
        "embedding": embedding,
        "context_window": context_window,
        "ingest_seconds": ingest,
    }
    return results


def table(results: dict[str, Any], ks: Sequence[int] = KS) -> str:
    """A Markdown table: one row per mode, recall@k columns; then recall@10 by question kind."""
    modes = list(results["modes"])
    head = "| mode | " + " | ".join(f"recall@{k}" for k in ks) + " |"
    lines = [head, "|---|" + "---:|" * len(ks)]
    for mode in modes:
        row = results["modes"][mode]
        lines.append(f"| {mode} | " + " | ".join(f"{row[f'recall@{k}']:.3f}" for k in ks) + " |")
    kinds = sorted(next(iter(results["by_kind"].values())))
    lines += ["", f"| recall@{max(ks)} by kind | " + " | ".join(modes) + " |", "|---|" + "---:|" * len(modes)]
    for kind in kinds:
        lines.append(f"| {kind} | " + " | ".join(f"{results['by_kind'][m][kind]:.3f}" for m in modes) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Recall@1/5/10 of dense, keyword and hybrid search.")
    parser.add_argument(
        "--embedding",
        choices=["local", "hash", "openai"],
        default="local",
        help="embedding backend (default: the local all-MiniLM-L6-v2 model, offline)",
    )
    parser.add_argument("--turns", type=Path, default=TURNS_PATH, help="conversation turns (JSON lines)")
    parser.add_argument("--questions", type=Path, default=QUESTIONS_PATH, help="labelled questions (JSON lines)")
    parser.add_argument(
        "--context",
        type=int,
        default=1,
        metavar="N",
        help="neighbouring turns on each side indexed as context (0: none; default 1)",
    )
    parser.add_argument("--json", type=Path, help="also write all results (incl. ranked ids) to this file")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    results = run(args.embedding, args.turns, args.questions, context_window=args.context)
    data = results["dataset"]
    print(
        f"{data['turns']} turns, {data['sessions']} sessions, {data['questions']} questions, "
        f"embedding={data['embedding']}, context={data['context_window']}, ingest {data['ingest_seconds']:.1f} s\n"
    )
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
