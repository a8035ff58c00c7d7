"""Facts that change over time: does the default search answer with the current version, ``as_of`` with the
version valid then, and ``known_at`` with what the memory held then?

The scenarios follow the public descriptions of the "knowledge update" and "temporal reasoning" questions of
LongMemEval (Wu et al., 2024: a user's facts are revised across sessions; the answer is the latest value, or the
value at a named time) and of the dependent updates in MEME: people who move city, change jobs or managers,
decisions that are reversed, dates that are postponed. Each subject has two to four successive versions, stored
by :meth:`MemoryStorage.supersede` with their ``valid_from``, beside facts about the same people that never
change (distractors that share the names). Three kinds of question:

- **now**: the subject's question with the default search: the current version must rank first of the
  subject's versions (found in the top 5, no other version above it);
- **as of**: the same question ``as_of`` a date inside each version's validity: that version must;
- **known at**: the same question ``known_at`` the record time right after each version was written: that
  version must (what an agent's search returned then).

Beside that, how often the expected version is the very first hit (the distractors share the subject's names,
so that also measures retrieval), and how often a wrong version of the subject is in the top 5.

The same questions go to a namespace holding every version as a plain message (no validity, what a store that
only appends does) to show what validity changes: there the stale versions compete with the current one.

python -m bench.time_scenarios                      # both engines (a private pgserver), the local model
python -m bench.time_scenarios --engines embedded --embedding hash
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ltm import MemoryStorage, Message, Settings

__all__ = ["DISTRACTORS", "SUBJECTS", "Subject", "load", "run_questions"]


@dataclass(frozen=True)
class Subject:
    """One changing fact: its question and its versions ``(valid from, ISO date; text)``, oldest first."""

    name: str
    question: str
    versions: tuple[tuple[str, str], ...]


SUBJECTS: tuple[Subject, ...] = (
    Subject(
        "alice-city",
        "Which city does Alice live in?",
        (
            ("2019-03-01", "Alice lives in Paris, in a small flat near the Canal Saint-Martin."),
            ("2021-06-15", "Alice moved to Berlin; she lives in Kreuzberg now."),
            ("2023-09-01", "Alice relocated to Lisbon and lives there with her partner."),
        ),
    ),
    Subject(
        "bob-job",
        "What is Bob's job?",
        (
            ("2018-01-08", "Bob works as a junior developer at Acme."),
            ("2020-04-01", "Bob was promoted: he is now a team lead at Acme."),
            ("2022-11-14", "Bob left Acme and works as an engineering manager at Globex."),
        ),
    ),
    Subject(
        "orders-db",
        "Which database does the orders service use?",
        (
            ("2021-02-03", "Decision: the orders service will store its data in MongoDB."),
            ("2021-08-20", "Decision reversed: the orders service moves from MongoDB to PostgreSQL."),
        ),
    ),
    Subject(
        "launch-date",
        "When is the product launch?",
        (
            ("2024-01-10", "The product launch is planned for May 10."),
            ("2024-04-02", "The product launch was postponed to June 2."),
            ("2024-05-20", "The product launch moved again, to June 20."),
        ),
    ),
    Subject(
        "dana-manager",
        "Who is Dana's manager?",
        (
            ("2020-09-01", "Dana reports to Erik."),
            ("2022-03-01", "After the reorganisation Dana reports to Fatima."),
        ),
    ),
    Subject(
        "carol-phone",
        "What is Carol's phone number?",
        (
            ("2019-05-05", "Carol's phone number is 555-0101."),
            ("2023-02-17", "Carol changed her phone number to 555-0199."),
        ),
    ),
    Subject(
        "erik-diet",
        "What does Erik eat, is he vegetarian?",
        (
            ("2017-06-01", "Erik is vegetarian."),
            ("2022-01-01", "Erik became vegan this year: no dairy, no eggs."),
        ),
    ),
    Subject(
        "office",
        "Where is the company office?",
        (
            ("2016-02-01", "The company office is at 12 Harbor Street."),
            ("2021-10-01", "The company office moved to 40 Mill Road."),
        ),
    ),
    Subject(
        "grace-language",
        "Which programming language does Grace prefer?",
        (
            ("2018-07-01", "Grace's favourite programming language is Python."),
            ("2021-12-01", "Grace switched her favourite language to Rust."),
            ("2024-03-01", "Grace now prefers Zig over Rust for systems work."),
        ),
    ),
    Subject(
        "marketing-budget",
        "How large is the Q3 marketing budget?",
        (
            ("2023-05-02", "The Q3 marketing budget was approved at 50,000 dollars."),
            ("2023-06-12", "The Q3 marketing budget was cut to 35,000 dollars."),
        ),
    ),
)

DISTRACTORS: tuple[str, ...] = (
    "Alice enjoys hiking on weekends.",
    "Alice's sister is called Maria.",
    "Bob plays the guitar in a band.",
    "Bob's birthday is in April.",
    "The orders service handles about 2,000 orders a day.",
    "The payments service uses Redis for its queues.",
    "The product has a free tier and a paid plan.",
    "Dana is learning Spanish.",
    "Carol has two cats.",
    "Erik runs a marathon every autumn.",
    "The office has a rooftop garden.",
    "Grace maintains an open source parser library.",
    "The sales budget for Q3 stayed the same.",
    "Fatima joined the company in 2019.",
    "Erik and Dana worked on the billing project together.",
)


def _at(day: str) -> float:
    return datetime.fromisoformat(day + "T00:00:00+00:00").timestamp()


def load(store: MemoryStorage, *, versioned: bool = True) -> dict[str, list[tuple[str, float, float]]]:
    """Store the scenarios; per subject, its versions' ``(id, valid_from, recorded by)``. ``versioned=False``:
    every version as a plain message (no validity), the control."""
    store.add_batch([Message(text, role="user") for text in DISTRACTORS])
    out: dict[str, list[tuple[str, float, float]]] = {}
    for subject in SUBJECTS:
        previous: str | None = None
        for day, text in subject.versions:
            message = Message(text, role="user", metadata={"valid_from": day + "T00:00:00+00:00"} if versioned else {})
            if versioned and previous is not None:
                store.supersede(previous, message, reason="the fact changed")
            else:
                store.add(message)
            time.sleep(0.002)  # record times strictly apart
            out.setdefault(subject.name, []).append((message.id, _at(day), time.time()))
            previous = message.id
            time.sleep(0.002)
    return out


def run_questions(
    store: MemoryStorage, versions: dict[str, list[tuple[str, float, float]]], mode: str = "hybrid"
) -> dict[str, dict[str, int]]:
    """{question kind: {"right": the expected version is in the top 5 with no other version of the subject
    above it, "top1": it is the first hit, "asked": n, "stale": a wrong version of the subject in the top 5}}."""
    tally = {kind: {"right": 0, "top1": 0, "asked": 0, "stale": 0} for kind in ("now", "as_of", "known_at")}
    for subject in SUBJECTS:
        chain = versions[subject.name]
        ids = {mid for mid, _, _ in chain}
        asks: list[tuple[str, str, dict[str, Any]]] = [("now", chain[-1][0], {})]
        for i, (mid, start, recorded) in enumerate(chain):
            end = chain[i + 1][1] if i + 1 < len(chain) else start + 400 * 86400.0
            asks.append(("as_of", mid, {"as_of": (start + end) / 2}))
            asks.append(("known_at", mid, {"known_at": recorded}))
        for kind, expected, when in asks:
            hits = [h.message.id for h in store.search(subject.question, 5, mode=mode, **when)]  # type: ignore[arg-type]
            tally[kind]["asked"] += 1
            tally[kind]["right"] += int(_first_of(hits, ids) == expected)
            tally[kind]["top1"] += int(bool(hits) and hits[0] == expected)
            tally[kind]["stale"] += int(any(h in ids and h != expected for h in hits))
    return tally


def _first_of(hits: list[str], ids: set[str]) -> str | None:
    """The first of ``hits`` that is one of the subject's versions."""
    return next((h for h in hits if h in ids), None)


def control(store: MemoryStorage, versions: dict[str, list[tuple[str, float, float]]], mode: str) -> dict[str, int]:
    """The "now" questions on a store without validity: how often the current version ranks first of the
    subject's versions, and how often a stale one is in the top 5."""
    right = stale = 0
    for subject in SUBJECTS:
        chain = [mid for mid, _, _ in versions[subject.name]]
        hits = [h.message.id for h in store.search(subject.question, 5, mode=mode)]  # type: ignore[arg-type]
        right += int(_first_of(hits, set(chain)) == chain[-1])
        stale += int(any(h in chain[:-1] for h in hits))
    return {"right": right, "asked": len(SUBJECTS), "stale": stale}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.time_scenarios", description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", nargs="+", default=["embedded", "postgres"], choices=["embedded", "postgres"])
    parser.add_argument("--embedding", default="local", choices=["local", "hash"])
    parser.add_argument("--modes", nargs="+", default=["hybrid", "dense", "keyword"])
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="ltm-time-"))
    server: Any = None
    try:
        print(
            "| engine | mode | now: current version first | as of: right version first | known at: right version "
            "first | first hit overall (now / as of / known at) | stale version in top 5 (now / as of / known at) "
            "| without validity: current first, stale in top 5 |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for engine in args.engines:
            url = None
            if engine == "postgres":
                from pgserver.postgres_server import get_server

                server = get_server(tmp / "pg", cleanup_mode="delete")
                url = str(server.get_uri())
            settings = Settings(storage_dir=tmp / engine, embedding=args.embedding, store_url=url)
            store = MemoryStorage("scenarios", settings=settings)
            plain = MemoryStorage("scenarios-plain", settings=settings)
            versions, plain_versions = load(store), load(plain, versioned=False)
            for mode in args.modes:
                t = run_questions(store, versions, mode)
                c = control(plain, plain_versions, mode)
                cells = [f"{t[k]['right']}/{t[k]['asked']}" for k in ("now", "as_of", "known_at")]
                top1 = " / ".join(str(t[k]["top1"]) for k in ("now", "as_of", "known_at"))
                stale = " / ".join(str(t[k]["stale"]) for k in ("now", "as_of", "known_at"))
                plain_cell = f"{c['right']}/{c['asked']}, {c['stale']}"
                print(f"| {engine} | {mode} | {' | '.join(cells)} | {top1} | {stale} | {plain_cell} |")
            store.close()
            plain.close()
    finally:
        if server is not None:
            from ltm.store.pg.pool import close_pools

            close_pools()
            server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
