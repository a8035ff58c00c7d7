"""bench.retrieval: metrics, the fetch converters (on small synthetic repositories) and the harness end to end
on the committed synthetic fixture (the public sets are fetched, never committed: see bench/retrieval/fetch.py)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench.retrieval import fetch, metrics, run

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "retrieval_fixture.json"


def test_metrics_by_hand() -> None:
    ranked = ["x", "a", "y", "b"]
    assert metrics.recall(ranked, ["a", "b"], 1) == 0.0
    assert metrics.recall(ranked, ["a", "b"], 2) == 0.5
    assert metrics.recall(ranked, ["a", "b"], 10) == 1.0
    assert metrics.mrr(ranked, ["a", "b"]) == 0.5
    assert metrics.mrr(ranked, ["z"]) == 0.0
    ideal = 1 + 1 / math.log2(3)
    assert metrics.ndcg(ranked, ["a", "b"]) == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    assert metrics.ndcg(["a", "b"], ["a", "b"]) == pytest.approx(1.0)


def _git_repo(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, "utf-8")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(root), *args], check=True)
    return root


def test_realtalk_converter_skips_the_held_out_copy(tmp_path: Path) -> None:
    chat = {
        "name": {"speaker_1": "A", "speaker_2": "B"},
        "session_1": [
            {"clean_text": "I moved to Porto", "speaker": "A", "date_time": "29.12.2023, 22:42:04", "dia_id": "D1:1"},
            {"clean_text": "", "speaker": "B", "date_time": "29.12.2023, 22:43:00", "dia_id": "D1:2"},
            {"clean_text": "Since when?", "speaker": "B", "date_time": "30.12.2023, 08:00:00", "dia_id": "D1:3"},
        ],
        "session_1_date_time": "29.12.2023, 22:42:04",
        "qa": [
            {"question": "Where did A move?", "answer": "Porto", "evidence": ["D1:1", "D9:9"], "category": 1},
            {"question": "Only a photo?", "answer": "-", "evidence": ["D1:2"], "category": 2},
        ],
    }
    repo = _git_repo(
        tmp_path / "rt", {"data/Chat_1_A_B.json": json.dumps(chat), "data/locomo/Chat_1_C_D.json": json.dumps(chat)}
    )
    out = fetch.fetch("realtalk", repo, tmp_path / "out")
    data = json.loads(out.read_text("utf-8"))
    assert [c["id"] for c in data["conversations"]] == ["Chat_1_A_B"]  # the LoCoMo copy is never read
    conv = data["conversations"][0]
    assert [t["id"] for t in conv["turns"]] == ["D1:1", "D1:3"]  # the empty photo turn is dropped
    assert [t["session"] for t in conv["turns"]] == [1, 1]
    assert conv["questions"] == [
        {"id": "Chat_1_A_B:0", "question": "Where did A move?", "evidence": ["D1:1"], "category": "fact"}
    ]
    with pytest.raises(ValueError, match="held out"):
        fetch.Repo(repo).read("data/locomo/Chat_1_C_D.json")


def test_harness_on_the_synthetic_fixture(tmp_path: Path) -> None:
    out = run.run([FIXTURE], embedding="hash", progress=lambda _: None)["fixture"]
    systems = out["summary"]["systems"]
    assert set(systems) == set(run.SYSTEMS)
    assert out["summary"]["n"] == 9 and out["summary"]["categories"] == {"date": 3, "fact": 4, "inference": 2}
    for system in systems.values():
        assert all(0.0 <= v <= 1.0 for v in system["all"].values())
    # "Pistachio"-style rare words: keyword search and BM25 find these turns first
    assert out["ranked"]["ltm keyword"]["b:0"][0] == "D1:1"
    assert out["ranked"]["BM25 stemmed"]["a:0"][0] == "D1:1"
    text = run.table("fixture", out["summary"])
    assert "**ltm hybrid**" in text and "r@10 date (3)" in text
    # per evidence shape: each question is in "one turn" or "2+ turns", and "2+ sessions" when its turns span two
    shapes = out["summary"]["shapes"]
    assert shapes["one turn"] + shapes["2+ turns"] == 9
    hybrid = systems["ltm hybrid"]
    assert set(hybrid["by_shape"]) == set(shapes)
    assert out["search_ms_p95"]["hybrid"] >= out["search_ms_p50"]["hybrid"] > 0.0
    assert 0 < out["context_tokens"]["top5"] <= out["context_tokens"]["top10"]
    by_type = run.type_table(out["summary"], out)
    assert f"all (9) {hybrid['all']['recall@5']:.3f} / {hybrid['all']['recall@10']:.3f}, date (3) " in by_type
    assert "\n" not in by_type and "p95" in by_type
    titled = run.with_types(text, by_type)
    assert titled.count("\n") == text.count("\n") and titled.startswith("**fixture** (9 questions).")

    doc = tmp_path / "B.md"
    doc.write_text("# B\n\nbefore\n", "utf-8")
    run.write_section(doc, "one")
    run.write_section(doc, "two")
    assert doc.read_text("utf-8") == f"# B\n\nbefore\n\n{run.START}\ntwo\n{run.END}\n"


def test_evidence_shapes() -> None:
    session = {"D1:1": 1, "D1:2": 1, "D2:1": 2}
    assert run.shape(["D1:1"], session) == ["one turn"]
    assert run.shape(["D1:1", "D1:2"], session) == ["2+ turns"]
    assert run.shape(["D1:1", "D2:1"], session) == ["2+ turns", "2+ sessions"]
    assert run.shape(["a", "b"], {}) == ["2+ turns", "2+ sessions"]  # no sessions: each turn its own


def test_session_dates_stamp_every_turn_at_its_sessions_first_time() -> None:
    data: dict[str, Any] = {
        "name": "s",
        "conversations": [
            {
                "id": "c",
                "questions": [],
                "turns": [
                    {"id": "D1:1", "time": 100.0, "session": 1},
                    {"id": "D1:2", "time": 160.0, "session": 1},
                    {"id": "D2:1", "time": 9000.0, "session": 2},
                    {"id": "D2:2", "time": 9100.0, "session": 2},
                    {"id": "m", "time": 50.0},
                ],
            }
        ],
    }
    dated = run.session_dated(data)
    assert dated["name"] == "s@session"
    assert [t["time"] for t in dated["conversations"][0]["turns"]] == [100.0, 100.0, 9000.0, 9000.0, 50.0]
    assert data["conversations"][0]["turns"][1]["time"] == 160.0  # the set itself is left as it was
    assert run._has_sessions(data) and not run._has_sessions(json.loads(FIXTURE.read_text("utf-8")))


def test_the_harness_reads_name_words_as_the_store_would() -> None:
    from bench.retrieval.harness import name_words

    assert name_words(["Bob the Builder", "J R", "Ann"]) == {"bob", "builder", "ann"}


def _scene(title: str, utterances: list[tuple[list[str], str]], qas: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "title": title,
        "paragraphs": [
            {
                "utterances:": [
                    {"uid": i, "speakers": who, "utterance": text} for i, (who, text) in enumerate(utterances)
                ],
                "qas": qas,
            }
        ],
    }


def _answer(uid: int | None, text: str = "x") -> dict[str, Any]:
    return {"answer_text": text, "utterance_id": uid, "inner_start": 0, "inner_end": 0, "is_speaker": False}


def test_friendsqa_converter_holds_an_episode_as_one_conversation(tmp_path: Path) -> None:
    dev = {
        "version": "2.0",
        "data": [
            # scene 3 comes first in the file: the episode is put in scene order
            _scene(
                "s01_e23_c03",
                [
                    (["#NOTE#"], "[ Scene : Central Perk . ]"),
                    (["Ross Geller", "Rachel Green"], "We 're gon na be late !"),
                ],
                [
                    {
                        "id": "s01_e23_c03_Where",
                        "question": "Where are they ?",
                        "answers": [_answer(0), _answer(0, "y")],
                    },
                    {"id": "s01_e23_c03_Why", "question": "Why did it happen ?", "answers": [_answer(None)]},
                ],
            ),
            _scene(
                "s01_e23_c01",
                [(["Joey Tribbiani"], "I do n't know ."), (["Monica Geller"], "Which one ?")],
                [
                    {
                        "id": "s01_e23_c01_Who_Paraphrased",
                        "question": "By whom was it said ?",
                        "answers": [_answer(1), _answer(0)],
                    }
                ],
            ),
        ],
    }
    test = {
        "version": "2.0",
        "data": [
            _scene(
                "s01_e21_c01",
                [(["Chandler Bing"], "Hi .")],
                [{"id": "s01_e21_c01_How", "question": "Is that so ?", "answers": [_answer(0)]}],
            )
        ],
    }
    repo = _git_repo(
        tmp_path / "fqa", {"dat/friendsqa_dev.json": json.dumps(dev), "dat/friendsqa_tst.json": json.dumps(test)}
    )  # no training file
    data = json.loads(fetch.fetch("friendsqa", repo, tmp_path / "out").read_text("utf-8"))
    assert data["dropped"] == 1  # its only answer names no utterance
    assert [c["id"] for c in data["conversations"]] == ["s01_e21", "s01_e23"]
    episode = data["conversations"][1]
    assert [t["id"] for t in episode["turns"]] == ["s01_e23_c01:0", "s01_e23_c01:1", "s01_e23_c03:0", "s01_e23_c03:1"]
    assert [t["text"] for t in episode["turns"]] == [
        "I don't know.",
        "Which one?",
        "[Scene: Central Perk.]",
        "We're gonna be late!",
    ]
    assert [t["speaker"] for t in episode["turns"]][1:] == ["Monica Geller", "#NOTE#", "Ross Geller and Rachel Green"]
    times = [t["time"] for t in episode["turns"]]
    assert times[1] - times[0] == 5.0 and times[2] - times[0] == 16 * 3600.0  # scenes apart, turns seconds apart
    assert [t["session"] for t in episode["turns"]] == [1, 1, 3, 3]
    assert data["conversations"][0]["turns"][0]["time"] < times[0]  # an earlier episode is earlier
    assert episode["questions"] == [
        {
            "id": "dev:s01_e23_c01_Who_Paraphrased",
            "question": "By whom was it said?",
            "evidence": ["s01_e23_c01:1", "s01_e23_c01:0"],
            "category": "who",
        },
        {
            "id": "dev:s01_e23_c03_Where",
            "question": "Where are they?",
            "evidence": ["s01_e23_c03:0"],
            "category": "where",
        },
    ]
    assert data["conversations"][0]["questions"][0]["category"] == "other"
    from bench.retrieval.explore import is_dev

    assert is_dev("friendsqa", "s01_e23", "dev:s01_e23_c03_Where")
    assert not is_dev("friendsqa", "s01_e21", "test:s01_e21_c01_How")


def _meeting(utterances: list[tuple[str, str]], spans: list[list[list[str]]]) -> dict[str, Any]:
    return {
        "topic_list": [{"topic": "everything", "relevant_text_span": [["0", str(len(utterances) - 1)]]}],
        "general_query_list": [{"query": "Summarize the whole meeting.", "answer": "-"}],
        "specific_query_list": [
            {"query": f"What was said about {i}? ", "answer": "-", "relevant_text_span": s} for i, s in enumerate(spans)
        ],
        "meeting_transcripts": [{"speaker": who, "content": text} for who, text in utterances],
    }


def test_qmsum_converter_keeps_the_specific_queries_with_short_spans(tmp_path: Path) -> None:
    utterances = [
        ("Project Manager", "So {disfmarker} we need a T_V_ remote ."),
        ("Marketing", "{vocalsound}"),
        ("Industrial Designer", "The L_C_D_s are n't cheap ."),
        ("Marketing", "Mm - hmm ."),
    ]
    product = _meeting(
        utterances + [("User Interface", "Right .")] * 8,
        [
            [["0", "2"]],  # kept: the noise-only utterance 1 is no turn, so no evidence
            [["1", "1"]],  # dropped: its only utterance is empty
            [["0", "5"], ["4", "7"]],  # kept: 8 utterances once the overlap is counted once
            [["0", "10"]],
        ],
    )  # dropped: 11 utterances
    committee = _meeting(
        [("The Chair", "I call the meeting to order."), ("Hon. A B", "Seniors first.")], [[["1", "1"]]]
    )
    repo = _git_repo(
        tmp_path / "qms",
        {
            "data/ALL/test/ES2004a.json": json.dumps(product),
            "data/ALL/train/covid_1.json": json.dumps(committee),
            "data/Product/all/ES2004a.json": json.dumps(product),
            "data/Committee/all/covid_1.json": json.dumps(committee),
            "data/Product/test/ES2004a.json": json.dumps(product),
            "data/ALL/jsonl/test.jsonl": json.dumps(product),
        },
    )
    data = json.loads(fetch.fetch("qmsum", repo, tmp_path / "out").read_text("utf-8"))
    assert data["name"] == "qmsum" and data["dropped"] == 2
    assert [c["id"] for c in data["conversations"]] == ["ES2004a", "covid_1"]  # each meeting once, in name order
    meeting = data["conversations"][0]
    assert [t["id"] for t in meeting["turns"]][:4] == ["ES2004a:0", "ES2004a:2", "ES2004a:3", "ES2004a:4"]
    assert [t["text"] for t in meeting["turns"]][:3] == [
        "So we need a TV remote.",
        "The LCDs aren't cheap.",
        "Mm - hmm.",
    ]
    assert meeting["turns"][0]["speaker"] == "Project Manager"
    times = [t["time"] for t in meeting["turns"]]
    assert times[1] - times[0] == 10.0  # turn j at 5 j seconds: the dropped utterance keeps its place
    assert data["conversations"][1]["turns"][0]["time"] - times[0] == 86400.0  # the next meeting, a day later
    assert meeting["questions"] == [
        {
            "id": "test:ES2004a:0",
            "question": "What was said about 0?",
            "evidence": ["ES2004a:0", "ES2004a:2"],
            "category": "product",
        },
        {
            "id": "test:ES2004a:2",
            "question": "What was said about 2?",
            "evidence": ["ES2004a:0", "ES2004a:2", "ES2004a:3", "ES2004a:4", "ES2004a:5", "ES2004a:6", "ES2004a:7"],
            "category": "product",
        },
    ]
    assert data["conversations"][1]["questions"] == [
        {
            "id": "train:covid_1:0",
            "question": "What was said about 0?",
            "evidence": ["covid_1:1"],
            "category": "committee",
        }
    ]


def test_the_eighth_rounds_regression_solves_its_objective_and_restores_the_prior() -> None:
    """bench.tuning.prior_fit: the Newton solver ends where the L2-penalised log-loss's gradient is zero (the intercept
    unpenalised), and the prior's weights are put back after a lever."""
    import numpy as np

    from bench.tuning import prior_fit as round8
    from ltm.store.search import fusion

    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 3))
    y = (x @ np.array([1.5, -2.0, 0.5]) + 0.3 + rng.normal(size=400) > 0).astype(float)
    w = round8.logistic(x, y, c=1.0)
    x1 = np.hstack([x, np.ones((len(x), 1))])
    p = 1.0 / (1.0 + np.exp(-(x1 @ w)))
    gradient = x1.T @ (p - y) + np.append(w[:3], 0.0)
    assert np.abs(gradient).max() < 1e-6
    assert w[0] > 0 > w[1]
    saved = dict(fusion.PRIOR)
    with round8.prior_weights({"cosine": 0.0, "length": 0.0, "question": 0.0, "coverage": 1.0}):
        assert fusion.prior(0.9, "recipes here", fusion.stems(["recipe"])) == 1.0
    assert dict(fusion.PRIOR) == saved
