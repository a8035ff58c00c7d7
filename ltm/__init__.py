"""ltm: long-term memory for LLM agents, a drop-in for MetaGPT's memory API.

Importing ``ltm`` is cheap: the public names load their modules (FAISS, SQLite, models) on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "BackendUnavailable": "ltm.errors",
    "BrainMemory": "ltm.brain",
    "ConfigError": "ltm.errors",
    "ExperienceMemory": "ltm.experience.memory",
    "InvalidInput": "ltm.errors",
    "LLMError": "ltm.errors",
    "LTMError": "ltm.errors",
    "Lesson": "ltm.experience.records",
    "LongTermMemory": "ltm.longterm",
    "Memory": "ltm.memory",
    "MemoryFS": "ltm.files.fs",
    "MemoryHit": "ltm.store",
    "MemoryItem": "ltm.steps",
    "MemoryStorage": "ltm.store",
    "Message": "ltm.message",
    "NotFound": "ltm.errors",
    "Policy": "ltm.experience.records",
    "Settings": "ltm.config",
    "StepMemory": "ltm.steps",
    "StoreCorrupted": "ltm.errors",
    "StoreMismatch": "ltm.errors",
    "UserRequirement": "ltm.message",
    "ValidationFailed": "ltm.errors",
    "any_to_str": "ltm.message",
    "any_to_str_set": "ltm.message",
}

__all__ = [
    "BackendUnavailable",
    "BrainMemory",
    "ConfigError",
    "ExperienceMemory",
    "InvalidInput",
    "LLMError",
    "LTMError",
    "Lesson",
    "LongTermMemory",
    "Memory",
    "MemoryFS",
    "MemoryHit",
    "MemoryItem",
    "MemoryStorage",
    "Message",
    "NotFound",
    "Policy",
    "Settings",
    "StepMemory",
    "StoreCorrupted",
    "StoreMismatch",
    "UserRequirement",
    "ValidationFailed",
    "any_to_str",
    "any_to_str_set",
]

if TYPE_CHECKING:
    from ltm.brain import BrainMemory
    from ltm.config import Settings
    from ltm.errors import (
        BackendUnavailable,
        ConfigError,
        InvalidInput,
        LLMError,
        LTMError,
        NotFound,
        StoreCorrupted,
        StoreMismatch,
        ValidationFailed,
    )
    from ltm.experience.memory import ExperienceMemory
    from ltm.experience.records import Lesson, Policy
    from ltm.files.fs import MemoryFS
    from ltm.longterm import LongTermMemory
    from ltm.memory import Memory
    from ltm.message import Message, UserRequirement, any_to_str, any_to_str_set
    from ltm.steps import MemoryItem, StepMemory
    from ltm.store import MemoryHit, MemoryStorage


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ltm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
