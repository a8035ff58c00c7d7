"""ltm inside llama-index, with real llama-index objects: VectorStoreIndex, retrievers, query engines
(MockLLM, offline), MetadataFilters, Memory with an ltm memory block; on both store engines."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.integrations.llama_index import LtmMemoryBlock, LtmVectorStore, to_filters
from ltm.llm.embeddings import HashEmbedding
from ltm.message import Message
from ltm.store import MemoryStorage
from tests.store.conftest import BACKENDS

_DOCS = [
    Document(
        text="The billing service retries failed card payments three times.",
        doc_id="billing",
        metadata={"team": "payments", "year": 2023, "tags": ["billing", "retries"], "score": 0.9},
    ),
    Document(
        text="The login page locks an account after five wrong passwords.",
        doc_id="login",
        metadata={"team": "identity", "year": 2024, "tags": ["security"], "score": 0.4},
    ),
    Document(
        text="Invoices are emailed as PDF on the first day of each month.",
        doc_id="invoices",
        metadata={"team": "payments", "year": 2024, "tags": ["billing", "email"], "score": 0.7},
    ),
    Document(
        text="The search index is rebuilt every night from the product catalog.",
        doc_id="search",
        metadata={"team": "Catalog Team", "year": 2022, "tags": [], "score": 0.2},
    ),
]


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """Each test on both engines: the embedded store and PostgreSQL (the private test server)."""
    base = Settings(storage_dir=tmp_path / "storage", embedding="hash")
    return base if request.param == "embedded" else base.with_(store_url=request.getfixturevalue("pg_url"))


def _storage(settings: Settings, embed: HashEmbedding) -> MemoryStorage:
    return MemoryStorage("docs", kind="index", settings=settings, embedding=embed)


@pytest.fixture
def embed() -> HashEmbedding:
    return HashEmbedding(dim=256)


@pytest.fixture
def built(settings: Settings, embed: HashEmbedding) -> tuple[VectorStoreIndex, LtmVectorStore]:
    store = LtmVectorStore(_storage(settings, embed))
    index = VectorStoreIndex.from_documents(
        _DOCS, storage_context=StorageContext.from_defaults(vector_store=store), embed_model=embed
    )
    return index, store


def _docs_of(nodes: list) -> list[str]:  # type: ignore[type-arg]
    return [n.node.ref_doc_id if hasattr(n, "node") else n.ref_doc_id for n in nodes]


def test_index_retriever_and_query_engine_survive_a_restart(
    built: tuple[VectorStoreIndex, LtmVectorStore], settings: Settings, embed: HashEmbedding
) -> None:
    index, store = built
    hits = index.as_retriever(similarity_top_k=1).retrieve("how many times are failed card payments retried")
    assert _docs_of(hits) == ["billing"]
    response = index.as_query_engine(llm=MockLLM(), similarity_top_k=2).query("when are invoices emailed")
    assert "Invoices are emailed as PDF" in str(response)  # MockLLM echoes its prompt, which holds the context
    assert "invoices" in _docs_of(response.source_nodes)
    store.client.close()

    reopened = LtmVectorStore(_storage(settings, embed))  # a new process would do exactly this
    again = VectorStoreIndex.from_vector_store(reopened, embed_model=embed)
    hits = again.as_retriever(similarity_top_k=1).retrieve("how many times are failed card payments retried")
    assert _docs_of(hits) == ["billing"]
    node = hits[0].node
    assert node.metadata["team"] == "payments" and node.metadata["tags"] == ["billing", "retries"]
    assert node.get_content() == _DOCS[0].text and node.ref_doc_id == "billing"
    assert reopened.client.count() == len(_DOCS)


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (MetadataFilters(filters=[MetadataFilter(key="team", value="payments")]), {"billing", "invoices"}),
        (
            MetadataFilters(filters=[MetadataFilter(key="team", value="payments", operator=FilterOperator.NE)]),
            {"login", "search"},
        ),
        (
            MetadataFilters(filters=[MetadataFilter(key="year", value=2023, operator=FilterOperator.GTE)]),
            {"billing", "login", "invoices"},
        ),
        (MetadataFilters(filters=[MetadataFilter(key="year", value=2023, operator=FilterOperator.LT)]), {"search"}),
        (MetadataFilters(filters=[MetadataFilter(key="score", value=0.7, operator=FilterOperator.GT)]), {"billing"}),
        (
            MetadataFilters(filters=[MetadataFilter(key="score", value=0.4, operator=FilterOperator.LTE)]),
            {"login", "search"},
        ),
        (
            MetadataFilters(
                filters=[MetadataFilter(key="team", value=["identity", "Catalog Team"], operator=FilterOperator.IN)]
            ),
            {"login", "search"},
        ),
        (
            MetadataFilters(filters=[MetadataFilter(key="year", value=[2023, 2024], operator=FilterOperator.NIN)]),
            {"search"},
        ),
        (
            MetadataFilters(filters=[MetadataFilter(key="tags", value="billing", operator=FilterOperator.CONTAINS)]),
            {"billing", "invoices"},
        ),
        (
            MetadataFilters(
                filters=[MetadataFilter(key="tags", value=["email", "security"], operator=FilterOperator.ANY)]
            ),
            {"login", "invoices"},
        ),
        (
            MetadataFilters(
                filters=[MetadataFilter(key="tags", value=["billing", "email"], operator=FilterOperator.ALL)]
            ),
            {"invoices"},
        ),
        (
            MetadataFilters(
                filters=[MetadataFilter(key="team", value="catalog", operator=FilterOperator.TEXT_MATCH_INSENSITIVE)]
            ),
            {"search"},
        ),
        (
            MetadataFilters(filters=[MetadataFilter(key="team", value="Catalog", operator=FilterOperator.TEXT_MATCH)]),
            {"search"},
        ),
        (
            MetadataFilters(
                filters=[
                    MetadataFilter(key="team", value="payments"),
                    MetadataFilters(
                        filters=[
                            MetadataFilter(key="year", value=2023),
                            MetadataFilter(key="score", value=0.5, operator=FilterOperator.LT),
                        ],
                        condition=FilterCondition.OR,
                    ),
                ]
            ),
            {"billing"},
        ),
        (
            MetadataFilters(
                filters=[MetadataFilter(key="team", value="identity"), MetadataFilter(key="year", value=2022)],
                condition=FilterCondition.OR,
            ),
            {"login", "search"},
        ),
        (
            MetadataFilters(filters=[MetadataFilter(key="team", value="payments")], condition=FilterCondition.NOT),
            {"login", "search"},
        ),
    ],
)
def test_metadata_filters_run_inside_the_store(
    built: tuple[VectorStoreIndex, LtmVectorStore], filters: MetadataFilters, expected: set[str]
) -> None:
    index, store = built
    hits = index.as_retriever(similarity_top_k=10, filters=filters).retrieve("payments invoices login search")
    assert set(_docs_of(hits)) == expected
    assert {n.ref_doc_id for n in store.get_nodes(filters=filters)} == expected


def test_query_modes(built: tuple[VectorStoreIndex, LtmVectorStore], embed: HashEmbedding) -> None:
    _, store = built
    text = VectorStoreQuery(query_str="passwords", similarity_top_k=2, mode=VectorStoreQueryMode.TEXT_SEARCH)
    result = store.query(text)
    assert [n.ref_doc_id for n in result.nodes or []] == ["login"]
    assert result.similarities and result.similarities[0] > 0
    vector = embed.get_query_embedding("product catalog index rebuilt nightly")
    hybrid = store.query(
        VectorStoreQuery(
            query_str="catalog", query_embedding=vector, similarity_top_k=1, mode=VectorStoreQueryMode.HYBRID
        )
    )
    assert [n.ref_doc_id for n in hybrid.nodes or []] == ["search"]
    dense = store.query(VectorStoreQuery(query_embedding=vector, similarity_top_k=4))
    assert dense.similarities == sorted(dense.similarities or [], reverse=True)
    assert all(-1.0 <= s <= 1.0 for s in dense.similarities or [])
    with pytest.raises(InvalidInput, match="not supported"):
        store.query(VectorStoreQuery(query_embedding=vector, mode=VectorStoreQueryMode.MMR))
    with pytest.raises(InvalidInput, match="query_str"):
        store.query(VectorStoreQuery(query_embedding=vector, mode=VectorStoreQueryMode.TEXT_SEARCH))
    only = store.query(VectorStoreQuery(query_embedding=vector, similarity_top_k=4, doc_ids=["login", "billing"]))
    assert {n.ref_doc_id for n in only.nodes or []} == {"login", "billing"}


def test_delete_get_and_clear(built: tuple[VectorStoreIndex, LtmVectorStore]) -> None:
    index, store = built
    nodes = store.get_nodes()
    assert len(nodes) == 4 and store.get_nodes(node_ids=[]) == []
    store.delete("login")
    assert {n.ref_doc_id for n in store.get_nodes()} == {"billing", "invoices", "search"}
    billing = next(n for n in nodes if n.ref_doc_id == "billing")
    store.delete_nodes(node_ids=[billing.node_id])
    store.delete_nodes(filters=MetadataFilters(filters=[MetadataFilter(key="year", value=2022)]))
    assert [n.ref_doc_id for n in store.get_nodes()] == ["invoices"]
    assert [n.ref_doc_id for n in store.get_nodes(node_ids=[billing.node_id, nodes[2].node_id])] == ["invoices"]
    with pytest.raises(InvalidInput, match="clear"):
        store.delete_nodes()
    index.insert(Document(text="A new document arrives after the deletes.", doc_id="late"))
    assert {n.ref_doc_id for n in store.get_nodes()} == {"invoices", "late"}
    store.clear()
    assert store.get_nodes() == [] and index.as_retriever().retrieve("invoices") == []


def test_readding_a_node_replaces_it(built: tuple[VectorStoreIndex, LtmVectorStore], embed: HashEmbedding) -> None:
    _, store = built
    node = next(n for n in store.get_nodes() if n.ref_doc_id == "search")
    node.set_content("The search index is rebuilt every hour now.")
    node.embedding = embed.get_text_embedding(node.get_content())
    assert store.add([node]) == [node.node_id]
    assert store.client.count() == 4
    assert store.get_nodes(node_ids=[node.node_id])[0].get_content() == "The search index is rebuilt every hour now."


def test_bad_filters_and_nodes_are_refused(built: tuple[VectorStoreIndex, LtmVectorStore]) -> None:
    _, store = built
    with pytest.raises(InvalidInput, match="not supported"):
        to_filters(MetadataFilters(filters=[MetadataFilter(key="tags", value=None, operator=FilterOperator.IS_EMPTY)]))
    with pytest.raises(InvalidInput, match="metadata filter"):
        store.get_nodes(filters=MetadataFilters(filters=[MetadataFilter(key="bad key", value="x")]))
    node = store.get_nodes()[0]
    node.embedding = None
    with pytest.raises(InvalidInput, match="no embedding"):
        store.add([node])
    assert store.client.count() == 4


def test_memory_block_puts_long_term_memories_into_the_agents_context(settings: Settings) -> None:
    storage = MemoryStorage("chat-user-7", kind="user", settings=settings)
    storage.add_batch(
        [
            Message("My cat is called Mochi and she is afraid of the vacuum cleaner.", role="user"),
            Message("I deploy the billing service every Tuesday morning.", role="user"),
            Message("My favourite editor is Helix.", role="user"),
        ]
    )
    block = LtmMemoryBlock(storage=storage, k=1, scope={"user_id": "u7"})
    memory = Memory.from_defaults(session_id="s2", token_limit=4000, memory_blocks=[block])
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)
    reply = engine.chat("What is the name of my cat?")
    assert "Mochi" in str(reply)  # MockLLM echoes the prompt: the memory block put the memory in it
    assert "Helix" not in str(reply)


def test_memory_block_stores_what_short_term_memory_flushes(settings: Settings) -> None:
    storage = MemoryStorage("chat-user-8", kind="user", settings=settings)
    block = LtmMemoryBlock(storage=storage, k=2, scope={"user_id": "u8", "run_id": "r1"})
    memory = Memory.from_defaults(
        session_id="s1", token_limit=60, token_flush_size=20, chat_history_token_ratio=0.5, memory_blocks=[block]
    )
    lines = [f"Fact number {i}: the deploy window for service {i} is at {i} pm." for i in range(8)]
    for line in lines:
        memory.put(ChatMessage(role="user", content=line))
    stored = storage.list({"user_id": "u8", "run_id": "r1"}, limit=100).messages
    assert stored and {m.content for m in stored} <= set(lines)
    assert all(m.metadata.get("session_id") == "s1" for m in stored)
    recalled = asyncio.run(block.aget([ChatMessage(role="user", content=stored[0].content)]))
    assert stored[0].content in recalled


def test_memory_block_checks_its_arguments(settings: Settings, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        LtmMemoryBlock(storage="not a store")
    with pytest.raises(InvalidInput, match="scope"):
        LtmMemoryBlock(storage=MemoryStorage("x", settings=settings), scope={"team": "a"})
