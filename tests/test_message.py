from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, create_model

from ltm import InvalidInput, Message, UserRequirement, any_to_str, any_to_str_set
from ltm.message import MESSAGE_ROUTE_TO_ALL, USER_REQUIREMENT, register_instruct_content


class WriteDesign:
    pass


class Payload(BaseModel):
    field1: str
    field2: list[str]


def test_defaults_and_positional_content() -> None:
    m = Message("hi")
    assert m.content == "hi"
    assert len(m.id) == 32 and int(m.id, 16) >= 0
    assert m.role == "user"
    assert m.cause_by == USER_REQUIREMENT == any_to_str(UserRequirement)
    assert m.send_to == {MESSAGE_ROUTE_TO_ALL}
    assert str(m) == "user: hi"
    assert m.created_at > 0
    assert Message(content="x", id="").id  # a falsy id is replaced


def test_any_to_str_meanings() -> None:
    assert any_to_str("a.B") == "a.B"
    assert any_to_str(WriteDesign) == f"{__name__}.WriteDesign"
    assert any_to_str(WriteDesign()) == f"{__name__}.WriteDesign"
    assert any_to_str_set([WriteDesign, "x"]) == {f"{__name__}.WriteDesign", "x"}
    assert any_to_str_set({"k": WriteDesign}) == {f"{__name__}.WriteDesign"}
    assert any_to_str_set("solo") == {"solo"}


def test_routing_fields_convert_on_init_and_assignment() -> None:
    m = Message("x", cause_by=WriteDesign, sent_from=WriteDesign(), send_to=[WriteDesign, "bob"])
    assert m.cause_by == f"{__name__}.WriteDesign"
    assert m.sent_from == f"{__name__}.WriteDesign"
    assert m.send_to == {f"{__name__}.WriteDesign", "bob"}
    # the assignments mypy rejects are the point: pydantic validates them into the declared types
    m.cause_by = UserRequirement  # type: ignore[assignment]
    m.send_to = "alice"  # type: ignore[assignment]
    assert m.cause_by == USER_REQUIREMENT and m.send_to == {"alice"}


def test_dump_load_round_trip_with_model_payload() -> None:
    register_instruct_content(Payload)  # loading resolves only registered classes (it never imports)
    ic = Payload(field1="field1 value", field2=["field2 value1", "field2 value2"])
    m = Message("design", instruct_content=ic, cause_by=WriteDesign, metadata={"n": 1})
    back = Message.load(m.dump())
    assert back == m
    assert isinstance(back.instruct_content, Payload)
    assert back.instruct_content.field2 == ["field2 value1", "field2 value2"]


def test_dynamic_model_payload_is_rebuilt_without_its_class() -> None:
    dyn = create_model("PRD", field1=(str, ...), field2=(list[str], ...))
    m = Message("prd", instruct_content=dyn(field1="a", field2=["b", "c"]))
    data = json.loads(m.dump())
    assert data["instruct_content"]["class"] == "PRD"
    back = Message.load(json.dumps(data))
    assert isinstance(back.instruct_content, BaseModel)
    assert back.instruct_content.model_dump() == {"field1": "a", "field2": ["b", "c"]}


def test_dict_payload_survives() -> None:
    m = Message("x", instruct_content={"a": [1, 2], "b": {"c": None}})
    assert Message.load(m.dump()).instruct_content == {"a": [1, 2], "b": {"c": None}}


def test_load_rejects_garbage() -> None:
    with pytest.raises(InvalidInput):
        Message.load("{not json")
