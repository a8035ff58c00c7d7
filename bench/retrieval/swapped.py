"""Questions that name the wrong person: REALTALK's speaker-naming questions asked about the other speaker (issue 15).

A held-out benchmark of the issue has *adversarial* questions built that way ("What did Caroline realize after her
charity race?" when Melanie ran it): their evidence is the other speaker's turn. Here each REALTALK question that
names exactly one of its chat's two speakers is asked again with that name replaced by the other speaker's first
name, evidence unchanged, so a ranking that bets on the named person is seen paying for it. Reported: recall@10
of search as shipped (the lever harness's ``shipped``) on all questions, the *named* ones, their *swapped* twins and
those naming nobody, for the speaker bonus as shipped and for the values given with ``--bonus``::

    python -m bench.retrieval.swapped                    # needs bench/data/realtalk.json (bench.retrieval.fetch)
    python -m bench.retrieval.swapped --bonus 0 0.3 0.5
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Sequence

from bench.retrieval.explore import embed
from bench.retrieval.harness import MODEL, Question, build, evaluate, named_turns, shipped
from bench.retrieval.run import DATA_DIR
from ltm.store.search import fusion
from ltm.store.search.query import query_terms

# REALTALK's questions call some speakers by another spelling or a short name.
ALIASES = {"muhhamed": ("muhammad", "muhhamed"), "fahim khan": ("fahim khan", "fahim")}


def swap(question: str, speakers: Sequence[str]) -> str | None:
    """``question`` about the other of two ``speakers``, or None unless it names exactly one of them."""
    if len(set(speakers)) != 2:
        return None
    text = question.lower()
    words = set(query_terms(question))
    named = [s for s in sorted(set(speakers))
             if set(query_terms(s)) & words or any(re.search(rf"\b{re.escape(a)}\b", text) for a in ALIASES.get(
                 s.lower(), ()))]
    if len(named) != 1:
        return None
    other = next(s for s in sorted(set(speakers)) if s != named[0]).split()[0].capitalize()
    out = question
    for alias in sorted(ALIASES.get(named[0].lower(), (named[0].lower(),)), key=len, reverse=True):
        out = re.sub(rf"\b{re.escape(alias)}\b", other, out, flags=re.IGNORECASE)
    return out if out != question else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bonus", type=float, nargs="*", default=[], help="speaker bonus values to compare")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from bench.retrieval.cache import local_model

    model = local_model()
    MODEL.append(model)
    questions = build(json.loads((DATA_DIR / "realtalk.json").read_text("utf-8")), model)
    pairs = [(q, t) for q in questions if (t := swap(q.text, q.conv.speakers)) is not None]
    vectors = embed(model, [t for _, t in pairs])
    swapped = [Question(q.conv, t, v, q.evidence, q.category, q.dev) for (q, t), v in zip(pairs, vectors, strict=True)]
    named = [q for q, _ in pairs]
    nobody = [q for q in questions if not named_turns(q)]
    print(f"REALTALK: {len(questions)} questions, {len(named)} name one speaker (swapped twins: {len(swapped)}), "
          f"{len(nobody)} name nobody")
    print("| speaker bonus | all | named | swapped | no name |\n|---|---:|---:|---:|---:|")
    shipped_bonus = fusion.WEIGHTS["speaker"]
    for bonus in [shipped_bonus, *[b for b in args.bonus if b != shipped_bonus]]:
        fusion.WEIGHTS = {**fusion.WEIGHTS, "speaker": bonus}
        row = [evaluate(group, shipped)["recall@10"] for group in (questions, named, swapped, nobody)]
        label = f"{bonus} (shipped)" if bonus == shipped_bonus else str(bonus)
        print(f"| {label} | " + " | ".join(f"{v:.3f}" for v in row) + " |", flush=True)
    fusion.WEIGHTS = {**fusion.WEIGHTS, "speaker": shipped_bonus}
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
