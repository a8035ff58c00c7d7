"""Step memory: one ``MemoryItem`` per step of an agent run, with flexible fields.

The API of the step-memory design the project grew from (shared/seeds document 002), same names and
meanings. ``step`` is the field the step filters use. Fields are plain attributes kept in insertion order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ltm.errors import InvalidInput

__all__ = ["MemoryItem", "StepMemory"]

_RESERVED = frozenset({"_memory_attributes"})


class MemoryItem:
    """The memory of one step: any named fields, e.g. ``step``, ``observation``, ``action``, ``cost``."""

    def __init__(self, **fields: Any) -> None:
        self._memory_attributes: list[str] = []
        self.add_values_from_dict(fields)

    @property
    def attributes(self) -> list[str]:
        """The field names, in the order they were first set."""
        return list(self._memory_attributes)

    def set_value(self, key: str, value: Any) -> None:
        """Set one field (creating it when new)."""
        if not isinstance(key, str) or not key.isidentifier() or key in _RESERVED or hasattr(type(self), key):
            raise InvalidInput(f"{key!r} cannot be a MemoryItem field: use an identifier that is not a method name")
        setattr(self, key, value)
        if key not in self._memory_attributes:
            self._memory_attributes.append(key)

    def add_values_from_dict(self, values: Mapping[str, Any]) -> None:
        """Set every field of ``values``."""
        for key, value in values.items():
            self.set_value(key, value)

    def get_value(self, key: str) -> Any:
        """A field's value, or None when the item has no such field."""
        return getattr(self, key, None) if key in self._memory_attributes else None

    def get_values(self, keys: Iterable[str]) -> dict[str, Any]:
        """``{key: get_value(key)}`` for each key (None for missing fields)."""
        return {key: self.get_value(key) for key in keys}

    def filter(self, keys: Iterable[str] = ()) -> dict[str, Any]:
        """The fields among ``keys`` that this item has (missing keys are left out)."""
        wanted = set(keys)
        return {key: value for key, value in self.to_dict().items() if key in wanted}

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict, in insertion order."""
        return {key: getattr(self, key) for key in self._memory_attributes}

    def to_json(self) -> str:
        """The fields as a JSON object."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    def from_dict(self, data: Mapping[str, Any]) -> None:
        """Set the fields of ``data`` on this item (the seed API fills an existing item)."""
        self.add_values_from_dict(data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemoryItem) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"MemoryItem({', '.join(f'{k}={v!r}' for k, v in self.to_dict().items())})"


class StepMemory:
    """The list of step items of one agent run."""

    def __init__(self, items: Iterable[MemoryItem] = ()) -> None:
        self._content: list[MemoryItem] = list(items)

    @property
    def content(self) -> list[MemoryItem]:
        """The items, oldest first (a copy of the list)."""
        return list(self._content)

    @property
    def list_content(self) -> list[dict[str, Any]]:
        """The items as dicts."""
        return self.to_list_of_dicts()

    @property
    def length(self) -> int:
        """How many items are stored."""
        return len(self._content)

    def __len__(self) -> int:
        return len(self._content)

    def is_empty(self) -> bool:
        """True when no item is stored."""
        return not self._content

    def add_memory_item(self, memory_item: MemoryItem) -> None:
        """Append one item."""
        if not isinstance(memory_item, MemoryItem):
            raise InvalidInput(f"expected a MemoryItem, got {type(memory_item).__name__}")
        self._content.append(memory_item)

    def delete_memory_item(self, step: Any) -> None:
        """Remove every item whose ``step`` equals ``step``."""
        self._content = [item for item in self._content if item.get_value("step") != step]

    def filter_memory_from_steps(self, steps: Iterable[Any]) -> list[dict[str, Any]]:
        """The items (as dicts) whose ``step`` is among ``steps``."""
        wanted = set(steps)
        return [item.to_dict() for item in self._content if item.get_value("step") in wanted]

    def filter_memory_from_keys(self, keys: Iterable[str]) -> list[dict[str, Any]]:
        """Each item reduced to the fields among ``keys`` (an item's missing keys are left out)."""
        keys = list(keys)
        return [item.filter(keys) for item in self._content]

    def get_latest_item(self) -> MemoryItem | None:
        """The newest item, or None when empty."""
        return self._content[-1] if self._content else None

    def load(self, content: Iterable[MemoryItem]) -> None:
        """Replace the items with ``content``."""
        self._content = list(content)

    def clear(self) -> None:
        """Remove every item."""
        self._content = []

    def to_list_of_dicts(self) -> list[dict[str, Any]]:
        """The items as a list of dicts."""
        return [item.to_dict() for item in self._content]

    def from_list_of_dicts(self, data: Iterable[Mapping[str, Any]]) -> None:
        """Replace the items with ones built from ``data``."""
        self._content = [MemoryItem(**dict(item)) for item in data]

    def to_json(self) -> str:
        """The items as a JSON list."""
        return json.dumps(self.to_list_of_dicts(), ensure_ascii=False)
