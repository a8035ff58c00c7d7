"""Fuzz the store's public API with hostile values; after every case the namespace still reopens, its rows
equal its vectors and a filtered search answers (the probe's method, kept in the project)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ltm import LTMError, MemoryStorage, Message, Settings
from tests.fuzz.strategies import CREATED_AT, DERANDOMIZE, EXAMPLES, JSONISH, METADATA, NUMBER, TEXT, healthy

FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=DERANDOMIZE
)


class Tracked:
    """A store plus the number of messages it must hold."""

    def __init__(self, root: Path) -> None:
        self.store = MemoryStorage("fuzz", settings=Settings(storage_dir=root, embedding="hash"))
        self.store.add(Message("fuzz anchor", metadata={"anchor": True}))
        self.count = 1


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tracked]:
    tracked = Tracked(tmp_path_factory.mktemp("fuzz-store"))
    yield tracked
    tracked.store.close()


def _message(fields: dict[str, Any]) -> Message | None:
    try:
        return Message(**fields)
    except (ValidationError, LTMError):  # refused by the model itself: fine, nothing reached the store
        return None


MESSAGE_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "content": TEXT,
        "id": TEXT,
        "role": TEXT,
        "cause_by": TEXT,
        "sent_from": TEXT,
        "send_to": st.lists(TEXT, max_size=3),
        "metadata": METADATA,
        "created_at": CREATED_AT,
        "instruct_content": st.one_of(
            st.none(),
            st.dictionaries(TEXT, JSONISH, max_size=3),
            st.fixed_dictionaries({"class": TEXT, "module": TEXT, "value": JSONISH}),
        ),
    },
)


@FUZZ
@given(fields=MESSAGE_FIELDS, batch=st.booleans())
def test_add_any_message(tracked: Tracked, fields: dict[str, Any], batch: bool) -> None:
    message = _message(fields)
    if message is None:
        return
    try:
        added = tracked.store.add_batch([message]) if batch else int(tracked.store.add(message))
    except LTMError:
        added = 0
    tracked.count += added
    if added:
        assert tracked.store.get(message.id).content == message.content
    healthy(tracked.store, tracked.count)


FILTER_VALUE = st.one_of(
    JSONISH, st.dictionaries(st.sampled_from(["eq", "gte", "lt", "in", "bogus"]), JSONISH, max_size=2)
)
FILTERS = st.one_of(
    st.none(),
    JSONISH,
    st.dictionaries(
        st.sampled_from(
            [
                "role",
                "cause_by",
                "sent_from",
                "created_after",
                "created_before",
                "metadata",
                "AND",
                "OR",
                "NOT",
                "metadata.k",
                "nonsense",
            ]
        ),
        FILTER_VALUE,
        max_size=3,
    ),
)


@FUZZ
@given(
    query=TEXT,
    k=st.one_of(st.integers(-5, 2**64), NUMBER, st.none()),
    mode=st.sampled_from(["hybrid", "dense", "keyword", "bogus"]),
    filters=FILTERS,
)
def test_search_with_any_arguments(tracked: Tracked, query: Any, k: Any, mode: Any, filters: Any) -> None:
    try:
        hits = tracked.store.search(query, k=k, mode=mode, filters=filters)
        assert len(hits) <= k
    except LTMError:
        pass
    calls: tuple[Callable[[], object], ...] = (
        lambda: tracked.store.search_similar(query, k=k),
        lambda: tracked.store.recent(k),
    )
    for call in calls:
        with contextlib.suppress(LTMError):
            call()
    healthy(tracked.store, tracked.count)


@FUZZ
@given(key=st.one_of(TEXT, st.none(), NUMBER, st.binary(max_size=8)))
def test_get_and_delete_any_id(tracked: Tracked, key: Any) -> None:
    for call in (tracked.store.get, tracked.store.delete):
        try:
            result = call(key)
        except LTMError:
            continue
        if result is True:
            tracked.count -= 1
    healthy(tracked.store, tracked.count)
