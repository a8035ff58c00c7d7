"""Fitting the search prior's weights (docs/search.md): a prior for each candidate of a one-line question.

After the fusion, each candidate gets :func:`ltm.store.search.fusion.prior`: the query's cosine to it on its own
scale, its
length, whether it is itself a question, the share of the question's words it holds. The weights
(:data:`ltm.store.search.fusion.PRIOR`) are a logistic regression of "this candidate is evidence" on those four
features and
the fused score, fitted on REALTALK's dev half (chats 1-5) and rounded::

    python -m bench.tuning.prior_fit fit          # the regression on the first step's candidates (with feedback)
    python -m bench.tuning.prior_fit              # shipped, without the prior, each feature alone / left out, a grid,
                                                  # and the round's first step (the prior beside Rocchio feedback)
    FEEDBACK=0 python -m bench.tuning.prior_fit fit   # the refit on the shipped search's candidates (no feedback)
    LEVERS='^(shipped|no prior)' SETS=friendsqa python -m bench.tuning.prior_fit

The rule of every round: fitted or chosen on the dev halves only; the test halves, FriendsQA and QMSum confirm.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import numpy as np

from bench.retrieval.harness import (
    MODEL,
    Lever,
    Question,
    build,
    dense_scores,
    fused,
    line_vectors,
    match_of,
    named_turns,
    priors_of,
    shipped,
    spoken,
    weights_for,
    with_feedback,
)
from bench.retrieval.run import DATA_DIR
from bench.tuning import levers as lv
from ltm.store.search import fusion

FEATURES = ("cosine", "length", "question", "coverage")


@contextmanager
def prior_weights(weights: Mapping[str, float]) -> Iterator[None]:
    """``ltm.store.search.fusion.PRIOR`` replaced for the duration (``prior`` reads it per call)."""
    saved = fusion.PRIOR
    fusion.PRIOR = dict(weights)
    try:
        yield
    finally:
        fusion.PRIOR = saved


def with_prior(weights: Mapping[str, float]) -> Lever:
    """The round's first step (the prior beside Rocchio feedback: the search the feature table was measured on) with
    the prior's weights ``weights``."""

    def run(q: Question) -> list[int]:
        with prior_weights(weights):
            return feedback_too(q)

    return run


STEP_1 = {"cosine": 0.6, "length": 0.15, "question": -0.2, "coverage": 0.15}  # fitted with feedback's candidates


def feedback_too(q: Question) -> list[int]:
    """The prior and Rocchio feedback both, as the round's first step shipped (a question now gets no feedback)."""
    c, original = q.conv, q
    q = spoken(q)
    signals = with_feedback(
        q, {"dense": dense_scores(q, fusion.LINE_WHOLE), "keyword": c.keyword(match_of(original))[:50]}
    )
    return fused(q, signals, named=named_turns(q), priors=priors_of(q, original.text, signals))


def step_one(q: Question) -> list[int]:
    with prior_weights(STEP_1):
        return feedback_too(q)


def eighth_round() -> dict[str, Lever]:
    """shipped (step 2), without the prior (08f6fd4), the refitted prior beside feedback, step 1, and the feature
    table: step 1 with one weight of the prior changed (docs/search.md)."""
    out: dict[str, Lever] = {
        "shipped": shipped,
        "no prior": lambda q: shipped(q, prior=False),
        "feedback too": feedback_too,
        "step 1: feedback too, its weights": step_one,
    }
    for name in FEATURES:
        out[f"{name} alone"] = with_prior({n: (v if n == name else 0.0) for n, v in STEP_1.items()})
        out[f"without {name}"] = with_prior({**STEP_1, name: 0.0})
    for name, values in (
        ("cosine", (0.3, 0.7)),
        ("length", (0.1, 0.2)),
        ("question", (-0.1, -0.3)),
        ("coverage", (0.2,)),
    ):
        for value in values:
            out[f"{name} {value}"] = with_prior({**STEP_1, name: value})
    return out


def features(q: Question, feedback: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(rows: fused score without the prior and the four features, one per candidate; labels: evidence or not) of a
    one-line question, over every candidate of the shipped search."""
    c, original = q.conv, q
    q = spoken(q)
    signals = {"dense": dense_scores(q, fusion.LINE_WHOLE), "keyword": c.keyword(match_of(original))[:50]}
    if feedback:  # as the search ran before this round: the prior was fitted on those candidates
        signals = with_feedback(q, signals)
    ranked = fusion.fuse(signals, 1000, depth=50, weights=weights_for(q), times=c.times, named=named_turns(original))
    unit = {name: 0.0 for name in FEATURES}
    rows, labels = [], []
    single: dict[str, dict[int, float]] = {}
    seqs = [s for s, _, _ in ranked]
    for name in FEATURES:  # each feature's value: the prior with that weight 1 and the others 0
        source = priors_of(q, original.text, signals)
        with prior_weights({**unit, name: 1.0}):
            single[name] = source(seqs) if source is not None else {}
    evidence = set(original.evidence)
    for seq, score, _ in ranked:
        rows.append([score, *(single[name].get(seq, 0.0) for name in FEATURES)])
        labels.append(float(c.ids[seq - 1] in evidence))
    return np.array(rows), np.array(labels)


def logistic(x: np.ndarray, y: np.ndarray, c: float = 1.0, steps: int = 50) -> np.ndarray:
    """Weights (intercept last) minimising 0.5 |w|^2 + c x log-loss (the intercept unpenalised), by Newton's
    method: scikit-learn's ``LogisticRegression(C=c)`` objective."""
    x1 = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(x1.shape[1])
    penalty = np.eye(x1.shape[1]) / c
    penalty[-1, -1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x1 @ w)))
        grad = x1.T @ (p - y) + penalty @ w
        hess = (x1 * (p * (1 - p))[:, None]).T @ x1 + penalty
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    return w


def fit() -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from bench.retrieval.cache import local_model

    model = local_model()
    MODEL.append(model)
    data = json.loads((DATA_DIR / "realtalk.json").read_text("utf-8"))
    xs, ys = [], []
    for q in build(data, model):
        if q.dev and len(line_vectors(q)) == 1:
            x, y = features(q, feedback=os.environ.get("FEEDBACK", "1") == "1")
            xs.append(x)
            ys.append(y)
    x, y = np.vstack(xs), np.concatenate(ys)
    w = logistic(x, y)
    print(f"REALTALK dev: {len(xs)} questions, {len(y)} candidates, {int(y.sum())} of them evidence")
    print("coefficients:", dict(zip(("fused", *FEATURES, "intercept"), np.round(w, 3).tolist(), strict=True)))
    print("per unit of fused score:", {n: round(float(v / w[0]), 3) for n, v in zip(FEATURES, w[1:5], strict=True)})
    assert math.isfinite(float(w[0])) and w[0] > 0, "the fused score must count for evidence"
    return 0


if __name__ == "__main__":
    raise SystemExit(fit() if sys.argv[1:] == ["fit"] else lv.main(eighth_round))
