"""``namespace_model``: the embedding model a namespace records, read without opening it or loading a model, on
every engine (what the ``ltm`` command's reading commands open a namespace with)."""

from __future__ import annotations

from ltm import MemoryStorage, Message, Settings
from ltm.store import namespace_model


def test_the_recorded_model_of_a_namespace(settings: Settings) -> None:
    assert namespace_model(settings, "role", "Alice(Product Manager)") is None  # not there yet
    store = MemoryStorage("Alice(Product Manager)", kind="role", settings=settings)
    store.add(Message("a PRD for a snake game"))
    store.close()
    assert namespace_model(settings, "role", "Alice(Product Manager)") == "hash-384"
    assert namespace_model(settings, "user", "Alice(Product Manager)") is None  # another kind
