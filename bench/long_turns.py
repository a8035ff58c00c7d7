"""Long dialogue turns: what ltm embeds per turn, and its ingest against the model's own throughput.

The texts are QMSum's real meeting utterances of 1-4 KB (parliamentary speeches, long explanations), from
``bench/data/qmsum.json`` (``python -m bench.retrieval.fetch``). Each round, interleaved:

- the model alone: :meth:`~ltm.llm.onnx_model.OnnxModel.text_vectors` over all the texts (what a store's add
  asks the model for: every window of a long text), texts/s, and ``vectors`` over them (their first windows
  only, what a store embedded before), so the windows' cost is a ratio of the same run;
- ltm: a new store, ``add_batch`` of the same texts as messages in batches of ``--batch`` (a session's turns),
  texts/s, and the share of that time spent in the ONNX session itself.

    python -m bench.long_turns                      # 200 turns, 3 rounds
    python -m bench.long_turns --turns 100 --rounds 5 --profile

Prints the tokens and model windows per turn, the medians and ingest / model ratio (the goal: >= 0.9), and the
load average. ``--profile`` adds a cProfile of one ingest (top functions by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.ltm_runner import _TimedSession
from ltm.config import Settings
from ltm.message import Message

DATA = Path(__file__).resolve().parents[1] / "bench" / "data" / "qmsum.json"
LOW, HIGH = 1024, 4096  # bytes of a "long turn"


def long_turns(count: int, path: Path = DATA) -> list[tuple[str, str]]:
    """The first ``count`` QMSum utterances of LOW-HIGH bytes, as (speaker, text), in the file's order."""
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run python -m bench.retrieval.fetch first")
    data = json.loads(path.read_text())
    out: list[tuple[str, str]] = []
    for conversation in data["conversations"]:
        for turn in conversation["turns"]:
            if LOW <= len(turn["text"].encode()) <= HIGH:
                out.append((str(turn["speaker"]), turn["text"]))
                if len(out) == count:
                    return out
    return out


def _model_rate(model: Any, texts: list[str], first_window: bool = False) -> float:
    """texts/s of the model on ``texts``: as a store's add asks (every window), or their first windows only."""
    start = time.perf_counter()
    model.vectors(texts) if first_window or not hasattr(model, "text_vectors") else model.text_vectors(texts)
    return len(texts) / (time.perf_counter() - start)


def _ingest(model: Any, turns: list[tuple[str, str]], batch: int, tag: str, tmp: Path) -> tuple[float, float]:
    """texts/s of add_batch into a new store, and the share of the time the ONNX session ran."""
    from ltm.store import MemoryStorage

    settings = Settings(storage_dir=tmp / tag, embedding="local")
    timed = _TimedSession(model._session)
    model._session = timed
    try:
        store = MemoryStorage("long-turns", kind="role", settings=settings)
        messages = [
            Message(id=f"{tag}-{i}", content=text, role="assistant" if i % 2 else "user", sent_from=speaker)
            for i, (speaker, text) in enumerate(turns)
        ]
        start = time.perf_counter()
        for at in range(0, len(messages), batch):
            store.add_batch(messages[at : at + batch])
        seconds = time.perf_counter() - start
        store.close()
    finally:
        model._session = timed.session
    return len(turns) / seconds, timed.seconds / seconds


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--turns", type=int, default=200, help="long turns embedded and added per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch", type=int, default=50, help="messages per add_batch call")
    p.add_argument("--profile", action="store_true", help="also profile one ingest")
    args = p.parse_args(argv)

    from tokenizers import Tokenizer

    from ltm.llm.local import onnx_model

    turns = long_turns(args.turns)
    texts = [text for _, text in turns]
    model = onnx_model(Settings(embedding="local"))
    model.vectors(["warm up"])
    whole = Tokenizer.from_str(model._tokenizer.to_str())
    whole.no_truncation()
    tokens = [len(e.ids) for e in whole.encode_batch(texts, add_special_tokens=False)]
    windows = [len(model.windows(t)) if hasattr(model, "windows") else 1 for t in texts]
    model_rates, ingest_rates, shares, loads, first_rates = [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="ltm-long-turns-") as tmp:
        for r in range(args.rounds):
            model_rates.append(_model_rate(model, texts))
            first_rates.append(_model_rate(model, texts, first_window=True))
            rate, share = _ingest(model, turns, args.batch, f"r{r}", Path(tmp))
            ingest_rates.append(rate)
            shares.append(share)
            loads.append(os.getloadavg()[0])
            print(
                f"round {r + 1}: model {model_rates[-1]:.1f} texts/s, ingest {rate:.1f} texts/s "
                f"({rate / model_rates[-1]:.2f}), in the model {share:.0%}; first windows only "
                f"{first_rates[-1]:.1f} texts/s; load {loads[-1]:.2f}",
                flush=True,
            )
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            _ingest(model, turns, args.batch, "profile", Path(tmp))
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
    result = {
        "turns": float(len(texts)),
        "bytes_p50": statistics.median(len(t.encode()) for t in texts),
        "tokens_p50": statistics.median(tokens),
        "tokens_max": float(max(tokens)),
        "windows_mean": statistics.fmean(windows),
        "model_texts_per_s": statistics.median(model_rates),
        "ingest_texts_per_s": statistics.median(ingest_rates),
        "first_window_texts_per_s": statistics.median(first_rates),
        "window_cost": statistics.median(f / m for f, m in zip(first_rates, model_rates, strict=True)),
        "ms_per_turn": 1e3 / statistics.median(ingest_rates),
        "ratio": statistics.median(i / m for i, m in zip(ingest_rates, model_rates, strict=True)),
        "in_model_share": statistics.median(shares),
        "load": statistics.median(loads),
    }
    print(
        f"{len(texts)} turns of {LOW}-{HIGH} bytes (median {result['bytes_p50']:.0f} B, {result['tokens_p50']:.0f} "
        f"word pieces, max {result['tokens_max']:.0f}); model windows per turn {result['windows_mean']:.2f}\n"
        f"median: model {result['model_texts_per_s']:.1f} texts/s, ingest {result['ingest_texts_per_s']:.1f} texts/s "
        f"({result['ms_per_turn']:.1f} ms a turn), ingest / model {result['ratio']:.2f}, "
        f"in the model {result['in_model_share']:.0%}; every window costs the model {result['window_cost']:.2f}x "
        f"its first windows alone ({result['first_window_texts_per_s']:.1f} texts/s); load average {result['load']:.2f}"
    )
    return result


if __name__ == "__main__":
    main()
