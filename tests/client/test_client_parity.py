"""The library's own store tests, run against ``RemoteStorage`` talking to a real server on a loopback port.

The cases are the functions of tests/store/contract/test_store.py that use only MemoryStorage's public interface
(the others read the server's files or settings, which a remote client cannot see by design). The server runs
flat and, like the contract suite, HNSW (threshold 1).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from ltm.client import RemoteStorage
from ltm.config import Settings
from tests.store.contract import test_store as contract
from tests.support.service import ServiceThread

CASES: list[Callable[..., None]] = [
    contract.test_add_is_idempotent_and_counts,
    contract.test_get_and_not_found,
    contract.test_search_similar_honours_k_and_threshold,
    contract.test_delete_then_add_keeps_every_other_record_findable,
    contract.test_delete_then_readd_same_id_gets_a_new_seq,
    contract.test_search_modes_and_signals,
    contract.test_filters,
    contract.test_async_twins,
    contract.test_best_similarities,
]


@pytest.fixture(scope="module", params=["flat", "hnsw"])
def remote_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceThread]:
    settings = Settings(storage_dir=tmp_path_factory.mktemp("remote") / "storage", embedding="hash")
    if request.param == "hnsw":
        settings = settings.with_(hnsw_threshold=1)
    service = ServiceThread(settings, auth=True).start()
    yield service
    service.close()


@pytest.fixture
def remote_store(remote_server: ServiceThread) -> Iterator[RemoteStorage]:
    """A RemoteStorage on a fresh namespace, with a key scoped to the parity namespaces only."""
    key, _ = remote_server.state.keys.create(["parity/*"])
    store = RemoteStorage(f"parity/{uuid.uuid4().hex[:8]}", url=remote_server.url, api_key=key)
    yield store
    store.close()


@pytest.mark.parametrize("case", CASES, ids=[c.__name__.removeprefix("test_") for c in CASES])
def test_store_contract_over_http(case: Callable[..., None], remote_store: RemoteStorage) -> None:
    case(remote_store)
