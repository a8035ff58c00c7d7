"""Loading a stored message never imports the module its JSON names."""

from __future__ import annotations

import json
import sys

import pytest
from pydantic import BaseModel

from ltm import MemoryStorage, Message, Settings
from ltm.message import register_instruct_content, registered_instruct_content

# A module that is importable but not imported yet: naming it in a message must not import it.
_BAIT = "this"


def _hostile(module: str = _BAIT, cls: str = "Anything") -> dict[str, object]:
    return {
        "content": "x",
        "instruct_content": {"class": cls, "module": module, "mapping": {"a": "integer"}, "value": {"a": 1}},
    }


def test_loading_a_body_that_names_a_module_does_not_import_it() -> None:
    sys.modules.pop(_BAIT, None)
    message = Message.load(json.dumps(_hostile()))
    assert _BAIT not in sys.modules
    # the data survives, as a data-only model rebuilt from the stored field types
    assert message.instruct_content is not None and message.instruct_content.a == 1


def test_loading_from_the_store_does_not_import(settings: Settings) -> None:
    store = MemoryStorage("ic", settings=settings)
    store.add(Message.load(json.dumps(_hostile(module="antigravity"))))
    sys.modules.pop("antigravity", None)
    (got,) = store.recent(1)
    assert "antigravity" not in sys.modules
    assert got.instruct_content.a == 1


class Registered(BaseModel):
    """A class the application registered: loading gives an instance of it."""

    steps: list[str]


def test_a_registered_class_is_resolved() -> None:
    register_instruct_content(Registered)
    assert registered_instruct_content()[f"{__name__}.Registered"] is Registered
    back = Message.load(Message("p", instruct_content=Registered(steps=["a"])).dump())
    assert isinstance(back.instruct_content, Registered) and back.instruct_content.steps == ["a"]


def test_unbuildable_field_names_stay_a_dict() -> None:
    body = _hostile()
    body["instruct_content"] = {
        "class": "X",
        "module": "os",
        "mapping": {"_private": "integer"},
        "value": {"_private": 1},
    }
    message = Message.load(json.dumps(body))
    assert message.instruct_content == body["instruct_content"]
    assert json.loads(message.dump())["instruct_content"] == body["instruct_content"]  # lossless round trip


def test_register_refuses_non_models() -> None:
    with pytest.raises(TypeError):
        register_instruct_content(int)  # type: ignore[arg-type]
