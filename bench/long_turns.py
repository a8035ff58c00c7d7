"""Long dialogue turns: what ltm embeds per turn, and its ingest against the model's own throughput.

The texts are QMSum's real meeting utterances of 1-4 KB (parliamentary speeches, long explanations), from
``bench/data/qmsum.json`` (``python -m bench.retrieval.fetch``). Each round, interleaved:

- the model alone: :meth:`~ltm.llm.onnx_model.OnnxModel.text_vectors` over all the texts (what a store's add
  asks the model for: every window of a long text), and ``vectors`` over them (their first windows only, what a
  store embedded before), so the windows' cost is a ratio of the same run;
- ltm: a new store, ``add_batch`` of the same texts as messages in batches of ``--batch`` (a session's turns),
  and the share of its wall time spent in the ONNX session itself.

Rates are texts per CPU second of the process (every thread): on a shared machine wall time swings with the
others' load, CPU time far less.

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
    """Texts per CPU second of the model on ``texts``: as a store's add asks (every window), or first windows only.
    CPU seconds of this process, not wall time: on a shared machine the wall time swings with the others' load."""
    start = time.process_time()
    model.vectors(texts) if first_window or not hasattr(model, "text_vectors") else model.text_vectors(texts)
    return len(texts) / (time.process_time() - start)


def _ingest(model: Any, turns: list[tuple[str, str]], batch: int, tag: str, tmp: Path) -> tuple[float, float, float]:
    """Texts per CPU second of add_batch into a new store (every thread of the process), wall ms a turn, and the
    share of the wall time the ONNX session ran."""
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
        start, cpu = time.perf_counter(), time.process_time()
        for at in range(0, len(messages), batch):
            store.add_batch(messages[at : at + batch])
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        store.close()
    finally:
        model._session = timed.session
    return len(turns) / cpu, 1e3 * seconds / len(turns), timed.seconds / seconds


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--turns", type=int, default=200, help="long turns embedded and added per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch", type=int, default=50, help="messages per add_batch call")
    p.add_argument("--profile", action="store_true", help="also profile one ingest")
    p.add_argument(
        "--write", type=Path, help="also write the result as a paragraph (bench/results/long_turns_ingest.md)"
    )
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
    model_rates, ingest_rates, shares, loads, first_rates, walls = [], [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="ltm-long-turns-") as tmp:
        for r in range(args.rounds):
            model_rates.append(_model_rate(model, texts))
            first_rates.append(_model_rate(model, texts, first_window=True))
            rate, wall, share = _ingest(model, turns, args.batch, f"r{r}", Path(tmp))
            ingest_rates.append(rate)
            walls.append(wall)
            shares.append(share)
            loads.append(os.getloadavg()[0])
            print(
                f"round {r + 1}, texts per CPU second: model {model_rates[-1]:.1f}, ingest {rate:.1f} "
                f"({rate / model_rates[-1]:.2f}), first windows only {first_rates[-1]:.1f}; ingest {wall:.0f} ms a "
                f"turn (wall), {share:.0%} of it in the model; load {loads[-1]:.2f}",
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
        "ms_per_turn": statistics.median(walls),
        "ratio": statistics.median(i / m for i, m in zip(ingest_rates, model_rates, strict=True)),
        "in_model_share": statistics.median(shares),
        "load": statistics.median(loads),
    }
    print(
        f"{len(texts)} turns of {LOW}-{HIGH} bytes (median {result['bytes_p50']:.0f} B, {result['tokens_p50']:.0f} "
        f"word pieces, max {result['tokens_max']:.0f}); model windows per turn {result['windows_mean']:.2f}\n"
        f"median, texts per CPU second: model {result['model_texts_per_s']:.1f}, ingest "
        f"{result['ingest_texts_per_s']:.1f} (ingest / model {result['ratio']:.2f}; {result['ms_per_turn']:.1f} ms "
        f"a turn, {result['in_model_share']:.0%} in the model); every window costs the model "
        f"{result['window_cost']:.2f}x its first windows alone ({result['first_window_texts_per_s']:.1f}); "
        f"load average {result['load']:.2f}"
    )
    if args.write:
        res, when = result, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        args.write.write_text(
            f"`python -m bench.long_turns --turns {args.turns} --rounds {args.rounds} --write {args.write}` "
            f"({when}, load average (1 min) {res['load']:.1f}): {len(texts)} of QMSum's real 1-4 KB utterances "
            f"(median {res['tokens_p50']:.0f} word pieces, at most {res['tokens_max']:.0f}), "
            f"{res['windows_mean']:.2f} model windows a turn. `add_batch` of {args.batch} at a time: "
            f"{res['ingest_texts_per_s']:.2f} turns per CPU second against the model's {res['model_texts_per_s']:.2f} "
            f"on the same texts (ingest / model {res['ratio']:.2f}; {res['ms_per_turn']:.0f} ms a turn of wall time, "
            f"{res['in_model_share']:.0%} of it inside the model); every window costs the model "
            f"{res['window_cost']:.2f}x the first windows alone ({res['first_window_texts_per_s']:.2f} turns per CPU "
            f"second). CPU seconds of the process, medians of {args.rounds} interleaved rounds: on a shared machine "
            "the wall time swings with the others' load.\n"
        )
    return result


if __name__ == "__main__":
    main()
