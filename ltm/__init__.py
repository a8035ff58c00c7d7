"""ltm: long-term memory for LLM agents, a drop-in for MetaGPT's memory API.

Importing ``ltm`` is cheap: the public names load their modules (FAISS, SQLite, models) on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "BackendUnavailable": "ltm.errors",
    "BrainMemory": "ltm.brain",
    "ConfigError": "ltm.errors",
    "ExperienceMemory": "ltm.experience.memory",
    "ForgetReceipt": "ltm.store",
    "InvalidInput": "ltm.errors",
    "KVStore": "ltm.kv",
    "LLM": "ltm.llm",
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
    "UserForgetReceipt": "ltm.forget",
    "UserRequirement": "ltm.message",
    "ValidationFailed": "ltm.errors",
    "WriteBehindFailed": "ltm.errors",
    "any_to_str": "ltm.message",
    "forget_user": "ltm.forget",
    "any_to_str_set": "ltm.message",
    "register_instruct_content": "ltm.message",
    "with_context": "ltm.message",
}

# listed once: __all__ is the keys above; tests/test_public_api.py checks the TYPE_CHECKING block below matches
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # "import X as X": an explicit re-export for mypy and ruff (__all__ is computed)
    from ltm.brain import BrainMemory as BrainMemory
    from ltm.config import Settings as Settings
    from ltm.errors import BackendUnavailable as BackendUnavailable
    from ltm.errors import ConfigError as ConfigError
    from ltm.errors import InvalidInput as InvalidInput
    from ltm.errors import LLMError as LLMError
    from ltm.errors import LTMError as LTMError
    from ltm.errors import NotFound as NotFound
    from ltm.errors import StoreCorrupted as StoreCorrupted
    from ltm.errors import StoreMismatch as StoreMismatch
    from ltm.errors import ValidationFailed as ValidationFailed
    from ltm.errors import WriteBehindFailed as WriteBehindFailed
    from ltm.experience.memory import ExperienceMemory as ExperienceMemory
    from ltm.experience.records import Lesson as Lesson
    from ltm.experience.records import Policy as Policy
    from ltm.files.fs import MemoryFS as MemoryFS
    from ltm.forget import UserForgetReceipt as UserForgetReceipt
    from ltm.forget import forget_user as forget_user
    from ltm.kv import KVStore as KVStore
    from ltm.llm import LLM as LLM
    from ltm.longterm import LongTermMemory as LongTermMemory
    from ltm.memory import Memory as Memory
    from ltm.message import Message as Message
    from ltm.message import UserRequirement as UserRequirement
    from ltm.message import any_to_str as any_to_str
    from ltm.message import any_to_str_set as any_to_str_set
    from ltm.message import register_instruct_content as register_instruct_content
    from ltm.message import with_context as with_context
    from ltm.steps import MemoryItem as MemoryItem
    from ltm.steps import StepMemory as StepMemory
    from ltm.store import ForgetReceipt as ForgetReceipt
    from ltm.store import MemoryHit as MemoryHit
    from ltm.store import MemoryStorage as MemoryStorage


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ltm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
