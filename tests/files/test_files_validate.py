from __future__ import annotations

import json

import pytest

from ltm.errors import InvalidInput, ValidationFailed
from ltm.files.validate import Limits, problems, validate

LIMITS = Limits(max_file_bytes=4000, agents_md_max_bytes=500)

SKILL = """---
name: meeting-notes
description: Summarise meeting transcripts into bullet points with action items.
---
# Meeting notes
- Use bullet points, not paragraphs.
"""

TOOLS = {
    "servers": {
        "linkedin": {"url": "https://mcp.example.com/linkedin", "transport": "http", "tools": ["search_people"]},
        "files": {"command": "mcp-files", "args": ["--root", "."], "tools": ["read_file", "list_dir"]},
    }
}


def _problems(path: str, text: str) -> list[str]:
    return problems(path, text, LIMITS)


# ---- AGENTS.md ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["AGENTS.md", "subagents/search/AGENTS.md"])
@pytest.mark.parametrize(
    "text",
    ["Summarise meeting notes.\n", "# Preferences\n- bullets\n\n```python\nprint(1)\n```\n", "x" * 500],
)
def test_agents_md_accepted(path: str, text: str) -> None:
    assert _problems(path, text) == []


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("  \n\t\n", "empty"),
        ("x" * 501, "cap is 500"),
        ('{"instructions": "be nice"}', "JSON"),
        ("# Rules\n```\ncode without end\n", "never closed"),
        ("a\x00b", "NUL"),
    ],
)
def test_agents_md_rejected(text: str, fragment: str) -> None:
    found = _problems("AGENTS.md", text)
    assert any(fragment in p for p in found), found


def test_agents_md_cap_points_to_skills() -> None:
    with pytest.raises(ValidationFailed, match=r"skills/<name>/SKILL.md"):
        validate("AGENTS.md", "x" * 501, LIMITS)


# ---- skills/<name>/SKILL.md ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        SKILL,
        SKILL.replace("description:", "license: MIT\nmetadata:\n  version: '1'\ndescription:"),
        SKILL.replace("description:", "allowed-tools: Read Grep\ndescription:"),
        SKILL.replace("description: Summarise", "description: >-\n  Summarise"),
    ],
)
def test_skill_accepted(text: str) -> None:
    assert _problems("skills/meeting-notes/SKILL.md", text) == []


def test_skill_helper_files_are_free_form() -> None:
    assert _problems("skills/meeting-notes/reference/terms.md", "anything") == []


@pytest.mark.parametrize(
    ("path", "text", "fragment"),
    [
        ("skills/meeting-notes/SKILL.md", "# no front matter\n", "must start with YAML front matter"),
        ("skills/meeting-notes/SKILL.md", "---\nname: meeting-notes\n", "never closed"),
        ("skills/meeting-notes/SKILL.md", "---\nname: [unclosed\n---\nbody\n", "not valid YAML"),
        ("skills/meeting-notes/SKILL.md", "---\n- a list\n---\nbody\n", "mapping"),
        ("skills/meeting-notes/SKILL.md", SKILL.replace("name: meeting-notes\n", ""), "add 'name: meeting-notes'"),
        (
            "skills/meeting-notes/SKILL.md",
            SKILL.replace("name: meeting-notes", "name: notes"),
            "set 'name: meeting-notes' or rename the folder",
        ),
        (
            "skills/meeting-notes/SKILL.md",
            SKILL.replace("description: Summarise meeting transcripts into bullet points with action items.\n", ""),
            "no 'description'",
        ),
        (
            "skills/meeting-notes/SKILL.md",
            SKILL.replace("description: Summarise", "description: ''\nx: Summarise"),
            "non-empty string",
        ),
        ("skills/meeting-notes/SKILL.md", SKILL.replace("Summarise", "S" * 1100), "within 1024"),
        ("skills/meeting-notes/SKILL.md", SKILL.split("# Meeting")[0], "no instructions"),
        ("skills/meeting-notes/SKILL.md", SKILL.replace("description:", "metadata: 3\ndescription:"), "'metadata'"),
        ("skills/Meeting_Notes/SKILL.md", SKILL, "not a valid skill name"),
        ("skills/a--b/SKILL.md", SKILL, "not a valid skill name"),
        ("skills/SKILL.md", SKILL, "folder per skill"),
        ("skills/notes.md", "text", "folder per skill"),
    ],
)
def test_skill_rejected(path: str, text: str, fragment: str) -> None:
    found = _problems(path, text)
    assert any(fragment in p for p in found), found


# ---- tools.json ---------------------------------------------------------------------------------------


def test_tools_json_accepted() -> None:
    assert _problems("tools.json", json.dumps(TOOLS)) == []
    assert _problems("tools.json", json.dumps({"servers": {}})) == []


def _tools_with(**server: object) -> str:
    return json.dumps({"servers": {"s": server}})


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "is not of type 'object'"),
        ("{}", "'servers' is a required property"),
        (json.dumps({"servers": {}, "extra": 1}), "allowed keys: ['servers']"),
        (_tools_with(url="https://x.example"), "'tools' is a required property"),
        (_tools_with(url="https://x.example", tools=[]), "at least one tool"),
        (_tools_with(url="https://x.example", tools=["a", "a"]), "listed twice"),
        (_tools_with(url="https://x.example", tools=["bad name"]), "does not match"),
        (_tools_with(tools=["a"]), "exactly one of 'url'"),
        (_tools_with(url="https://x.example", command="run", tools=["a"]), "exactly one of 'url'"),
        (_tools_with(url="ftp://x", tools=["a"]), "does not match"),
        (_tools_with(url="https://x.example", tools=["a"], transport="carrier-pigeon"), "is not one of"),
        (_tools_with(url="https://x.example", tools=["a"], env={"KEY": "secret"}), "allowed keys"),
        (
            json.dumps({"servers": {"bad name!": {"url": "https://x.example", "tools": ["a"]}}}),
            "server name 'bad name!'",
        ),
    ],
)
def test_tools_json_rejected(text: str, fragment: str) -> None:
    found = _problems("tools.json", text)
    assert any(fragment in p for p in found), found
    assert any("expected shape" in p for p in found)


def test_tools_json_error_names_where_and_the_shape() -> None:
    with pytest.raises(ValidationFailed) as info:
        validate("tools.json", _tools_with(url="https://x.example", tools=[]), LIMITS)
    message = str(info.value)
    assert message.startswith("tools.json was not saved")
    assert "at servers/s/tools" in message
    assert '"servers": {"linkedin"' in message
    assert isinstance(info.value, InvalidInput)


# ---- other files --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "text", "ok"),
    [
        ("notes/jd.md", "Senior engineer, Python.", True),
        ("notes/data.json", '{"a": 1}', True),
        ("notes/data.json", "{a: 1}", False),
        ("notes/conf.yaml", "a: 1\nb: [1, 2]\n", True),
        ("notes/conf.yml", "a: [1, 2\n", False),
        ("notes/big.md", "x" * 4001, False),
        ("notes/bin.txt", "a\x00b", False),
        ("notes/empty.md", "", True),
    ],
)
def test_other_files(path: str, text: str, ok: bool) -> None:
    assert (_problems(path, text) == []) is ok


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("notes/big.json", '{"n": ' + "1" * 5000 + "}"),  # json raises a plain ValueError past 4300 digits
        ("notes/deep.json", "[" * 3000 + "]" * 3000),  # and RecursionError past its nesting depth
        ("tools.json", "[" * 3000 + "]" * 3000),
        ("notes/deep.yaml", "[" * 1500 + "]" * 1500),
        ("skills/deep/SKILL.md", "---\nname: " + "[" * 1500 + "]" * 1500 + "\n---\nbody\n"),
    ],
)
def test_unparseable_depth_or_size_is_a_problem_not_a_crash(path: str, text: str) -> None:
    assert any("not valid" in p for p in _problems(path, text))


def test_agents_md_of_unparseable_json_is_prose() -> None:
    assert _problems("AGENTS.md", "[" * 200 + " not json") == []


def test_non_text_content_is_rejected() -> None:
    assert _problems("notes/a.md", b"bytes")  # type: ignore[arg-type]


def test_all_problems_are_reported_at_once() -> None:
    text = "---\nname: other\n---\n"
    with pytest.raises(ValidationFailed) as info:
        validate("skills/meeting-notes/SKILL.md", text, LIMITS)
    message = str(info.value)
    assert "3 problems" in message
    assert "'name'" in message and "'description'" in message and "no instructions" in message


def test_unpaired_surrogates_are_rejected() -> None:
    assert any("surrogate" in p for p in _problems("notes/a.md", "bad \ud800 text"))
