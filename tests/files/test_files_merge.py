"""Scopes: agent overrides user overrides org in a merged read view, on both backends."""

from __future__ import annotations

import pytest

from ltm.errors import InvalidInput, NotFound
from ltm.files.fs import MemoryFS
from tests.files.test_files import AGENTS, SKILL, MakeFS, make_fs  # noqa: F401 - make_fs is a fixture

ORG_SKILL = "---\nname: expenses\ndescription: File expense claims.\n---\nAttach every receipt.\n"


def test_agent_overrides_user_overrides_org(make_fs: MakeFS) -> None:  # noqa: F811
    org, user, agent = make_fs("org:acme"), make_fs("user:ann"), make_fs("agent:notes")
    org.write("AGENTS.md", "# Acme\nBe formal.\n")
    org.write("skills/expenses/SKILL.md", ORG_SKILL)
    org.write("notes/holidays.md", "Office closed on 1 May.\n")
    user.write("AGENTS.md", "# Ann\nAnn likes bullet points.\n")
    user.write("notes/holidays.md", "Ann is away in August.\n")
    agent.write("AGENTS.md", AGENTS)
    agent.write("skills/meeting-notes/SKILL.md", SKILL)

    view = MemoryFS.merged([org, agent, user])  # any order: ranked by kind
    assert [fs.scope for fs in view.layers] == ["agent:notes", "user:ann", "org:acme"]
    assert view.read("AGENTS.md") == AGENTS and view.where("AGENTS.md") == "agent:notes"
    assert view.read("notes/holidays.md") == "Ann is away in August.\n"
    assert view.where("skills/expenses/SKILL.md") == "org:acme"
    assert view.ls() == ["AGENTS.md", "notes/", "skills/"]
    assert view.ls("skills") == ["expenses/", "meeting-notes/"]
    assert view.glob("skills/*/SKILL.md") == ["skills/expenses/SKILL.md", "skills/meeting-notes/SKILL.md"]
    assert {p: fs.scope for p, fs in view.owners().items()} == {
        "AGENTS.md": "agent:notes",
        "notes/holidays.md": "user:ann",
        "skills/expenses/SKILL.md": "org:acme",
        "skills/meeting-notes/SKILL.md": "agent:notes",
    }
    assert view.files()["notes/holidays.md"].size == len(b"Ann is away in August.\n")
    matches = view.grep("formal|bullet")
    assert [(m.path, m.line_no, m.scope) for m in matches] == [
        ("skills/meeting-notes/SKILL.md", 3, "agent:notes"),
        ("skills/meeting-notes/SKILL.md", 5, "agent:notes"),
    ]  # the org's "formal" and the user's "bullet" are in shadowed files
    assert view.exists("notes/holidays.md") and not view.exists("nope.md")
    with pytest.raises(NotFound, match="any of"):
        view.read("nope.md")
    with pytest.raises(NotFound):
        view.ls("nope")

    # writes go to one layer explicitly; deleting the agent's file lets the user's show through
    view.layer("agent").delete("AGENTS.md")
    assert view.read("AGENTS.md") == "# Ann\nAnn likes bullet points.\n"
    with pytest.raises(NotFound, match="no 'team' layer"):
        view.layer("team")


def test_merged_search_hides_shadowed_files(make_fs: MakeFS) -> None:  # noqa: F811
    org, agent = make_fs("org:acme"), make_fs("agent:notes")
    org.write("notes/policy.md", "travel policy: economy class only")
    agent.write("notes/policy.md", "travel policy: business class allowed for long flights")
    org.write("notes/other.md", "travel receipts go to finance")
    hits = MemoryFS.merged([agent, org]).search("travel policy", k=5)
    assert {(h.path, h.scope) for h in hits} == {("notes/policy.md", "agent:notes"), ("notes/other.md", "org:acme")}
    assert all("economy" not in h.text for h in hits)


def test_merged_view_needs_distinct_kinds(make_fs: MakeFS) -> None:  # noqa: F811
    with pytest.raises(InvalidInput, match="one scope per kind"):
        MemoryFS.merged([make_fs("agent:a"), make_fs("agent:b")])
    with pytest.raises(InvalidInput, match="at least one"):
        MemoryFS.merged([])
