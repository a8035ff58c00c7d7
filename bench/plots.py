"""One PNG per dimension from bench/run.py results: add cost, one-at-a-time adds, search, find_news, recovery,
disk, ingest with the model. Each plot shows ltm, ltm at the baseline commit ("before") and the peers measured
in the same run (A: the llama-index/FAISS way, B: raw FAISS, C: the model alone)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["plot_all"]

_SIZES_X = "messages stored"


def _pts(res: dict[str, Any], system: str, key: str) -> list[tuple[int, float]]:
    return sorted((int(n), float(e[key])) for n, e in res["systems"].get(system, {}).items() if e.get(key) is not None)


def _lines(ax: Any, res: dict[str, Any], series: list[tuple[str, str, str, str]]) -> None:
    for system, key, label, style in series:
        pts = _pts(res, system, key)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label, markersize=4)


def _bars(ax: Any, bars: list[tuple[str, float | None]], unit: str) -> None:
    shown = [(label, v) for label, v in bars if v is not None]
    ax.bar(range(len(shown)), [v for _, v in shown], color="#4a7ab5")
    ax.set_xticks(range(len(shown)), [label for label, _ in shown], fontsize=7, rotation=20, ha="right")
    for i, (_, v) in enumerate(shown):
        ax.text(i, v, f"{v:.3g}", ha="center", va="bottom", fontsize=7)
    ax.set_ylabel(unit)


def plot_all(res: dict[str, Any], directory: Path) -> list[Path]:
    """Write the per-dimension PNGs into ``directory``; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base = res.get("baseline") or "before"
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        path = directory / name
        fig.savefig(path)
        plt.close(fig)
        written.append(path)

    def sized(name: str, title: str, unit: str, series: list[tuple[str, str, str, str]], logy: bool = True) -> None:
        fig, ax = plt.subplots(figsize=(5.2, 3.6), dpi=90)
        _lines(ax, res, series)
        ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(_SIZES_X)
        ax.set_ylabel(unit)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        save(fig, name)

    sized(
        "add.png",
        "Add: store work per message (precomputed vectors)",
        "ms",
        [
            ("ltm", "add_batch_ms_per_msg", "ltm add_batch", "o-"),
            ("base", "add_batch_ms_per_msg", f"ltm@{base} add_batch", "o:"),
            ("ltm", "add_one_at_n_ms_p50", "ltm add one (p50 at N)", "s-"),
            ("a", "add_one_at_n_ms_p50", "A insert one (p50 at N)", "^-"),
            ("b", "flat_add_batch_ms_per_msg", "B flat add", "x--"),
            ("b", "hnsw_add_batch_ms_per_msg", "B HNSW add", "+--"),
        ],
    )
    sized(
        "search.png",
        "Search p50, excluding the query embedding",
        "ms",
        [
            ("ltm", "search_dense_p50_ms", "ltm dense", "o-"),
            ("ltm", "search_hybrid_p50_ms", "ltm hybrid", "s-"),
            ("base", "search_dense_p50_ms", f"ltm@{base} dense", "o:"),
            ("a", "search_dense_p50_ms", "A", "^-"),
            ("b", "hnsw_ef128_search_p50_ms", "B HNSW ef128", "x--"),
        ],
    )
    sized(
        "find_news.png",
        "find_news over 100 observed messages",
        "ms",
        [
            ("ltm", "find_news_100_ms", "ltm", "o-"),
            ("base", "find_news_100_ms", f"ltm@{base}", "o:"),
            ("a", "find_news_100_ms", "A", "^-"),
        ],
    )
    sized(
        "recover.png",
        "Recover: open + first answered query (fresh process)",
        "s",
        [
            ("ltm", "recover_recover_s", "ltm", "o-"),
            ("base", "recover_recover_s", f"ltm@{base}", "o:"),
            ("a", "recover_recover_s", "A", "^-"),
        ],
    )
    sized(
        "disk.png",
        "Disk per message",
        "bytes",
        [
            ("ltm", "disk_bytes_per_msg", "ltm", "o-"),
            ("base", "disk_bytes_per_msg", f"ltm@{base}", "o:"),
            ("a", "disk_bytes_per_msg", "A", "^-"),
        ],
        logy=False,
    )

    timed = [int(n) for n, e in res["systems"].get("ltm", {}).items() if "add_threads_total_s" in e]
    size = str(max(timed)) if timed else "10000"  # the largest N added one message at a time (10k by default)
    totals = [
        ("A, 1 caller", res["systems"].get("a", {}).get(size, {}).get("add_one_total_s")),
        (f"ltm@{base}, 1 caller", res["systems"].get("base", {}).get(size, {}).get("add_one_total_s")),
        ("ltm, 1 caller", res["systems"].get("ltm", {}).get(size, {}).get("add_one_total_s")),
        (f"ltm@{base}, 8 callers", res["systems"].get("base", {}).get(size, {}).get("add_threads_total_s")),
        ("ltm, 8 callers", res["systems"].get("ltm", {}).get(size, {}).get("add_threads_total_s")),
    ]
    if any(v is not None for _, v in totals):
        fig, ax = plt.subplots(figsize=(5.2, 3.6), dpi=90)
        _bars(ax, totals, "seconds (log)")
        ax.set_yscale("log")
        ax.set_title(f"{int(size):,} adds, one message per call (durable on return)", fontsize=10)
        save(fig, "one_at_a_time.png")

    model, before = res["systems"].get("model", {}), res["systems"].get("model_base", {})
    if model:
        n = max(model, key=int)
        m, b = model[n], before.get(n, {})
        fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=90)
        _bars(
            ax,
            [
                ("C model alone", m.get("c_texts_per_s")),
                (f"ltm@{base} batch", b.get("ltm_local_texts_per_s")),
                ("ltm batch", m.get("ltm_local_texts_per_s")),
                (f"ltm@{base} one", b.get("ltm_local_one_texts_per_s")),
                ("ltm one", m.get("ltm_local_one_texts_per_s")),
                (f"ltm@{base} 8 callers", b.get("ltm_local_threads_texts_per_s")),
                ("ltm 8 callers", m.get("ltm_local_threads_texts_per_s")),
            ],
            "texts/s",
        )
        ax.set_title(f"Ingest with the local model ({int(n):,} texts)", fontsize=10)
        save(fig, "ingest.png")
    return written
