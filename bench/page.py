"""BENCHMARKS.md from the committed results: ``python -m bench.page`` (no measurement; seconds).

Every figure on the page comes from a file under ``bench/results/`` written by the benchmark that measured it;
every ratio compares two systems measured in the same run. The sections, their sources and the commands that
refresh a source are listed in :data:`SOURCES`. ``python -m bench.page --check`` fails when the committed page
differs from what the results give (CI runs it through ``tests/bench/test_page.py``).
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import Any

from bench.page_sections import (
    EMBEDDED_END,
    EMBEDDED_START,
    EMBEDDED_STORES_MD,
    FRAMEWORKS_100K_MD,
    FRAMEWORKS_MD,
    PAGE,
    PG_1M,
    PG_RUN,
    RESULTS,
    RETRIEVAL_MD,
    _at,
    _f,
    _first_model,
    _g,
    _load,
    _pair,
    embedded_stores,
    frameworks_section,
    long_turns_section,
    loop_lag_section,
    not_measured,
    parse_retrieval,
    peers_section,
    pg_section,
    retrieval_section,
    service_section,
)
from bench.report import _ratio, _table

__all__ = [
    "EMBEDDED_END",
    "EMBEDDED_START",
    "PAGE",
    "PLOTS",
    "RESULTS",
    "RETRIEVAL_MD",
    "SOURCES",
    "main",
    "parse_retrieval",
    "plot",
    "render",
]

PLOTS = [
    ("add.png", "store work per added message"),
    ("search.png", "search latency"),
    ("one_at_a_time.png", "10,000 adds, one message per call"),
    ("ingest.png", "ingest with the local model"),
    ("find_news.png", "find_news"),
    ("recover.png", "recovery"),
    ("disk.png", "disk per message"),
]

# (section, its result files, the commands that measure them again: each writes its file in bench/results/)
SOURCES: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    (
        "ltm against the llama-index way, raw FAISS and the model",
        ("results.json",),
        ("python -m bench.run --all",),
    ),
    ("ltm against mem0", ("peers.json",), ("python -m bench.peers",)),
    (
        "Against the embedded stores users pick instead",
        (EMBEDDED_STORES_MD.name,),
        ("python -m bench.retrieval.fetch", "python -m bench.peers.stores"),
    ),
    (
        "Inside the frameworks",
        (FRAMEWORKS_MD.name, FRAMEWORKS_100K_MD.name),
        (
            "python -m bench.retrieval.fetch",
            "python -m bench.peers.frameworks --pg",
            "python -m bench.peers.frameworks --size 100000 --pg --frameworks langgraph,crewai --stores "
            '"LtmStore,SqliteStore,LtmStore on PostgreSQL,PostgresStore,LtmStorage,LanceDBStorage"',
        ),
    ),
    (
        "Retrieval quality",
        (RETRIEVAL_MD.name,),
        ("python -m bench.retrieval.fetch", "python -m bench.retrieval --write bench/results/retrieval.md"),
    ),
    (
        "PostgreSQL + pgvector against embedded",
        (PG_RUN, *PG_1M),
        (
            "python -m bench.backends --sizes 10000 100000 --writers 1 2 4 8 --load both --tag=-pg17",
            "python -m bench.backends --sizes 1000000 --writers --engines postgres --load bulk --budget 1500 "
            "--tag=-pg17-postgres",
            "python -m bench.backends --sizes 1000000 --writers --engines embedded --load batched --budget 953 "
            "--tag=-pg17-embedded",
        ),
    ),
    ("The service", ("service.json",), ("python -m bench.service",)),
    (
        "The async API",
        ("loop_lag.json",),
        ("python -m bench.loop_lag --tasks 64 --prefill 2000 --repeats 3 --out-json bench/results/loop_lag.json",),
    ),
]


def head(res: dict[str, Any]) -> list[str]:
    lines = [
        "# Benchmarks",
        "",
        "What ltm costs (time, disk, memory) and how well it finds things, against the peers measured in the "
        "same run: the llama-index + FAISS store MetaGPT uses (**A**), raw FAISS (**B**), the embedding model "
        "alone (**C**), mem0, and plain BM25 / dense retrieval. Every ratio compares two systems of one run.",
        "",
        "This page is generated from the committed results in `bench/results/` by one command (it "
        "measures nothing and takes seconds):",
        "",
        "```bash",
        "python -m bench.page           # --plots also redraws the PNGs from results.json",
        "```",
        "",
        "Each section names the run it comes from; the commands that measure again (each writes its file in "
        "`bench/results/`, and `python -m bench.run --all` also rewrites this page; what each tool measures: "
        "[bench/README.md](bench/README.md)):",
        "",
    ]
    rows = [
        [s, ", ".join(f"`{f}`" for f in files), ", then ".join(f"`{c}`" for c in commands)]
        for s, files, commands in SOURCES
    ]
    lines += _table(["section", "results", "commands"], rows)
    return lines + [""]


def glance(res: dict[str, Any], peers: dict[str, Any], retrieval: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    rows: list[list[str]] = []
    lt, at = _g(res, "ltm", 10_000, "add_one_total_s"), _g(res, "a", 10_000, "add_one_total_s")
    lc = _g(res, "ltm", 10_000, "add_threads_total_s")
    if lt and at:
        rows.append(
            [
                "10,000 adds, one message per call (precomputed vectors)",
                f"{lt:.1f} s (8 callers: {_f(lc)} s)",
                f"A: {at:.0f} s",
                f"{at / lt:.0f}× ({at / lc:.0f}×)",
            ]
        )
    big = max(res["sizes"])
    ld, ad = _g(res, "ltm", big, "search_dense_p50_ms"), _g(res, "a", big, "search_dense_p50_ms")
    rows.append(
        [f"dense search p50 at {big:,} (no query embedding)", f"{_f(ld)} ms", f"A: {_f(ad)} ms", _ratio(ad, ld)]
    )
    lf, af = _g(res, "ltm", big, "find_news_100_ms"), _g(res, "a", big, "find_news_100_ms")
    rows.append([f"find_news over 100 messages at {big:,}", f"{_f(lf)} ms", f"A: {_f(af)} ms", _ratio(af, lf)])
    lr, ar = _g(res, "ltm", big, "recover_recover_s"), _g(res, "a", big, "recover_recover_s")
    rows.append(
        [f"recover at {big:,} (fresh process, open + first query)", f"{_f(lr)} s", f"A: {_f(ar)} s", _ratio(ar, lr)]
    )
    ldk, adk = _g(res, "ltm", big, "disk_bytes_per_msg"), _g(res, "a", big, "disk_bytes_per_msg")
    rows.append([f"disk per message at {big:,}", f"{_f(ldk, '.0f')} B", f"A: {_f(adk, '.0f')} B", _ratio(adk, ldk)])
    model = _first_model(res)
    if model:
        rows.append(
            [
                "ingest with the local model, add_batch",
                f"{_f(model.get('ltm_local_texts_per_s'))} texts/s",
                f"C: {_f(model.get('c_texts_per_s'))} texts/s",
                f"{100 * model['ltm_vs_c']:.0f}% of C",
            ]
        )
    for row in peers.get("rows", []):
        if row["operation"].startswith(("search, hybrid (at 5", "add one at a time (to 5")) and "mem0" in row:
            rows.append(
                [
                    f"{row['operation']}, with the model",
                    f"{row['ltm']['p50_ms']:.1f} ms",
                    f"mem0: {row['mem0']['p50_ms']:.1f} ms",
                    _ratio(row["mem0"]["p50_ms"], row["ltm"]["p50_ms"]),
                ]
            )
    for name, systems in sorted(retrieval.items()):
        hybrid = systems.get("ltm hybrid", {}).get("recall@10")
        best = max(
            ((v.get("recall@10", 0.0), k) for k, v in systems.items() if not k.startswith("ltm")), default=(0.0, "")
        )
        if hybrid is not None:
            rows.append(
                [
                    f"recall@10 on {name}",
                    f"{hybrid:.3f}",
                    f"{best[1]}: {best[0]:.3f}",
                    f"+{100 * (hybrid - best[0]):.1f} points",
                ]
            )
    return [
        "## At a glance",
        "",
        "ltm's advantage: the peer's time or size over ltm's (higher is better for ltm); for recall, the points "
        "ltm's hybrid search is above the best baseline of the run. mem0's search here is dense only.",
        "",
        *_table(["", "ltm", "peer, same run", "ltm's advantage"], rows),
        "",
    ]


def machine(res: dict[str, Any]) -> list[str]:
    m = res["machine"]
    return [
        "## Method and machine",
        "",
        f"- **Machine** of the main run: {m['nproc']} cores ({m['cpu']}), {m['ram_gib']} GiB RAM; Python "
        f"{m['python']}, faiss {m['faiss']}, torch {m['torch']}, llama-index-core {m['llama_index_core']}; load "
        f"average at start {m['load_avg_at_start']}; `{res['command']}` took {res.get('total_s', 0) / 60:.0f} "
        "min. The other runs were on the same class of shared 2-core machine; each section gives its load. "
        "Absolute times move with the load; the ratios, taken within one run, are the finding.",
        "- **Data** of the main run: synthetic agent messages (10-46 words, each unique), deterministic from "
        "`--seed 7`; the vectors are precomputed, L2-normalised 384-d with topic structure, handed to every "
        "system through the same lookup embedding, so the figures are store work. Queries are a stored vector "
        "plus noise; recall@10 is against exact inner-product search on the same vectors.",
        "- **Systems.** ltm: `MemoryStorage` with default `Settings` (`add_batch` in batches of 1,000; `add` "
        "one message per call from one caller and from 8 threads; `search(k=10)` in each mode; "
        "`LongTermMemory.find_news` over 100 messages, half of them stored). **A**, what MetaGPT does: "
        "`VectorStoreIndex` over `FaissVectorStore(IndexFlatL2)`, one `insert_nodes` per message, "
        "`storage_context.persist()`, `load_index_from_storage` to recover. **B**: raw FAISS `IndexFlatIP` "
        "(and `IndexHNSWFlat(M=32)` at 100,000). **C**: all-MiniLM-L6-v2 on ONNX Runtime, one thread.",
        "- **Repeats**: 3 runs at 1,000, 1 above; figures are medians; latencies are p50/p95 over 200 queries. "
        "Peak RSS is each worker's `VmHWM` (in brackets: before the measured system started).",
        "- **Recovery** runs in a fresh process: open the store and answer a first query.",
        "",
    ]


def main_run(res: dict[str, Any]) -> list[str]:
    sizes = [int(n) for n in res["sizes"]]
    out = [
        "## ltm against the llama-index way (A), raw FAISS (B) and the model (C)",
        "",
        *(f"![{title}](bench/results/{name})" for name, title in PLOTS),
        "",
        '**Adds**, store work with precomputed vectors (ms per message; "one": p50 of one more `add` at N):',
        "",
    ]
    rows = []
    for n in sizes:
        g = partial(_at, res, n)
        rows.append(
            [
                f"{n:,}",
                _f(g("ltm", "add_batch_ms_per_msg")),
                _f(g("ltm", "add_one_at_n_ms_p50")),
                _f(g("a", "add_one_at_n_ms_p50")),
                _ratio(g("a", "add_one_at_n_ms_p50"), g("ltm", "add_one_at_n_ms_p50")),
                _f(g("ltm", "add_one_total_s")),
                _f(g("ltm", "add_threads_total_s")),
                _f(g("a", "add_one_total_s")),
                _f(g("b", "flat_add_batch_ms_per_msg")),
            ]
        )
    out += _table(
        [
            "N",
            "ltm batch",
            "ltm one",
            "A one",
            "A/ltm",
            "ltm N adds, 1 caller, s",
            "ltm N adds, 8 callers, s",
            "A N adds, s",
            "B flat batch",
        ],
        rows,
    )
    out += ["", "**Search**, ms per query without the query embedding (k=10):", ""]
    rows = []
    for n in sizes:
        g = partial(_at, res, n)
        rows.append(
            [
                f"{n:,}",
                _pair(g("ltm", "search_dense_p50_ms"), g("ltm", "search_dense_p95_ms")),
                _pair(g("ltm", "search_hybrid_p50_ms"), g("ltm", "search_hybrid_p95_ms")),
                _f(g("ltm", "search_keyword_p50_ms")),
                _f(g("ltm", "recall10_dense")),
                _pair(g("a", "search_dense_p50_ms"), g("a", "search_dense_p95_ms")),
                _ratio(g("a", "search_dense_p50_ms"), g("ltm", "search_dense_p50_ms")),
                _f(g("b", "flat_search_p50_ms")),
                f"{_f(g('b', 'hnsw_ef128_search_p50_ms'))} @ {_f(g('b', 'hnsw_ef128_recall10'))}",
            ]
        )
    out += _table(
        [
            "N",
            "ltm dense p50/p95",
            "ltm hybrid p50/p95",
            "ltm keyword p50",
            "ltm dense recall@10",
            "A p50/p95",
            "A/ltm",
            "B flat p50",
            "B HNSW ef128 p50 @ recall",
        ],
        rows,
    )
    q = _first_model(res).get("query_embed_p50_ms")
    if q is not None:
        out += [
            "",
            f"Embedding the query with the local model adds {_f(q)} ms p50 to any search above (a repeated "
            "query is served from the query cache).",
        ]
    out += ["", "**find_news, delete, recovery, disk and memory:**", ""]
    rows = []
    for n in sizes:
        g = partial(_at, res, n)
        rows.append(
            [
                f"{n:,}",
                _f(g("ltm", "find_news_100_ms")),
                _f(g("a", "find_news_100_ms")),
                _ratio(g("a", "find_news_100_ms"), g("ltm", "find_news_100_ms")),
                _f(g("ltm", "delete_ms_p50")),
                _f(g("ltm", "recover_recover_s")),
                _f(g("a", "recover_recover_s")),
                _f(g("ltm", "disk_bytes_per_msg"), ".0f"),
                _f(g("a", "disk_bytes_per_msg"), ".0f"),
                f"{_f(g('ltm', 'peak_rss_mb'), '.0f')} ({_f(g('ltm', 'rss_before_mb'), '.0f')})",
                f"{_f(g('a', 'peak_rss_mb'), '.0f')} ({_f(g('a', 'rss_before_mb'), '.0f')})",
            ]
        )
    out += _table(
        [
            "N",
            "ltm find_news(100) ms",
            "A ms",
            "A/ltm",
            "ltm delete p50 ms",
            "ltm recover s",
            "A recover s",
            "ltm disk B/msg",
            "A disk B/msg",
            "ltm peak RSS MB",
            "A peak RSS MB",
        ],
        rows,
    )
    model = res["systems"].get("model", {})
    if model:
        out += [
            "",
            '**Ingest with the local model** (texts/s; "outside": the share of ltm\'s time not spent in the model):',
            "",
        ]
        rows = []
        for n, e in model.items():
            rows.append(
                [
                    f"{int(n):,}",
                    _f(e.get("c_texts_per_s")),
                    _f(e.get("ltm_local_texts_per_s")),
                    f"{100 * e['ltm_vs_c']:.0f}%",
                    _f(e.get("ltm_local_one_texts_per_s")),
                    _f(e.get("ltm_local_threads_texts_per_s")),
                    _f(e.get("ltm_local_one_behind_texts_per_s")),
                    f"{100 * e['ltm_local_one_outside_model_share']:.0f}%",
                    _f(e.get("a_local_one_texts_per_s")),
                ]
            )
        out += _table(
            [
                "N",
                "C model alone",
                "ltm add_batch",
                "ltm/C",
                "ltm one per call",
                "ltm 8 callers",
                "ltm one, write_behind",
                "outside (one per call)",
                "A one per call",
            ],
            rows,
        )
    return out + [""]


def render() -> str:
    res = _load("results.json")
    peers = _load("peers.json") if (RESULTS / "peers.json").exists() else {}
    retrieval_md = RETRIEVAL_MD.read_text("utf-8")
    parts = [
        head(res),
        glance(res, peers, parse_retrieval(retrieval_md)),
        machine(res),
        main_run(res),
        peers_section(peers),
        embedded_stores(),
        frameworks_section(),
        retrieval_section(retrieval_md),
        long_turns_section(),
        pg_section(),
        service_section(),
        loop_lag_section(),
        not_measured(),
    ]
    return "\n".join(line for part in parts for line in part).rstrip("\n") + "\n"


def plot(directory: Path = RESULTS) -> list[Path]:
    """The main run's PNGs, ltm against the peers of that run (a past ltm measured beside it is left out)."""
    from bench import plots

    res = _load("results.json")
    res["systems"] = {k: v for k, v in res["systems"].items() if k not in ("base", "model_base")}
    return plots.plot_all(res, directory)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when BENCHMARKS.md differs from the results")
    parser.add_argument("--plots", action="store_true", help="also redraw the main run's PNGs from results.json")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if PAGE.read_text("utf-8") != text:
            print("BENCHMARKS.md is not what bench/results gives: run `python -m bench.page`", file=sys.stderr)
            return 1
        return 0
    if args.plots:
        for path in plot():
            print(f"plot: {path}", file=sys.stderr)
    PAGE.write_text(text, "utf-8")
    print(f"wrote {PAGE} ({text.count(chr(10))} lines)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
