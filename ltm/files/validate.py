"""Validators for memory files: what an agent wrote is checked before anything is stored.

An agent that writes its own memory forgets the shapes now and then (a skill without front matter, a
``tools.json`` with a typo). Each check returns *problems* phrased as instructions, and :func:`validate`
raises :class:`~ltm.errors.ValidationFailed` with all of them, so the message can be handed straight back to
the agent to fix and retry. Shapes:

- ``AGENTS.md`` (at any depth): non-empty Markdown text under a size cap, code fences closed.
- ``skills/<name>/SKILL.md``: YAML front matter with ``name`` (equal to ``<name>``: lowercase letters, digits
  and single hyphens, at most 64 characters) and ``description`` (at most 1024 characters), then instructions.
- ``tools.json``: ``{"servers": {"<server>": {"url" | "command": ..., "tools": ["<tool>", ...]}}}``: the MCP
  servers the agent may reach and, for each, the subset of its tools the agent may use.
- any other ``*.json`` / ``*.yaml`` file must parse; every file must be text without NUL bytes, under the cap.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonschema
import yaml

from ltm.errors import ValidationFailed
from ltm.files.markdown import opens_front_matter, split_front_matter

if TYPE_CHECKING:
    from ltm.files.records import FileOp

__all__ = ["TOOLS_SCHEMA", "Limits", "explain", "problems", "validate"]

SKILL_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")

TOOLS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "tools.json: the MCP servers an agent may use, each with the subset of its tools",
    "type": "object",
    "required": ["servers"],
    "additionalProperties": False,
    "properties": {
        "servers": {
            "type": "object",
            "propertyNames": {"pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"},
            "additionalProperties": {
                "type": "object",
                "required": ["tools"],
                "additionalProperties": False,
                "oneOf": [{"required": ["url"]}, {"required": ["command"]}],
                "properties": {
                    "url": {"type": "string", "pattern": "^(https?|wss?)://[^\\s]+$"},
                    "command": {"type": "string", "minLength": 1},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "transport": {"enum": ["stdio", "http", "streamable-http", "sse"]},
                    "description": {"type": "string"},
                    "tools": {
                        "type": "array",
                        "minItems": 1,
                        "uniqueItems": True,
                        "items": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,128}$"},
                    },
                },
            },
        }
    },
}

TOOLS_EXAMPLE = (
    '{"servers": {"linkedin": {"url": "https://mcp.example.com/linkedin", "transport": "http",'
    ' "tools": ["search_people", "get_profile"]}}}'
)
SKILL_EXAMPLE = "---\\nname: <folder name>\\ndescription: <when to use this skill>\\n---\\n<instructions>"


@dataclass(frozen=True)
class Limits:
    """Size caps in UTF-8 bytes: every file, and ``AGENTS.md`` (kept short so detail goes into skills)."""

    max_file_bytes: int = 256_000
    agents_md_max_bytes: int = 16_000


def validate(path: str, text: str, limits: Limits | None = None) -> None:
    """Raise ValidationFailed listing every problem of ``text`` as the content of ``path`` (a normalised path)."""
    found = problems(path, text, limits or Limits())
    if found:
        raise ValidationFailed(explain(path, found))


def explain(path: str, found: list[str]) -> str:
    """The message an agent gets back: which file, that nothing was stored, and each fix on its own line."""
    lines = "\n".join(f"- {p}" for p in found)
    return f"{path} was not saved ({len(found)} problem{'s' * (len(found) != 1)} to fix, then write it again):\n{lines}"


def problems(path: str, text: str, limits: Limits) -> list[str]:
    """Every problem with ``text`` as the content of ``path``; empty when it may be stored."""
    if not isinstance(text, str):
        return [f"content must be text (str), got {type(text).__name__}"]
    found: list[str] = []
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return [f"the text has an unpaired surrogate at position {exc.start}; pass valid Unicode text"]
    size = len(text.encode("utf-8"))
    if size > limits.max_file_bytes:
        found.append(f"the file is {size} bytes; the cap is {limits.max_file_bytes}: split it into several files")
    if "\x00" in text:
        found.append("the text contains NUL characters; memory files must be plain text")
    name = path.rsplit("/", 1)[-1]
    parts = path.split("/")
    if name == "AGENTS.md":
        found += _agents_md(text, size, limits)
    elif parts[0] == "skills":
        found += _skill_path(parts) or (_skill_md(text, parts[1]) if name == "SKILL.md" else [])
    elif path == "tools.json":
        found += _tools_json(text)
    elif name.endswith(".json"):
        broken = _parse_json(text)[1]
        found += [f"the file is not valid JSON ({broken})"] if broken else []
    elif name.endswith((".yaml", ".yml")):
        found += _parses_yaml(text)
    return found


def _agents_md(text: str, size: int, limits: Limits) -> list[str]:
    found: list[str] = []
    if not text.strip():
        found.append("AGENTS.md is empty; write the agent's core instructions in Markdown")
    if size > limits.agents_md_max_bytes:
        found.append(
            f"AGENTS.md is {size} bytes; the cap is {limits.agents_md_max_bytes}: move task-specific detail into"
            " skills/<name>/SKILL.md and generalise repeated cases into rules"
        )
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")) and _parse_json(stripped)[1] is None:
        found.append("AGENTS.md holds JSON; it must be Markdown prose (headings, bullet lists)")
    found += _fences(text, "AGENTS.md")
    return found


def _fences(text: str, what: str) -> list[str]:
    open_at: int | None = None
    marker = ""
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line)
        if not match:
            continue
        if open_at is None:
            open_at, marker = number, match.group(1)
        elif match.group(1) == marker:
            open_at = None
    if open_at is not None:
        return [f"{what} has a code fence opened at line {open_at} that is never closed; add a closing {marker}"]
    return []


def _skill_path(parts: list[str]) -> list[str]:
    if len(parts) < 3:
        return [
            "files under skills/ belong in a folder per skill: write skills/<name>/SKILL.md"
            " (and any helper files next to it)"
        ]
    if not SKILL_NAME.fullmatch(parts[1]) or len(parts[1]) > 64:
        return [
            f"skill folder {parts[1]!r} is not a valid skill name: use lowercase letters, digits and single"
            " hyphens, at most 64 characters (e.g. 'pdf-forms')"
        ]
    return []


def _skill_md(text: str, folder: str) -> list[str]:
    raw, body = split_front_matter(text)
    if raw is None and not opens_front_matter(text):
        return [f"SKILL.md must start with YAML front matter between '---' lines, like: {SKILL_EXAMPLE}"]
    if raw is None:
        return ["the front matter is never closed: add a line '---' after the description"]
    try:
        meta = yaml.safe_load(raw)
    except (yaml.YAMLError, RecursionError) as exc:
        return [f"the front matter is not valid YAML ({_first_line(exc)}); quote values that contain ':' or '#'"]
    if not isinstance(meta, dict):
        return [f"the front matter must be a YAML mapping with name and description, like: {SKILL_EXAMPLE}"]
    found: list[str] = []
    name = meta.get("name")
    if name is None:
        found.append(f"the front matter has no 'name'; add 'name: {folder}'")
    elif name != folder:
        found.append(f"'name' is {name!r} but the folder is {folder!r}; set 'name: {folder}' or rename the folder")
    description = meta.get("description")
    if description is None:
        found.append("the front matter has no 'description'; add one sentence saying what the skill does and when")
    elif not isinstance(description, str) or not description.strip():
        found.append("'description' must be a non-empty string saying what the skill does and when to use it")
    elif len(description) > 1024:
        found.append(f"'description' has {len(description)} characters; keep it within 1024")
    if "metadata" in meta and not isinstance(meta["metadata"], dict):
        found.append("'metadata' must be a mapping of keys to values")
    if "allowed-tools" in meta and not isinstance(meta["allowed-tools"], str | list):
        found.append("'allowed-tools' must be a space-separated string or a list of tool names")
    if not body.strip():
        found.append("the skill has no instructions: write them in Markdown below the closing '---'")
    found += _fences(body, "SKILL.md")
    return found


def _tools_json(text: str) -> list[str]:
    data, broken = _parse_json(text)
    if broken:
        return [f"tools.json is not valid JSON ({broken}); expected shape: {TOOLS_EXAMPLE}"]
    validator = jsonschema.Draft202012Validator(TOOLS_SCHEMA)
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    found = [_schema_problem(e) for e in errors]
    if found:
        found.append(f"expected shape: {TOOLS_EXAMPLE}")
    return found


def _schema_problem(error: jsonschema.ValidationError) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "the top level"
    keyword = "propertyNames" if "propertyNames" in error.schema_path else error.validator
    if keyword == "required":
        return f"at {where}: {error.message}"
    if keyword == "oneOf":
        return f"at {where}: give exactly one of 'url' (a remote MCP server) or 'command' (a local one)"
    if keyword == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {})) if isinstance(error.schema, dict) else []
        return f"at {where}: {error.message}; allowed keys: {allowed}"
    if keyword == "minItems" and error.absolute_path and error.absolute_path[-1] == "tools":
        return f"at {where}: list at least one tool the agent may use (remove the server if it may use none)"
    if keyword == "uniqueItems":
        return f"at {where}: a tool is listed twice; list each tool once"
    if keyword == "pattern":
        return f"at {where}: {error.instance!r} does not match {error.validator_value!r}"
    if keyword == "propertyNames":
        return (
            f"at {where}: server name {error.instance!r} is invalid: use letters, digits, '_', '.', '-'"
            " (at most 64 characters)"
        )
    return f"at {where}: {error.message}"


def _parse_json(text: str) -> tuple[Any, str | None]:
    """The parsed value and None, or None and what is wrong with the text (a validator reports, never raises)."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
    except (ValueError, RecursionError) as exc:  # a number of 4300+ digits; nesting deeper than the parser goes
        return None, _first_line(exc)


def _parses_yaml(text: str) -> list[str]:
    try:
        yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError) as exc:  # RecursionError: nesting deeper than the parser goes
        return [f"the file is not valid YAML ({_first_line(exc)})"]
    return []


def _first_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200]


def check_ops(ops: Iterable[FileOp], heads: Mapping[str, object], limits: Limits) -> None:
    """Validate the writes of a change against the live files ``heads``; ValidationFailed lists every problem."""
    from ltm.files.text import collisions

    messages = []
    for op in ops:
        found = problems(op.path, op.text, limits) if op.text is not None else []
        found += collisions(op.path, heads) if op.op == "write" and op.path not in heads else []
        if found:
            messages.append(explain(op.path, found))
    if messages:
        raise ValidationFailed("\n".join(messages))
