"""The sections of BENCHMARKS.md that other benchmarks feed (mem0, the embedded stores, retrieval quality,
PostgreSQL, the service, the event loop), and the formatting every section shares. ``bench.page`` assembles them."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from bench import ROOT
from bench.report import _ratio, _table

RESULTS = ROOT / "bench" / "results"
PAGE = ROOT / "BENCHMARKS.md"
RETRIEVAL_MD = RESULTS / "retrieval.md"
EMBEDDED_STORES_MD = RESULTS / "peers_stores.md"
FRAMEWORKS_MD = RESULTS / "peers_frameworks.md"
FRAMEWORKS_100K_MD = RESULTS / "peers_frameworks_100k.md"  # the same at 100,000 items: the frameworks pages show it
LONG_TURNS_MD = (RESULTS / "long_turns.md", RESULTS / "long_turns_ingest.md")
PG_RUN = "backends-10000-100000-pg17.json"
PG_1M = ("backends-1000000-pg17-postgres.json", "backends-1000000-pg17-embedded.json")
EMBEDDED_START, EMBEDDED_END = "<!-- embedded-stores:start -->", "<!-- embedded-stores:end -->"


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


EMBEDDED_STORES_METHOD = """\
`python -m bench.retrieval.fetch` once (REALTALK and FriendsQA into the git-ignored `bench/data/`), then
`python -m bench.peers.stores --baseline REV` (10k and 100k; writes `bench/results/peers_stores.{md,json}`; `REV`
is an older ltm measured in the same rounds). Each store runs in its own process and virtual environment
(`bench/.venvs/<store>`, installed by the script at pinned versions), every one embedding queries with the same
all-MiniLM-L6-v2 ONNX graph on one thread; ingest rows give every store the same precomputed vectors. The corpus
is real chat turns; past the 14,127 real ones, the 100k corpus adds turns *blended* from two real ones (half the
words of each, the normalised sum of their vectors). Searches run in rounds with the stores' order rotated;
recall@10 is against exact search over the same vectors. Where ltm's search time goes, and the targets two cores
can show: [search speed](docs/SEARCH_SPEED.md).

**The 1M store-work target is retired**: at 1M every add inserts into an HNSW graph (M 32, efConstruction 112)
whose insertion alone costs 0.25-0.30 ms a vector on 2 threads, more than the 0.2 ms the target allowed; the 1M
figures stay as measured in the PostgreSQL-and-embedded table below."""


def embedded_stores() -> list[str]:
    body = (
        EMBEDDED_STORES_MD.read_text("utf-8").strip()
        if EMBEDDED_STORES_MD.exists()
        else "Chroma, Qdrant (local mode) and LanceDB beside ltm on the same turns and model: not in the committed "
        "results yet (`python -m bench.peers.stores` writes `bench/results/peers_stores.md`)."
    )
    return [
        "## Against the embedded stores users pick instead",
        "",
        EMBEDDED_STORES_METHOD,
        "",
        EMBEDDED_START,
        body,
        EMBEDDED_END,
        "",
    ]


FRAMEWORKS_METHOD = (  # one line on the page: the page stays short
    "`python -m bench.retrieval.fetch` once, then `python -m bench.peers.frameworks --pg` (writes "
    "`bench/results/peers_frameworks.{md,json}`). Each store runs in its own process inside its "
    "framework's environment (`.venv-frameworks/<framework>`, built by `LTM_FRAMEWORKS=<framework> bash "
    "scripts/test-frameworks`) and is driven through the framework's own API: LangGraph's `BaseStore` "
    "(`batch()` of 500 puts, `search(namespace, query=..., limit=10)`), AutoGen's `Memory` (`add` one at "
    "a time, `query`), CrewAI's `StorageBackend` (`save` of 500 records with their vectors, `search`). "
    "Every store embeds with the same lookup of precomputed all-MiniLM-L6-v2 vectors (the model costs "
    "nothing), on the same REALTALK and FriendsQA turns; 2 interleaved rounds of 200 REALTALK questions. "
    'Recall@10 is against the questions\' labelled evidence turns; "∩ exact dense" is the overlap of the '
    "top 10 with exact cosine search. The head gives the machine's load average: a busy machine moves the "
    "absolute times, the ratios within a run are the finding; a load above the 2 cores, as in the run "
    "below, means other processes shared the machine throughout."
)


def frameworks_section() -> list[str]:
    body = (
        FRAMEWORKS_MD.read_text("utf-8").strip()
        if FRAMEWORKS_MD.exists()
        else "not in the committed results yet (`python -m bench.peers.frameworks` writes "
        "`bench/results/peers_frameworks.md`)."
    )
    title = "## Inside the frameworks: ltm's adapters against each framework's own stores"
    return [title, "", FRAMEWORKS_METHOD, "", body, ""]


def long_turns_section() -> list[str]:
    """Messages longer than the model's window: recall by the part a question is about, and their ingest."""
    parts = [path.read_text("utf-8").strip() for path in LONG_TURNS_MD if path.exists()]
    body = parts or [
        "not in the committed results yet (`python -m bench.retrieval.long_turns`, `python -m bench.long_turns`)."
    ]
    return ["## Long turns: found by any part, ingested at the model's speed", "", *"\n\n".join(body).split("\n"), ""]


def parse_retrieval(text: str) -> dict[str, dict[str, dict[str, float]]]:
    """{set: {system: {metric: value}}} from the tables ``bench.retrieval`` writes."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for block in re.split(r"\n(?=\*\*\w)", text.strip()):
        m = re.match(r"\*\*(\w+)\*\*", block)
        rows = block.splitlines()
        first = next((i for i, ln in enumerate(rows) if ln.startswith("|")), len(rows))
        lines = list(itertools.takewhile(lambda ln: ln.startswith("|"), rows[first:]))  # the systems' table only
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
