"""Offline summaries and titles judged on public human-written data: DialogSum (Chen et al., ACL Findings 2021).

DialogSum's dialogues come with three human reference summaries and topics each. Every method gets the same
word budget per dialogue (the one ltm's summarizer computes), and ROUGE-1/2/L F1 (rouge-score, Porter stemmer)
is averaged over the three references:

- ``lead``: the first sentences in order (the classic lead-k baseline);
- ``random``: sentences drawn at random (seeded), in order;
- ``before``: ltm 0.1.0's summarizer (``baseline_summary`` below, kept as it was), at the same word
  budget;
- ``tfidf`` / ``embedding``: ``ltm.llm.summary`` with TF-IDF vectors / the local all-MiniLM-L6-v2 model.

Titles are scored by ROUGE-1 F1 against the best of the three reference topics, and counted as *negated* when
every place the title's words appear in the dialogue follows a negation right before them ("can't keep MySQL"
titled "Keep MySQL"): such a title says the opposite of the chat.

The data is not in the repository (licence CC BY-NC-SA 4.0): fetch github.com/cylnlp/dialogsum and copy
``DialogSum_Data/dialogsum.{dev,test}.jsonl`` into ``bench/data/dialogsum/`` (git-ignored), then::

    python -m bench.summary --split dev             # the split the parameters were chosen on
    python -m bench.summary --split test --examples 3
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import ROOT
from ltm.llm.extractive import ExtractiveText, _clip_words, split_sentences
from ltm.llm.summary import Embed, Summary, Unit, split_units, summarize_units, title_phrase
from ltm.llm.textstats import WORD as _WORD
from ltm.llm.textstats import Phrase as _Phrase
from ltm.llm.textstats import candidate_phrases as _candidate_phrases
from ltm.llm.textstats import dense as _dense
from ltm.llm.textstats import sparse_dot as _dot
from ltm.llm.textstats import tfidf as _tfidf

# ---- the baseline: ltm 0.1.0's summary and title (at e6caf84), kept as they were so that the "before" figures
# come from the same run as the current ones: TF-IDF degree centrality over distinct sentences, the text returned
# verbatim when it fits max_words, and a title of several RAKE keyphrases.

_DENSE_LIMIT = 400  # distinct sentences up to which the full similarity matrix was used


def baseline_summary(text: str, max_words: int = 200) -> ExtractiveText:
    """The most central sentences of ``text``, in their original order, within ``max_words`` words."""
    max_words = max(1, int(max_words))
    if len(_WORD.findall(text)) <= max_words:
        return ExtractiveText(text.strip(), method="verbatim")
    sentences = split_sentences(text)
    distinct = list(dict.fromkeys(sentences))
    counts = Counter(sentences)
    rows, width = _tfidf(distinct)
    weights = [float(counts[s]) for s in distinct]
    if len(distinct) <= _DENSE_LIMIT and len(distinct) * width <= 4_000_000:
        dense = _dense(rows, width)
        scores = list((dense @ dense.T) @ np.array(weights)) if rows else []
        method = "tfidf-degree-centrality"
    else:  # linear in the text: similarity to the count-weighted centroid
        centroid: dict[int, float] = {}
        for row, weight in zip(rows, weights, strict=True):
            for col, value in row.items():
                centroid[col] = centroid.get(col, 0.0) + weight * value
        scores = [_dot(row, centroid) for row in rows]
        method = "tfidf-centroid"
    chosen: list[int] = []
    used = 0
    for index in sorted(range(len(distinct)), key=lambda i: -scores[i]):
        if used >= max_words:
            break
        # near-duplicate of one of the first chosen (most central) sentences: skip it; checking only the
        # first 32 keeps long selections linear (10k sentences: 30 s quadratic -> under a second)
        if any(_dot(rows[index], rows[c]) > 0.8 for c in chosen[:32]):
            continue
        chosen.append(index)
        used += len(_WORD.findall(distinct[index]))
    parts = [distinct[i] for i in sorted(chosen)]
    summary = _clip_words(" ".join(parts), max_words)
    return ExtractiveText(summary, method=method, sentences=len(chosen), of=len(sentences))


def baseline_title(text: str, max_words: int = 5) -> ExtractiveText:
    """Up to ``max_words`` words: the text's best keyphrases (RAKE-style), in reading order.

    Candidate phrases are runs of up to three content words between stopwords and punctuation; a word
    scores its co-occurrence degree over its frequency, a phrase the sum of its words times how often it
    recurs, so "snake game" beats two scattered frequent words.
    """
    words = _WORD.findall(text)
    if not words:
        return ExtractiveText("New", method="keyphrase")
    phrases = _candidate_phrases(text)
    if not phrases:
        return ExtractiveText(" ".join(words[:max_words]), method="keyphrase")
    freq: Counter[str] = Counter()
    degree: Counter[str] = Counter()
    for phrase in phrases:
        for key in phrase.keys:
            freq[key] += 1
            degree[key] += len(phrase.keys)
    counts = Counter(p.keys for p in phrases)
    first: dict[tuple[str, ...], _Phrase] = {}
    for phrase in phrases:
        first.setdefault(phrase.keys, phrase)
    ranked = sorted(
        first.values(), key=lambda p: (-counts[p.keys] * sum(degree[k] / freq[k] for k in p.keys), p.position)
    )
    chosen: list[_Phrase] = []
    used: set[str] = set()
    budget = max(1, int(max_words))
    for phrase in ranked:
        if set(phrase.keys) & used or len(phrase.keys) > budget:
            continue
        chosen.append(phrase)
        used.update(phrase.keys)
        budget -= len(phrase.keys)
        if budget == 0:
            break
    title = " ".join(p.surface for p in sorted(chosen, key=lambda p: p.position))
    return ExtractiveText(title[:1].upper() + title[1:], method="keyphrase")


DATA = ROOT / "bench" / "data" / "dialogsum"


def load(split: str, limit: int | None = None, data: Path = DATA) -> list[dict[str, Any]]:
    path = data / f"dialogsum.{split}.jsonl"
    if not path.is_file():
        sys.exit(f"{path} is missing: see the module docstring for how to fetch DialogSum")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[:limit] if limit else rows


def references(row: dict[str, Any], field: str) -> list[str]:
    return [row[k] for k in (f"{field}1", f"{field}2", f"{field}3", field) if row.get(k)]


def _take(units: Sequence[Unit], order: Sequence[int], budget: int) -> str:
    chosen, used = [], 0
    for i in order:
        if used >= budget:
            break
        chosen.append(i)
        used += len(units[i].text.split())
    return "\n".join(units[i].display for i in sorted(chosen))


def summaries(row: dict[str, Any], embed: Embed | None, rng: random.Random) -> dict[str, str]:
    units = split_units(row["dialogue"])
    ours: Summary = summarize_units(units, 200)
    order = list(range(len(units)))
    shuffled = order[:]
    rng.shuffle(shuffled)
    out = {
        "lead": _take(units, order, ours.budget),
        "random": _take(units, shuffled, ours.budget),
        "before": str(baseline_summary(row["dialogue"], ours.budget)),
        "tfidf": ours.text,
    }
    if embed is not None:
        out["embedding"] = summarize_units(units, 200, embed=embed).text
    return out


_NEGATION = re.compile(r"(?:\bnot|\bno|\bnever|n't|\bcannot|\bwithout)\s*$", re.IGNORECASE)


def negated(title: str, dialogue: str) -> bool:
    """True when the title's words occur in the dialogue, and only right after a negation."""
    text, wanted = dialogue.lower(), " ".join(title.lower().split())
    places = [m.start() for m in re.finditer(re.escape(wanted), text)] if wanted else []
    return bool(places) and all(_NEGATION.search(text[max(0, at - 40) : at]) for at in places)


def cut_numbers(dialogue: str) -> tuple[int, int]:
    """(sentences, sentences that end inside a number written without a space: "5.7" split as "5." and "7")."""
    units = split_units(dialogue)
    cut = sum(
        1
        for a, b in zip(units, units[1:], strict=False)
        if a.speaker == b.speaker
        and re.search(r"\d\.$", a.text)
        and re.match(r"\d", b.text)
        and a.text[-6:] + b.text[:6] in dialogue
    )
    return len(units), cut


def titles(row: dict[str, Any]) -> dict[str, str]:
    words = [u.text for u in split_units(row["dialogue"])]
    return {
        "first words": " ".join(" ".join(words).split()[:3]),
        "before": str(baseline_title(row["dialogue"], 5)),
        "phrase": title_phrase(row["dialogue"], 5),
    }


def local_embed() -> Embed:
    from ltm.config import Settings
    from ltm.llm.embeddings import resolve_embedding

    model = resolve_embedding(Settings(embedding="local"))
    return lambda texts: model.get_text_embedding_batch(list(texts))


def evaluate(rows: list[dict[str, Any]], embed: Embed | None, seed: int) -> dict[str, Any]:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    rng = random.Random(seed)
    scores: dict[str, dict[str, list[float]]] = {}
    title_scores: dict[str, list[float]] = {}
    negations: dict[str, int] = {}
    sentences = cut = 0
    lengths: dict[str, list[int]] = {}
    seconds: dict[str, float] = {}
    for row in rows:
        t0 = time.perf_counter()
        made = summaries(row, embed, rng)
        seconds["all"] = seconds.get("all", 0.0) + time.perf_counter() - t0
        for method, text in made.items():
            per = scores.setdefault(method, {"rouge1": [], "rouge2": [], "rougeL": []})
            refs = references(row, "summary")
            for name in per:
                per[name].append(statistics.mean(scorer.score(ref, text)[name].fmeasure for ref in refs))
            lengths.setdefault(method, []).append(len(text.split()))
        for method, title in titles(row).items():
            topics = references(row, "topic")
            title_scores.setdefault(method, []).append(max(scorer.score(t, title)["rouge1"].fmeasure for t in topics))
            negations[method] = negations.get(method, 0) + negated(title, row["dialogue"])
        split, wrong = cut_numbers(row["dialogue"])
        sentences, cut = sentences + split, cut + wrong
    return {
        "n": len(rows),
        "summary": {
            m: {k: 100 * statistics.mean(v) for k, v in per.items()} | {"words": statistics.mean(lengths[m])}
            for m, per in scores.items()
        },
        "title": {m: 100 * statistics.mean(v) for m, v in title_scores.items()},
        "negated": negations,
        "sentences": sentences,
        "cut_numbers": cut,
    }


def table(result: dict[str, Any], split: str) -> str:
    lines = [
        f"DialogSum {split} ({result['n']} dialogues), ROUGE F1 x 100, mean over 3 references",
        "",
        "| summary | ROUGE-1 | ROUGE-2 | ROUGE-L | words |",
        "|---|---|---|---|---|",
    ]
    for method, s in result["summary"].items():
        lines.append(f"| {method} | {s['rouge1']:.1f} | {s['rouge2']:.1f} | {s['rougeL']:.1f} | {s['words']:.0f} |")
    lines += ["", "| title | ROUGE-1 vs best topic | negated |", "|---|---|---|"]
    lines += [f"| {m} | {v:.1f} | {result['negated'][m]} |" for m, v in result["title"].items()]
    lines += [
        "",
        f"{result['sentences']} sentences, {result['cut_numbers']} cut inside a number written without a space",
    ]
    return "\n".join(lines)


def examples(rows: list[dict[str, Any]], n: int, embed: Embed | None) -> str:
    out = []
    for row in rows[:n]:
        made = summaries(row, embed, random.Random(0))
        best = made.get("embedding", made["tfidf"])
        out.append(
            f"### {row['fname']}\n\n**reference:** {row['summary1']}\n\n**before:** {made['before']}\n"
            f"(title: {baseline_title(row['dialogue'], 5)})\n\n**after:** {best}\n"
            f"(title: {title_phrase(row['dialogue'], 5)}; reference topic: {row['topic1']})\n"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--split", default="dev", choices=["dev", "test"])
    p.add_argument("--limit", type=int, default=None, help="first N dialogues only")
    p.add_argument("--no-embedding", action="store_true", help="skip the local-model variant")
    p.add_argument("--examples", type=int, default=0, help="print N before/after examples")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", type=Path, default=DATA)
    args = p.parse_args(argv)
    rows = load(args.split, args.limit, args.data)
    embed: Callable[[Sequence[str]], Any] | None = None if args.no_embedding else local_embed()
    result = evaluate(rows, embed, args.seed)
    print(table(result, args.split))
    if args.examples:
        print()
        print(examples(rows, args.examples, embed))
    return result


if __name__ == "__main__":
    main()
