"""BENCHMARKS.md from the committed results: ``python -m bench.page`` (no measurement; seconds).

Every figure on the page comes from a file under ``bench/results/`` written by the benchmark that measured it;
every ratio compares two systems measured in the same run. The sections, their sources and the commands that
refresh a source are listed in :data:`SOURCES`. ``python -m bench.page --check`` fails when the committed page
differs from what the results give (CI runs it through ``tests/bench/test_page.py``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from functools import partial
from pathlib import Path
from typing import Any

from bench import ROOT
from bench.report import _ratio, _table

RESULTS = ROOT / "bench" / "results"
PAGE = ROOT / "BENCHMARKS.md"
RETRIEVAL_MD = RESULTS / "retrieval.md"
EMBEDDED_STORES_MD = RESULTS / "embedded_stores.md"
PG_RUN = "backends-10000-100000-pg17.json"
PG_1M = ("backends-1000000-pg17-postgres.json", "backends-1000000-pg17-embedded.json")
EMBEDDED_START, EMBEDDED_END = "<!-- embedded-stores:start -->", "<!-- embedded-stores:end -->"
PLOTS = [
    ("add.png", "store work per added message"),
    ("search.png", "search latency"),
    ("one_at_a_time.png", "10,000 adds, one message per call"),
    ("ingest.png", "ingest with the local model"),
    ("find_news.png", "find_news"),
    ("recover.png", "recovery"),
    ("disk.png", "disk per message"),
]

# (section, source file, the command that measures it again)
SOURCES = [
    ("ltm against the llama-index way, raw FAISS and the model", "results.json", "python -m bench.run --all"),
    ("ltm against mem0", "peers.json", "python -m bench.peers"),
    ("Against the embedded stores users pick instead", "embedded_stores.md", "python -m bench.peers"),
    (
        "Retrieval quality",
        "retrieval.md",
        "python -m bench.retrieval.fetch && python -m bench.retrieval --write bench/results/retrieval.md",
    ),
    (
        "PostgreSQL + pgvector against embedded",
        f"{PG_RUN}, {', '.join(PG_1M)}",
        "python -m bench.backends --sizes 10000 100000 --writers 1 2 4 8 --load both --tag=-pg17",
    ),
    ("The service", "service.json", "python -m bench.service"),
    (
        "The async API",
        "loop_lag.json",
        "python -m bench.loop_lag --tasks 64 --prefill 2000 --repeats 3 --out-json bench/results/loop_lag.json",
    ),
]


def _f(v: Any, fmt: str = ".3g") -> str:
    """A figure for a table: three significant digits, thousands spelt out (1,270, not 1.27e+03)."""
    if v is None:
        return "–"
    if fmt == ".3g" and abs(v) >= 1000:
        return f"{v:,.0f}"
    return format(v, fmt)


def _load(name: str) -> dict[str, Any]:
    return json.loads((RESULTS / name).read_text("utf-8"))  # type: ignore[no-any-return]


def _g(res: dict[str, Any], system: str, n: int, key: str) -> Any:
    return res["systems"].get(system, {}).get(str(n), {}).get(key)


def _at(res: dict[str, Any], n: int, system: str, key: str) -> Any:
    return _g(res, system, n, key)


def _first_model(res: dict[str, Any]) -> dict[str, Any]:
    """The model run's figures at its first size (the main run measures the model at one size)."""
    runs: dict[str, dict[str, Any]] = res["systems"].get("model", {})
    return next(iter(runs.values()), {})


def _pair(a: Any, b: Any) -> str:
    return f"{_f(a)} / {_f(b)}"


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
        "python -m bench.page",
        "```",
        "",
        "Each section names the run it comes from; the commands that measure again (each writes its file in "
        "`bench/results/`, and `python -m bench.run --all` also rewrites this page):",
        "",
    ]
    lines += _table(["section", "results", "command"], [[s, f"`{f}`", f"`{c}`"] for s, f, c in SOURCES])
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
        "\"× faster\" is the peer's figure over ltm's (higher is better for ltm).",
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


def peers_section(peers: dict[str, Any]) -> list[str]:
    rows = peers.get("rows", [])
    engines = [
        k for k in (rows[0] if rows else {}) if isinstance(rows[0][k], dict) and k != "ltm" and not k.startswith("ltm@")
    ]
    out = [
        "## ltm against mem0",
        "",
        f"`python -m bench.peers`: {peers.get('head', '')}.",
        "",
        "Both engines use the same model and the same REALTALK chat turns (with speaker and time), in one run, "
        "each round rotating which engine goes first; times are taken in each engine's process around its own "
        'call, k = 10, the query embedding included; "mem0 / ltm" is how many times longer mem0 took (per '
        "message for batches). mem0 runs in its own venv with its default local Qdrant "
        "store and `add(..., infer=False)` (no LLM); its keyword leg needs model files fetched at run time, so "
        "its search here is dense only, against both of ltm's modes. The repeated query is served from ltm's "
        "query cache: the store's own work.",
        "",
    ]
    table_rows = []
    for row in rows:
        cells = [row["operation"], _cell(row.get("ltm"))]
        key = "ms_per_item" if row["operation"].startswith("add in batches") else "p50_ms"
        for e in engines:
            cells += [_cell(row.get(e)), _ratio(row.get(e, {}).get(key), row.get("ltm", {}).get(key))]
        table_rows.append(cells)
    head_cells = ["operation", "ltm p50 ms"]
    for e in engines:
        head_cells += [f"{e} p50 ms", f"{e} / ltm"]
    return out + _table(head_cells, table_rows) + [""]


def _cell(entry: dict[str, Any] | None) -> str:
    if not entry:
        return ""
    if entry.get("calls") and entry.get("ms_per_item") and entry["p50_ms"] > 5 * entry["ms_per_item"]:
        return f"{entry['p50_ms']:.0f} per batch, {entry['ms_per_item']:.1f} per msg"
    return f"{entry['p50_ms']:.2f}"


def embedded_stores() -> list[str]:
    body = (
        EMBEDDED_STORES_MD.read_text("utf-8").strip()
        if EMBEDDED_STORES_MD.exists()
        else "Chroma, Qdrant (local mode) and LanceDB beside ltm on the same turns and model, from `python -m "
        "bench.peers`: not in the committed results yet (`bench/results/embedded_stores.md` is absent)."
    )
    return ["## Against the embedded stores users pick instead", "", EMBEDDED_START, body, EMBEDDED_END, ""]


def parse_retrieval(text: str) -> dict[str, dict[str, dict[str, float]]]:
    """{set: {system: {metric: value}}} from the tables ``bench.retrieval`` writes."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for block in re.split(r"\n(?=\*\*\w)", text.strip()):
        m = re.match(r"\*\*(\w+)\*\*", block)
        lines = [ln for ln in block.splitlines() if ln.startswith("|")]
        if not m or len(lines) < 3:
            continue
        head_cells = [c.strip() for c in lines[0].strip("|").split("|")]
        systems: dict[str, dict[str, float]] = {}
        for ln in lines[2:]:
            cells = [c.strip().strip("*") for c in ln.strip("|").split("|")]
            systems[cells[0]] = {h: float(v) for h, v in zip(head_cells[1:], cells[1:], strict=True)}
        out[m.group(1)] = systems
    return out


def retrieval_section(text: str) -> list[str]:
    parsed = parse_retrieval(text)
    rows = []
    for name, systems in sorted(parsed.items()):

        def r(system: str, sys_: dict[str, dict[str, float]] = systems) -> str:
            return f"{sys_[system]['recall@10']:.3f}" if system in sys_ else "–"

        rows.append(
            [
                name,
                f"**{r('ltm hybrid')}**",
                r("ltm keyword"),
                r("ltm dense"),
                r("BM25 stemmed"),
                r("dense speaker: text"),
                r("RRF(BM25, dense speaker)"),
            ]
        )
    return [
        "## Retrieval quality on public conversations",
        "",
        "Four public, human-written sets (fetched into the git-ignored `bench/data/`, never committed): "
        "**REALTALK** (10 real 21-day chats, 679 questions with evidence turns), **MADial-Bench** (memories "
        "recalled in dialogue), **FriendsQA** (17 episodes of Friends, each one conversation) and **QMSum** "
        "(meeting transcripts). Each conversation is stored through the ordinary path (`add_batch` of "
        "`Message(role=speaker, sent_from=speaker, content=turn, created_at=when)`, no helper), then searched "
        "with each question (k = 10). Beside ltm, in the same run: Okapi BM25 with Porter stemming, exact "
        'cosine with the same model (over bare text and over "speaker: text"), and reciprocal-rank fusion of '
        "the two. How hybrid search gets there: [docs/search.md](docs/search.md).",
        "",
        "recall@10:",
        "",
        *_table(
            ["set", "ltm hybrid", "ltm keyword", "ltm dense", "BM25", "dense (speaker: text)", "RRF(BM25, dense)"], rows
        ),
        "",
        "<details><summary>Every metric, by question category</summary>",
        "",
        text.strip(),
        "",
        "</details>",
        "",
    ]


def pg_section() -> list[str]:
    run = _load(PG_RUN)
    by = {(s["engine"], s["n"]): s for s in run["sizes"]}
    for name in PG_1M:
        for s in _load(name)["sizes"]:
            by[(s["engine"], s["n"])] = s
    sizes = sorted({n for _, n in by})
    rows = []
    for n in sizes:
        for engine in ("embedded", "postgres"):
            s = by.get((engine, n))
            if s is None:
                continue
            bulk = s.get("load_mode") == "bulk"
            rows.append(
                [
                    f"{n:,}",
                    engine,
                    "–" if bulk else f"{s['add_batched_per_s']:,.0f}",
                    f"{s['add_batched_per_s' if bulk else 'bulk_per_s']:,.0f}" if bulk or s.get("bulk_per_s") else "–",
                    _f(s.get("add_one_p50_ms")),
                    _f(s.get("dense_p50_ms")),
                    _f(s.get("dense_recall10")),
                    _f(s.get("hybrid_p50_ms")),
                    _f(s.get("keyword_p50_ms")),
                    _f(s.get("find_news100_ms")),
                    _f(s.get("recover_ms")),
                ]
            )
    writers = [
        [
            str(w["writers"]),
            w["engine"],
            f"{w['throughput_per_s']:.0f}",
            _f(w["p50_ms"]),
            _f(w["p99_ms"]),
            str(w["lost"]),
        ]
        for w in run["writers"]
    ]
    load = ", ".join(f"{x:.1f}" for x in run["load"])
    return [
        "## PostgreSQL + pgvector against embedded",
        "",
        "`python -m bench.backends`: the same corpus through the public API on both engines, in one run per "
        "size: PostgreSQL 16 + pgvector from the `pgserver` wheel on a unix socket (its default settings), "
        "precomputed clustered 384-d vectors (no model: this measures the engines), `hnsw_threshold` 20,000 "
        "(exact search at 10,000, HNSW above on both). Keyword and hybrid recall@10 are hit rates of the "
        "message a query was made from; dense recall@10 is against exact search over the stored vectors "
        "(these synthetic vectors are much harder for HNSW than sentence embeddings; docs/search.md has the "
        f"recall on real embeddings). Load average at the start of the 10k/100k run: {load}. "
        "Times in ms; loads in rows/s (batches of 1,000; `bulk_load` builds the index once, at the end).",
        "",
        *_table(
            [
                "N",
                "engine",
                "add_batch rows/s",
                "bulk_load rows/s",
                "add one p50",
                "dense p50",
                "dense recall@10",
                "hybrid p50",
                "keyword p50",
                "find_news(100)",
                "recover",
            ],
            rows,
        ),
        "",
        "At 1,000,000 each engine ran alone, back to back (PostgreSQL loaded inside `bulk_load`, "
        f"`{' '.join(_load(PG_1M[0])['argv'])}`). Writers: 1-8 processes each adding one message per call to "
        "one namespace, hash embedding (ms per add):",
        "",
        *_table(["writers", "engine", "adds/s", "p50", "p99", "lost"], writers),
        "",
        "What runs where, and the settings for a large PostgreSQL namespace: [docs/DEPLOYMENT.md](docs/DEPLOYMENT.md).",
        "",
    ]


def service_section() -> list[str]:
    s = _load("service.json")
    rows = []
    for key, what in (
        ("in_process", "in process (16 threads, one `MemoryStorage`)"),
        ("http", "HTTP, `ltm serve` in its own process"),
        ("kill9", "kill -9 half-way, restarted on the same port"),
    ):
        p = s[key]
        errors = sum(p["errors"].values())
        rows.append(
            [
                what,
                f"{p['ops_per_s']:.1f}",
                _pair(p["write"]["p50_ms"], p["write"]["p99_ms"]),
                _pair(p["search"]["p50_ms"], p["search"]["p99_ms"]),
                f"{errors:,}",
                str(p.get("missing_acked", "–")),
            ]
        )
    k = s["kill9"]
    return [
        "## The service (`ltm serve`)",
        "",
        f"`python -m bench.service`: {s['clients']} client threads for 30 s per phase, half writes of one "
        "message per request and half hybrid searches (k = 10), the local model, a fresh data root, "
        f"`--no-auth`; {s['cpus']} cores at load average {s['load_before']:.1f} -> {s['load_after']:.1f} "
        "(other work was running). Every operation embeds one text with the local model, and the 16 clients "
        "queue behind it: HTTP throughput is "
        f"{s['http_vs_in_process_throughput']:.2f}× the in-process throughput.",
        "",
        *_table(
            ["phase", "ops/s", "write p50 / p99 ms", "search p50 / p99 ms", "errors", "acknowledged writes missing"],
            rows,
        ),
        "",
        f"**kill -9 loses no acknowledged write**: all {k['acked_writes']} ids the server answered 200 for "
        f"were read back after the restart ({k['restart_s']:.1f} s: interpreter, imports, the model). The "
        "kill phase's errors are requests that met a dead or restarting server, never acknowledged.",
        "",
    ]


def loop_lag_section() -> list[str]:
    d = _load("loop_lag.json")
    med, a = d["medians"], d["args"]
    names = {
        "idle": "idle (ticker alone)",
        "sync-in-loop": "sync API called on the loop",
        "async": "`aadd` / `asearch`",
    }
    rows = [[names[k], _f(v["p50_ms"]), _f(v["p99_ms"]), _f(v["max_ms"]), _f(v["work_s"])] for k, v in med.items()]
    return [
        "## The async API and the event loop",
        "",
        f"`python -m bench.loop_lag`: a ticker asks to wake every 5 ms while {a['tasks']} tasks each run "
        f"{a['ops']} add + search pairs on a store of {a['prefill']:,} messages (hash embedding: the lag is the "
        f"store's own); medians of {a['repeats']} repeats, same run. The async twins run their blocking work in "
        "the store's thread pool.",
        "",
        *_table(["mode", "p50 lag ms", "p99 lag ms", "max lag ms", "work s"], rows),
        "",
    ]


def not_measured() -> list[str]:
    return [
        "## Not measured",
        "",
        "- A at 1,000,000 (its JSON persist of 1M nodes exceeds the run's budget), and the model above 1,000 "
        "texts in the main run.",
        "- `LTM_SQLITE_SYNCHRONOUS=normal` and other `LTM_HNSW_EF_SEARCH` values: every run uses the defaults.",
        "- More than one `ltm serve` behind a balancer, Redis-backed chats under load, TLS.",
        "- mem0's hybrid search (its keyword leg needs files fetched from a model hub at run time).",
        "",
    ]


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
        retrieval_section(retrieval_md),
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
