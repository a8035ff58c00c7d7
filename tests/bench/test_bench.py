"""bench/run.py: the synthetic data and the recall arithmetic it relies on, and a ``--quick`` smoke run.

Timing is never asserted here (BENCHMARKS.md holds the figures); the smoke run checks that every system
ran, the tables were printed and the numbers that must hold whatever the machine (exact recall on a flat
index, news found by find_news) hold.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import baselines as bench_baselines
from bench import data as bench_data

ROOT = Path(__file__).resolve().parents[2]


def test_dataset_is_deterministic_unique_and_10_to_46_words() -> None:
    texts, topics, roles, causes = bench_data.dataset(500, seed=3)
    again = bench_data.dataset(500, seed=3)
    assert texts == again[0] and np.array_equal(topics, again[1])
    assert texts != bench_data.dataset(500, seed=4)[0]
    assert len(set(texts)) == 500  # one text, one vector
    words = [len(t.split()) for t in texts]
    assert min(words) >= 10 and max(words) <= 46
    assert len(roles) == len(causes) == 500


def test_vectors_are_unit_float32_and_clustered_by_topic() -> None:
    _texts, topics, _r, _c = bench_data.dataset(2000, seed=5)
    vecs = bench_data.vectors(topics, seed=5)
    assert vecs.dtype == np.float32 and vecs.shape == (2000, bench_data.DIM)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    same = vecs[topics == topics[0]]
    other = vecs[topics != topics[0]][:50]
    assert len(same) > 1
    assert float((same[:1] @ same[1:].T).mean()) > float((same[:1] @ other.T).mean()) + 0.2


def test_lookup_embedding_returns_registered_vectors_and_refuses_unknown_text() -> None:
    emb = bench_data.lookup_embedding()
    vecs = np.eye(3, dtype=np.float32)
    emb.register(["a", "b"], vecs[:2])
    emb.register(["c"], vecs[2:])
    assert emb.get_text_embedding("c") == [0.0, 0.0, 1.0]
    assert emb.get_text_embedding_batch(["b", "a"]) == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    with pytest.raises(KeyError):
        emb.get_query_embedding("never registered")


def test_recall_at_10_counts_overlap_with_exact_top10() -> None:
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((300, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)  # inner product = cosine: each vector is its own best
    queries = vecs[:4].copy()
    truth = bench_baselines.exact_top10(vecs, queries)
    assert truth[:, 0].tolist() == [0, 1, 2, 3]
    assert bench_baselines.recall_at_10(truth.tolist(), truth) == 1.0
    half = [list(t[:5]) + [-1] * 5 for t in truth]
    assert bench_baselines.recall_at_10(half, truth) == 0.5


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_quick_run_exits_0_and_prints_its_tables(tmp_path: Path) -> None:
    out, plot = tmp_path / "quick.json", tmp_path / "quick.png"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--out-json", str(out), "--plot", str(plot)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert " failed (exit" not in proc.stderr, proc.stderr[-3000:]
    for heading in ("### Add", "### Search", "### find_news, delete, recover", "### Ingest", "### Targets"):
        assert heading in proc.stdout
    assert "| 1,000 |" in proc.stdout
    data = json.loads(out.read_text())
    ltm, a, b = (data["systems"][s]["1000"] for s in ("ltm", "a", "b"))
    assert ltm["recall10_dense"] == 1.0  # a flat index at 1k is exact
    assert a["recall10_dense"] == 1.0
    assert ltm["find_news_news"] == 50 and a["find_news_news"] == 50  # 50 stored + 50 new observed
    assert ltm["recover_count"] == 1000 + 100 - 100  # extra one-at-a-time adds, minus the deletes
    assert b["flat_bytes_per_msg"] >= 4 * bench_data.DIM
    assert data["systems"]["model"]["128"]["c_texts_per_s"] > 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the baseline commit's ltm ran the same workers in the same run, and every dimension has its plot
    assert data["baseline"] and data["systems"]["base"]["1000"]["recover_count"] == 1000
    assert "add_threads_per_commit" not in data["systems"]["base"]["1000"]  # its own ltm ran: no group commit
    assert data["systems"]["model_base"]["128"]["ltm_local_one_texts_per_s"] > 0
    assert data["systems"]["ltm"]["1000"]["add_threads_total_s"] > 0
    for name in ("add", "search", "find_news", "recover", "disk", "one_at_a_time", "ingest"):
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


def test_the_generated_section_of_benchmarks_md_is_replaced_in_place(tmp_path: Path) -> None:
    from bench import report as bench_report

    doc = tmp_path / "B.md"
    doc.write_text("# B\n\nhand-written\n\n## Later\n\nkept\n")
    results = {"sizes": [1000], "machine": {}, "systems": {}}
    bench_report.write_section(doc, bench_report.section(results, "Machine: x\n### Add\n| 1 |", "bench/results"))
    first = doc.read_text()
    assert first.startswith("# B\n\nhand-written\n") and "## Later\n\nkept\n" in first
    for name, _title in bench_report.PLOTS:
        assert f"(bench/results/{name})" in first
    assert "#### Add" in first and "\n### Add" not in first  # nested under the file's own headings
    bench_report.write_section(doc, bench_report.section(results, "Machine: y\n### Add\n| 2 |", "bench/results"))
    second = doc.read_text()
    assert "| 2 |" in second and "| 1 |" not in second and second.count(bench_report.START) == 1


def test_targets_up_to_1m_are_not_met_by_a_run_that_stops_below_1m() -> None:
    from bench import report as bench_report

    def run(sizes: list[int], ms: float, disk: float) -> dict[str, str]:
        per = {str(n): {"add_batch_ms_per_msg": ms, "disk_bytes_per_msg": disk} for n in sizes}
        return {k: v for k, _, v in bench_report.verdicts({"sizes": sizes, "systems": {"ltm": per}})}

    small = run([1000, 100_000], 0.09, 1900)
    assert small["flat"] == small["disk"] == "MET to 100,000; 1M NOT MEASURED in this run"
    assert small["recover"] == small["search"] == "NOT MEASURED"
    assert run([1000, 100_000], 0.3, 1900)["flat"] == "NOT MET"  # a miss below 1M is a miss
    big = run([1000, 1_000_000], 0.36, 2460)
    assert big["flat"] == "NOT MET" and big["disk"] == "MET"


def corpus(folder: Path, rows: int, seed: int) -> None:
    """``rows`` random unit vectors and their texts, as ``bench.hnsw_real --embed`` leaves them in ``folder``."""
    vecs = np.random.default_rng(seed).standard_normal((rows, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    np.save(folder / "v_0000000.npy", vecs.astype(np.float16))
    (folder / "texts.txt").write_text("\n".join(f"text number {i}" for i in range(rows)), "utf-8")


def test_hnsw_real_fills_through_the_store_and_compares_with_exact_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import hnsw_real

    corpus(tmp_path, 10_000 + hnsw_real.HELD_OUT, seed=3)
    args = [
        "--texts",
        str(tmp_path / "texts.txt"),
        "--work",
        str(tmp_path),
        "--n",
        "10000",
        "--ef",
        "16",
        "--questions",
        "0",
        "--threshold",
        "9000",
    ]  # the graph holds 9,000 rows, the fresh segment the rest
    assert hnsw_real.main(args) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == 10_000
    default = result[f"ef{result['default_ef']} held-out texts"]
    # a graph search at the default ef: random 384-d vectors are a graph's hardest case, and a 9,000-vector graph
    # searches at a third of the configured efSearch (ltm.store.embedded.vectors.ef_search_for): 0.90 here, where
    # real MiniLM texts get 0.97-0.98 at that breadth (docs/SEARCH_SPEED.md)
    assert default["recall10"] >= 0.85, default
    assert result["graph_bytes"] > 0  # the namespace searched an HNSW graph, not a flat index
    assert 0.0 < result["ef16 held-out texts"]["recall10"] < default["recall10"]  # ef 16 misses some: a graph


@pytest.mark.timeout(300)
def test_group_add_times_concurrent_single_adds() -> None:
    """bench/group_add.py: every add is stored, concurrent callers share commits, and the figures are printed."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.group_add", "--n", "400", "--callers", "4", "--repeats", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 3 and lines[-1].startswith("median: "), lines
    for line in lines[:2]:
        assert "400 adds from 4 callers" in line, line
        assert 1.0 <= float(line.split(" ms per add, ")[1].split(" adds per commit")[0]) <= 4.0, line


@pytest.mark.timeout(300)
def test_one_add_splits_an_add_into_the_model_and_the_rest() -> None:
    """bench/one_add.py: the model's share and the store's, for a few adds, with the real model and with the sleep
    standing in for it (which must then be most of each add)."""
    for extra in ([], ["--sleep-ms", "20"]):
        proc = subprocess.run(
            [sys.executable, "-m", "bench.one_add", "--n", "5", *extra],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        line = proc.stdout.strip().splitlines()[-1]
        assert line.startswith("5 adds: ") and "outside" in line and "pre p50" in line, line
        if extra:
            model_ms = float(line.split("sleep 20 ms ")[1].split(" ms")[0])
            assert 20 <= model_ms < 40, line
