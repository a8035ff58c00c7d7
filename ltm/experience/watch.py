"""The failure hook: wrap a tool function so that its failures become lessons, its results pass unchanged.

A call fails when it raises (the exception is recorded, then re-raised as is) or when it returns a mapping
with an ``"error"`` key (document 000's tools report failure that way; the result is returned unchanged).
Any other return is a success. The task a call belongs to comes from :meth:`ExperienceMemory.working_on`
(a context variable, so it follows threads and asyncio tasks that copy the context).
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar, cast

__all__ = ["Recorder", "current_task", "failure_of", "watch"]

F = TypeVar("F", bound=Callable[..., Any])

current_task: contextvars.ContextVar[str | None] = contextvars.ContextVar("ltm_experience_task", default=None)


class Recorder(Protocol):
    """What :func:`watch` records into: :class:`~ltm.experience.memory.ExperienceMemory` is one.

    A protocol rather than the class, so this module does not import the memory that imports it.
    """

    def record_success(
        self, tool: str | None = None, *, args: dict[str, Any] | None = None, task: str | None = None
    ) -> object: ...

    def record_failure(
        self,
        tool: str,
        error: str | BaseException,
        *,
        args: dict[str, Any] | None = None,
        task: str | None = None,
        tool_doc: str | None = None,
    ) -> object: ...


def failure_of(result: Any) -> str | None:
    """The error a tool result reports (a mapping with a non-empty ``"error"``), else None."""
    if isinstance(result, Mapping) and result.get("error"):
        return str(result["error"])
    return None


def _arguments(signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    if signature is not None:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            pass
        else:
            return dict(bound.arguments)
    return {**{f"arg{n}": v for n, v in enumerate(args)}, **kwargs}


def watch(memory: Recorder, fn: F, name: str | None = None) -> F:
    """``fn`` wrapped so each call's outcome is recorded in ``memory`` (sync or async ``fn``)."""
    tool = name or getattr(fn, "__name__", None) or type(fn).__name__
    doc = (inspect.getdoc(fn) or "").strip().split("\n", 1)[0]
    try:
        signature: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: record positional args by number
        signature = None

    def settle(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        error = failure_of(result)
        arguments = _arguments(signature, args, kwargs)
        if error is None:
            memory.record_success(tool, args=arguments, task=current_task.get())
        else:
            memory.record_failure(tool, error, args=arguments, task=current_task.get(), tool_doc=doc)

    def failed(exc: BaseException, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        memory.record_failure(
            tool, exc, args=_arguments(signature, args, kwargs), task=current_task.get(), tool_doc=doc
        )

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def awrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                result = await fn(*args, **kwargs)
            except Exception as exc:
                failed(exc, args, kwargs)
                raise
            settle(result, args, kwargs)
            return result

        return cast(F, awrapper)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            failed(exc, args, kwargs)
            raise
        settle(result, args, kwargs)
        return result

    return cast(F, wrapper)
