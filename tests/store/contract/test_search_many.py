"""One search across the namespaces of a team, merged by score, with the real local model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ltm import LTMError, Message, Settings
from ltm.errors import InvalidInput
from ltm.store import MemoryStorage, Mode, NamespaceHit, search_many
from ltm.store.search.fusion import PRIOR
from tests.support.embeddings import CountingEmbedding

TEAM = {
    "architect": [
        "The service is split into an API gateway, an order service and a billing service.",
        "We chose PostgreSQL for orders because we need transactions across line items.",
        "Events between services go through a Kafka topic per aggregate.",
        "The gateway terminates TLS and forwards requests over HTTP/2.",
    ],
    "engineer": [
        "Fixed the null pointer in the checkout handler when the cart is empty.",
        "The unit tests for the payment retry loop now use a fake clock.",
        "Refactored the order repository to batch inserts of line items.",
        "Upgraded the HTTP client library to fix a connection leak.",
    ],
    "qa": [
        "The regression suite found that discount codes are applied twice at checkout.",
        "Load test: p99 latency of the order endpoint is 480 ms at 200 requests per second.",
        "Mobile Safari shows the payment button off screen on small phones.",
        "Test plan for the release covers refunds, partial shipments and coupons.",
    ],
    "pm": [
        "Customers asked for invoices in PDF with the company VAT number.",
        "The launch in Germany is planned for the second week of March.",
        "Priority for next sprint: subscription billing with monthly and yearly plans.",
        "Churn is highest among users who never set up a second project.",
    ],
}

QUESTIONS = [  # (question, the role whose memory answers it, a word of the answer)
    ("which database did we pick for orders and why", "architect", "PostgreSQL"),
    ("what bug did we fix when the shopping cart has nothing in it", "engineer", "null pointer"),
    ("are coupons being counted two times at checkout", "qa", "discount codes"),
    ("when do we go live in Germany", "pm", "Germany"),
    ("how slow is the order API under load", "qa", "p99"),
]


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, MemoryStorage]]:
    settings = Settings(storage_dir=tmp_path_factory.mktemp("team") / "storage", embedding="local")
    stores = {}
    for role, notes in TEAM.items():
        store = MemoryStorage(role, settings=settings)
        store.add_batch([Message(content=text, id=f"{role}-{i}") for i, text in enumerate(notes)])
        stores[role] = store
    yield stores
    for store in stores.values():
        store.close()


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_the_right_roles_memory_ranks_first_across_the_team(team: dict[str, MemoryStorage], mode: Mode) -> None:
    for question, role, answer in QUESTIONS:
        hits = search_many(list(team.values()), question, k=5, mode=mode)
        assert hits and all(isinstance(h, NamespaceHit) for h in hits)
        assert (hits[0].namespace, hits[0].kind) == (role, "role"), (
            question,
            [(h.namespace, h.message.content) for h in hits],
        )
        assert answer in hits[0].message.content
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert len({h.namespace for h in hits}) > 1  # merged across the team, not one namespace's list


def test_dense_scores_are_the_cosines_each_namespace_gives(team: dict[str, MemoryStorage]) -> None:
    question = "which database did we pick for orders and why"
    hits = search_many(list(team.values()), question, k=3, mode="dense")
    alone = team["architect"].search(question, k=1, mode="dense")[0]
    assert hits[0].message.id == alone.message.id and hits[0].score == pytest.approx(alone.score, abs=1e-6)


def test_names_open_the_namespaces_for_the_call(team: dict[str, MemoryStorage]) -> None:
    settings = team["pm"].settings
    hits = search_many(["pm", "qa", "pm"], "when do we go live in Germany", k=3, settings=settings, explain=True)
    assert hits[0].namespace == "pm" and "Germany" in hits[0].message.content
    assert hits[0].explain is not None and {"dense", "fusion"} <= set(hits[0].explain)
    assert len({h.message.id for h in hits}) == len(hits)  # "pm" named twice is searched once
    keyword = search_many(["pm", "qa"], "coupons", k=2, mode="keyword", settings=settings)
    assert keyword[0].namespace == "qa" and keyword[0].message.id == "qa-3"
    assert team["pm"].count() == 4  # the handle still works: the call's own handles only let go


def test_bad_input_is_refused_with_a_fix(team: dict[str, MemoryStorage], tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="list of namespaces"):
        search_many("pm", "x")
    with pytest.raises(InvalidInput, match="mode must be one of"):
        search_many(list(team.values()), "x", mode="fuzzy")  # type: ignore[arg-type]
    other = MemoryStorage("other", settings=Settings(storage_dir=tmp_path / "s", embedding="hash"))
    with pytest.raises(LTMError, match="one embedding model"):
        search_many([team["pm"], other], "x")
    other.close()
    assert search_many([], "x") == []


@pytest.mark.parametrize("mode", ["dense", "hybrid", "keyword"])
def test_search_many_on_each_backend(settings: Settings, mode: Mode) -> None:
    notes = {
        "ops": ["rotate the TLS certificates on the gateway", "the backup job runs nightly at two"],
        "sales": ["the renewal quote for the bank is due friday", "send the pricing deck to the retailer"],
    }
    stores = []
    for name, texts in notes.items():
        store = MemoryStorage(name, settings=settings)
        store.add_batch([Message(content=t, id=f"{name}-{i}") for i, t in enumerate(texts)])
        stores.append(store)
    hits = search_many(stores, "the renewal quote for the bank is due friday", k=3, mode=mode)
    assert (hits[0].namespace, hits[0].message.id) == ("sales", "sales-0")
    assert all(h.namespace in notes for h in hits)
    for store in stores:
        store.close()


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_the_query_is_embedded_once_for_all_namespaces(settings: Settings, mode: Mode) -> None:
    counting = CountingEmbedding()
    stores = [MemoryStorage(f"role-{i}", settings=settings, embedding=counting) for i in range(3)]
    for i, store in enumerate(stores):
        store.add_batch(
            [Message(content=f"note {j} of role {i} about the quarterly budget", id=f"{i}-{j}") for j in range(3)]
        )
    before = counting.texts_embedded
    hits = search_many(stores, "a question nobody asked before about budgets", k=4, mode=mode)
    assert hits and counting.texts_embedded - before == 1
    for store in stores:
        store.close()


def test_a_question_naming_a_speaker_favours_them_across_namespaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fusion over several namespaces adds the named speaker's share as one namespace's search does. (The
    prior, whose length term favours the longer turn, is off: this is about the speaker bonus alone.)"""
    monkeypatch.setattr("ltm.store.search.fusion.PRIOR", {name: 0.0 for name in PRIOR})
    settings = Settings(storage_dir=tmp_path / "storage", embedding="hash")
    filler = ["Good morning", "How was work", "The movie was long", "I walked the dog", "Traffic was bad"]
    with MemoryStorage("elise", settings=settings) as elise, MemoryStorage("kevin", settings=settings) as kevin:
        for store, who, said in (
            (elise, "elise", "Kevin loves sushi, sushi is his favourite"),
            (kevin, "Kevin", "Sushi with family"),
        ):
            store.add_batch([Message(content=text, role=who, sent_from=who) for text in [*filler, said]])
        hits = search_many([elise, kevin], "Where did Kevin eat sushi?", k=2)
        assert hits[0].message.content == "Sushi with family"
        assert search_many([elise, kevin], "Where did they eat sushi?", k=2)[0].namespace == "elise"
