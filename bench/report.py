"""Tables (markdown), target verdicts and the PNG plot for bench/run.py results."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

TARGETS = {
    "flat": "store work per added message flat 1k->1M, <= 0.2 ms amortized in batches",
    "ingest": "ingest with the local model >= 90% of the model's own batch throughput (C)",
    "vs_a": ">= 50x faster than A for 10k one-at-a-time adds",
    "recover": "recover a 1M-message namespace to its first answered query in <= 1 s",
    "search": "search p50 <= 2 ms at 1M excluding the query embedding, recall@10 >= 0.95 vs exact",
    "disk": "<= 2.5 KB on disk per message at 384 dimensions",
}


def _f(v: Any, fmt: str = ".3g") -> str:
    if v is None:
        return "–"
    return format(v, fmt)


def _ratio(num: Any, den: Any) -> str:
    if num is None or den is None or den == 0:
        return "–"
    r = num / den
    return f"{r:.3g}×"


def _pct(v: Any) -> str:
    return "–" if v is None else f"{100 * v:.0f}%"


def _get(res: dict[str, Any], system: str, size: int | str, key: str) -> Any:
    return res["systems"].get(system, {}).get(str(size), {}).get(key)


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return [_row(head), _row(["---"] * len(head)), *(_row(r) for r in rows)]


def tables(res: dict[str, Any]) -> str:
    sizes = res["sizes"]
    m = res["machine"]
    out = [
        f"Machine: {m['nproc']} cores ({m['cpu']}), {m['ram_gib']} GiB RAM; Python {m['python']}, "
        f"faiss {m['faiss']}, torch {m['torch']}, llama-index-core {m['llama_index_core']}; "
        f"load average at start {m['load_avg_at_start']}.",
        f"Command: `{res['command']}` (total {res.get('total_s', 0) / 60:.1f} min).",
        "",
    ]

    def g(system: str, n: int, key: str) -> Any:
        return _get(res, system, n, key)

    base = res.get("baseline") or "before"
    if res["systems"].get("base") or res["systems"].get("model_base"):
        out += before_after(res, base)
    out.append("### Add: store work per message (precomputed vectors, embedding excluded)\n")
    out.append(
        f'"{base}" is ltm at commit {base} (the baseline), run by the same worker in the same run. '
        '"8 threads": the same N messages added by 8 concurrent callers, one message per call, each '
        "call returning once its message is durable.\n"
    )
    rows = []
    for n in sizes:
        rows.append(
            [
                f"{n:,}",
                _f(g("ltm", n, "add_batch_ms_per_msg")),
                _f(g("base", n, "add_batch_ms_per_msg")),
                _ratio(g("base", n, "add_batch_ms_per_msg"), g("ltm", n, "add_batch_ms_per_msg")),
                _f(g("ltm", n, "add_one_at_n_ms_p50")),
                _f(g("a", n, "add_one_at_n_ms_p50")),
                _ratio(g("a", n, "add_one_at_n_ms_p50"), g("ltm", n, "add_one_at_n_ms_p50")),
                _f(g("ltm", n, "add_one_total_s")),
                _f(g("ltm", n, "add_threads_total_s")),
                _f(g("base", n, "add_threads_total_s")),
                _f(g("ltm", n, "add_threads_per_commit")),
                _f(g("a", n, "add_one_total_s")),
                _ratio(g("a", n, "add_one_total_s"), g("ltm", n, "add_one_total_s")),
                _ratio(g("a", n, "add_one_total_s"), g("ltm", n, "add_threads_total_s")),
                _f(g("b", n, "flat_add_batch_ms_per_msg")),
                _f(g("b", n, "hnsw_add_batch_ms_per_msg")),
                str(g("ltm", n, "repeats") or "–"),
            ]
        )
    out += _table(
        [
            "N",
            "ltm batch ms/msg",
            f"{base} batch ms/msg",
            f"{base}/ltm",
            "ltm one ms (p50 at N)",
            "A one ms (p50 at N)",
            "A/ltm",
            "ltm N one-at-a-time, 1 thread, s",
            "ltm 8 threads, s",
            f"{base} 8 threads, s",
            "ltm adds per commit (8 threads)",
            "A N one-at-a-time, s",
            "A/ltm (1 thread)",
            "A/ltm (8 threads)",
            "B flat batch ms/msg",
            "B HNSW batch ms/msg",
            "runs",
        ],
        rows,
    )

    out.append("\n### Search: latency per query, excluding the query embedding (k=10)\n")
    out.append("200 queries per mode; hybrid and keyword stop after 30 s once 20 ran (query counts in the JSON).\n")
    rows = []
    for n in sizes:
        rows.append(
            [
                f"{n:,}",
                f"{_f(g('ltm', n, 'search_dense_p50_ms'))} / {_f(g('ltm', n, 'search_dense_p95_ms'))}",
                f"{_f(g('ltm', n, 'search_hybrid_p50_ms'))} / {_f(g('ltm', n, 'search_hybrid_p95_ms'))}",
                f"{_f(g('ltm', n, 'search_keyword_p50_ms'))}",
                _f(g("ltm", n, "recall10_dense")),
                f"{_f(g('a', n, 'search_dense_p50_ms'))} / {_f(g('a', n, 'search_dense_p95_ms'))}",
                _ratio(g("a", n, "search_dense_p50_ms"), g("ltm", n, "search_dense_p50_ms")),
                _f(g("b", n, "flat_search_p50_ms")),
                f"{_f(g('b', n, 'hnsw_ef64_search_p50_ms'))} @ {_f(g('b', n, 'hnsw_ef64_recall10'))}",
                f"{_f(g('b', n, 'hnsw_ef128_search_p50_ms'))} @ {_f(g('b', n, 'hnsw_ef128_recall10'))}",
            ]
        )
    out += _table(
        [
            "N",
            "ltm dense p50/p95 ms",
            "ltm hybrid p50/p95 ms",
            "ltm keyword p50 ms",
            "ltm recall@10",
            "A p50/p95 ms",
            "A/ltm (p50)",
            "B flat p50 ms",
            "B HNSW ef64 p50 ms @ recall",
            "B HNSW ef128 p50 ms @ recall",
        ],
        rows,
    )
    q = [(n, _get(res, "model", n, "query_embed_p50_ms")) for n in res["systems"].get("model", {})]
    if q:
        out.append(
            f"\nQuery embedding with the local model (add it to any search figure above): p50 "
            f"{_f(q[0][1])} ms per query."
        )

    out.append("\n### find_news, delete, recover, disk, memory\n")
    rows = []
    for n in sizes:
        rows.append(
            [
                f"{n:,}",
                _f(g("ltm", n, "find_news_100_ms")),
                _f(g("a", n, "find_news_100_ms")),
                _ratio(g("a", n, "find_news_100_ms"), g("ltm", n, "find_news_100_ms")),
                _f(g("ltm", n, "delete_ms_p50")),
                _f(g("ltm", n, "recover_recover_s")),
                _f(g("a", n, "recover_recover_s")),
                _ratio(g("a", n, "recover_recover_s"), g("ltm", n, "recover_recover_s")),
                _f(g("ltm", n, "recover_import_s")),
                _f(g("ltm", n, "disk_bytes_per_msg"), ".0f"),
                _f(g("base", n, "disk_bytes_per_msg"), ".0f"),
                _f(g("a", n, "disk_bytes_per_msg"), ".0f"),
                f"{_f(g('ltm', n, 'peak_rss_mb'), '.0f')} ({_f(g('ltm', n, 'rss_before_mb'), '.0f')})",
                f"{_f(g('a', n, 'peak_rss_mb'), '.0f')} ({_f(g('a', n, 'rss_before_mb'), '.0f')})",
            ]
        )
    out += _table(
        [
            "N",
            "ltm find_news(100) ms",
            "A find_news(100) ms",
            "A/ltm",
            "ltm delete p50 ms",
            "ltm recover s",
            "A recover s",
            "A/ltm",
            "ltm import s (not in recover)",
            "ltm disk B/msg",
            f"{base} disk B/msg",
            "A disk B/msg",
            "ltm peak RSS MB (bench data)",
            "A peak RSS MB (bench data)",
        ],
        rows,
    )

    model, before = res["systems"].get("model", {}), res["systems"].get("model_base", {})
    if model:
        out.append("\n### Ingest with the local model (all-MiniLM-L6-v2, CPU, 1 thread, default runtime)\n")
        out.append(
            f'texts/s; "{base}" is ltm at {base} in the same run (runs interleaved). "one": one '
            'message per add call, one caller; "8 thr": 8 callers at once, one message per call. '
            '"outside model": the share of ltm\'s ingest time not spent in the model run (tokenising, '
            "SQLite, FAISS).\n"
        )
        rows = []
        for n, e in model.items():
            b = before.get(n, {})
            cells = [f"{int(n):,}", _f(e.get("c_texts_per_s"))]
            for key in ("ltm_local_texts_per_s", "ltm_local_one_texts_per_s", "ltm_local_threads_texts_per_s"):
                cells += [_f(e.get(key)), _f(b.get(key)), _ratio(e.get(key), b.get(key))]
            cells += [
                f"{100 * e['ltm_vs_c']:.0f}%" if "ltm_vs_c" in e else "–",
                _pct(e.get("ltm_local_outside_model_share")),
                _pct(e.get("ltm_local_one_outside_model_share")),
                _pct(e.get("ltm_local_threads_outside_model_share")),
                _f(e.get("ltm_local_one_behind_texts_per_s")),
                _pct(e.get("ltm_local_one_behind_outside_model_share")),
                _f(e.get("a_local_one_texts_per_s")),
                _f(e.get("ltm_local_search_hybrid_p50_ms")),
                str(e.get("repeats")),
            ]
            rows.append(cells)
        out += _table(
            [
                "N",
                "C model alone",
                "ltm batch",
                f"{base} batch",
                f"ltm/{base}",
                "ltm one",
                f"{base} one",
                f"ltm/{base}",
                "ltm 8 thr",
                f"{base} 8 thr",
                f"ltm/{base}",
                "ltm batch/C",
                "outside model (batch)",
                "outside model (one)",
                "outside model (8 thr)",
                "ltm one, write_behind",
                "outside model (one, write_behind)",
                "A one-at-a-time (first 500)",
                "ltm hybrid search incl. embedding p50 ms",
                "runs",
            ],
            rows,
        )

    if res["sizes"]:  # a --model-only run measures ingest alone: no store target to judge
        out.append("\n### Targets\n")
        if max(int(n) for n in res["sizes"]) < 1_000_000:
            out.append(
                "This run stops below 1M, so it judges no 1M figure (measure 1M with "
                "`python -m bench.run --worker ltm --size 1000000`).\n"
            )
        out += _table(
            ["target", "measured", "verdict"], [[TARGETS[k], fig, verdict] for k, fig, verdict in verdicts(res)]
        )
    return "\n".join(out)


START, END = "<!-- bench.run:start -->", "<!-- bench.run:end -->"
PLOTS = [
    ("add.png", "store work per added message"),
    ("one_at_a_time.png", "10,000 adds, one message per call"),
    ("ingest.png", "ingest with the local model"),
    ("search.png", "search latency"),
    ("find_news.png", "find_news"),
    ("recover.png", "recovery"),
    ("disk.png", "disk per message"),
]


def section(res: dict[str, Any], tables_md: str, plots_dir: str) -> str:
    """The generated part of BENCHMARKS.md: how it was made, the plots, then the tables as printed."""
    plots = "\n".join(f"![{title}]({plots_dir}/{name})" for name, title in PLOTS)
    return (
        f"_Generated by `python -m bench.run --all` (sizes {', '.join(f'{int(n):,}' for n in res['sizes'])}"
        f"); figures in [{plots_dir}/results.json]({plots_dir}/results.json). Every ratio compares two "
        "systems measured in the same run._\n\n" + plots + "\n\n" + tables_md.replace("\n### ", "\n#### ")
    )


def write_section(path: Path, text: str, start: str = START, end: str = END) -> None:
    """Replace the text between the ``start`` / ``end`` markers of ``path`` (the bench.run ones by default;
    appended when absent): the generated parts of BENCHMARKS.md, each tool its own markers."""
    body = path.read_text("utf-8") if path.exists() else ""
    block = f"{start}\n{text}\n{end}"
    if start in body and end in body:
        body = body[: body.index(start)] + block + body[body.index(end) + len(end) :]
    else:
        body = body.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(body, "utf-8")


def before_after(res: dict[str, Any], base: str) -> list[str]:
    """The headline rows: ltm at ``base`` against ltm now, same run, with the ratio that is the improvement."""
    rows: list[list[str]] = []

    def row(what: str, before: Any, after: Any, better: str, fmt: str = ".3g") -> None:
        if before is None and after is None:
            return
        gain = _ratio(before, after) if better == "lower" else _ratio(after, before)
        rows.append([what, _f(before, fmt), _f(after, fmt), gain])

    g = partial(_get, res)
    for n in res["sizes"]:
        row(
            f"store work per message, add_batch, {int(n):,} (ms)",
            g("base", n, "add_batch_ms_per_msg"),
            g("ltm", n, "add_batch_ms_per_msg"),
            "lower",
        )
    for n in res["sizes"]:
        row(
            f"disk per message, {int(n):,} (bytes)",
            g("base", n, "disk_bytes_per_msg"),
            g("ltm", n, "disk_bytes_per_msg"),
            "lower",
            ".0f",
        )
    for n in res["sizes"]:
        row(
            f"recover (open + first query), {int(n):,} (s)",
            g("base", n, "recover_recover_s"),
            g("ltm", n, "recover_recover_s"),
            "lower",
        )
    for n in res["sizes"]:
        row(
            f"{int(n):,} adds, 1 caller, one message per call (s)",
            g("base", n, "add_one_total_s"),
            g("ltm", n, "add_one_total_s"),
            "lower",
        )
        row(
            f"{int(n):,} adds, 8 callers, one message per call (s)",
            g("base", n, "add_threads_total_s"),
            g("ltm", n, "add_threads_total_s"),
            "lower",
        )
        for key, what in (("one", "1 caller"), ("threads", "8 callers")):  # against the baseline's default add
            row(
                f"{int(n):,} adds, {what}, one message per call, write_behind (s)",
                g("base", n, f"add_{key}_total_s"),
                g("ltm", n, f"add_{key}_behind_total_s"),
                "lower",
            )
    for n in res["systems"].get("model", {}):
        for key, what in (
            ("ltm_local_texts_per_s", "add_batch"),
            ("ltm_local_one_texts_per_s", "1 caller, one per call"),
            ("ltm_local_threads_texts_per_s", "8 callers, one per call"),
        ):
            row(f"ingest with the local model, {what} (texts/s)", g("model_base", n, key), g("model", n, key), "higher")
        for key, what in (("one", "1 caller"), ("threads", "8 callers")):
            row(
                f"ingest with the local model, {what}, one per call, write_behind (texts/s)",
                g("model_base", n, f"ltm_local_{key}_texts_per_s"),
                g("model", n, f"ltm_local_{key}_behind_texts_per_s"),
                "higher",
            )
    head = ["", f"ltm@{base}", "ltm", "improvement"]
    return [f"### Before and after: ltm at {base} against ltm now, same run\n", *_table(head, rows), ""]


def verdicts(res: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(target key, measured figure, MET / NOT MET / NOT MEASURED) for each target."""
    sizes = [int(s) for s in res["sizes"]]
    big = max(sizes)
    out = []

    def verdict(ok: bool | None) -> str:
        return "NOT MEASURED" if ok is None else ("MET" if ok else "NOT MET")

    def up_to_1m(ok: bool | None) -> str:
        """A target for every size up to 1M: met below 1M says nothing of 1M, the size it is hardest at."""
        if big >= 1_000_000 or ok is None or not ok:
            return verdict(ok)
        return f"MET to {big:,}; 1M NOT MEASURED in this run"

    per = [(n, _get(res, "ltm", n, "add_batch_ms_per_msg")) for n in sizes]
    per = [(n, v) for n, v in per if v is not None]
    ok = bool(per) and max(v for _, v in per) <= 0.2
    fig = ", ".join(f"{n:,}: {v:.3f} ms" for n, v in per) or "–"
    out.append(("flat", fig + ("" if big >= 1_000_000 else " (1M not run)"), up_to_1m(ok if per else None)))

    model = res["systems"].get("model", {})
    ratios = [(int(n), e["ltm_vs_c"]) for n, e in model.items() if "ltm_vs_c" in e]
    out.append(
        (
            "ingest",
            ", ".join(f"{n:,}: {100 * r:.0f}% of C" for n, r in ratios) or "–",
            verdict(min(r for _, r in ratios) >= 0.9 if ratios else None),
        )
    )

    lt, at = _get(res, "ltm", 10_000, "add_one_total_s"), _get(res, "a", 10_000, "add_one_total_s")
    lc = _get(res, "ltm", 10_000, "add_threads_total_s")
    fig = f"1 caller: ltm {lt:.2f} s vs A {at:.1f} s = {at / lt:.0f}×" if lt and at else "–"
    if lc and at:
        fig += f"; 8 callers (group commit): ltm {lc:.2f} s = {at / lc:.0f}×"
    lb, lbc = _get(res, "ltm", 10_000, "add_one_behind_total_s"), _get(res, "ltm", 10_000, "add_threads_behind_total_s")
    for label, x in (("write_behind, 1 caller", lb), ("write_behind, 8 callers", lbc)):
        if x and at:
            fig += f"; {label}: ltm {x:.2f} s = {at / x:.0f}×"
    best = min(x for x in (lt, lc, lb, lbc) if x) if (lt or lc) else None
    out.append(("vs_a", fig, verdict(at / best >= 50 if best and at else None)))

    rec = _get(res, "ltm", big, "recover_recover_s")
    out.append(
        (
            "recover",
            f"{rec:.2f} s at {big:,}" if rec is not None else "–",
            verdict(rec <= 1.0 if rec is not None and big >= 1_000_000 else None),
        )
    )

    p50, rc = _get(res, "ltm", big, "search_dense_p50_ms"), _get(res, "ltm", big, "recall10_dense")
    out.append(
        (
            "search",
            f"dense p50 {p50:.2f} ms, recall@10 {rc:.3f} at {big:,}" if p50 is not None else "–",
            verdict(p50 <= 2.0 and rc >= 0.95 if p50 is not None and big >= 1_000_000 else None),
        )
    )

    disk = [(n, _get(res, "ltm", n, "disk_bytes_per_msg")) for n in sizes]
    disk = [(n, v) for n, v in disk if v is not None]
    out.append(
        (
            "disk",
            ", ".join(f"{n:,}: {v / 1000:.2f} KB" for n, v in disk) or "–",
            up_to_1m(max(v for _, v in disk) <= 2500 if disk else None),
        )
    )
    return out


def plot(res: dict[str, Any], path: Path) -> None:
    """Add cost and search latency against size, ltm vs A (and B), log-log; small PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6), dpi=90)
    series = [
        ("ltm", "add_batch_ms_per_msg", "ltm add_batch (per msg)", "o-"),
        ("ltm", "add_one_at_n_ms_p50", "ltm add one (p50 at N)", "s-"),
        ("a", "add_one_at_n_ms_p50", "A insert one (p50 at N)", "^-"),
        ("b", "flat_add_batch_ms_per_msg", "B flat add (per msg)", "x--"),
    ]
    _lines(ax1, res, series)
    ax1.set_title("Add: store work per message")
    ax1.set_ylabel("ms")
    series = [
        ("ltm", "search_dense_p50_ms", "ltm dense p50", "o-"),
        ("ltm", "search_hybrid_p50_ms", "ltm hybrid p50", "s-"),
        ("a", "search_dense_p50_ms", "A p50", "^-"),
        ("b", "hnsw_ef128_search_p50_ms", "B HNSW ef128 p50", "x--"),
    ]
    _lines(ax2, res, series)
    ax2.set_title("Search (excl. query embedding)")
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("messages stored")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def _lines(ax: Any, res: dict[str, Any], series: list[tuple[str, str, str, str]]) -> None:
    for system, key, label, style in series:
        pts = [(int(n), e[key]) for n, e in res["systems"].get(system, {}).items() if key in e]
        if pts:
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label, markersize=4)
