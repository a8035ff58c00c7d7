"""The demo's software team: a product manager, an architect and an engineer with deterministic actions.

Each action writes a templated document from the messages it received (or asks the LLM when one is
configured). The templates pick decisions from the requirement's words, so the outputs read like a real
team's and differ between requirements.
"""

from __future__ import annotations

from collections.abc import Sequence

from ltm.agents import Action, Role
from ltm.message import Message, UserRequirement

__all__ = ["WriteCode", "WriteDesign", "WritePRD", "build_team"]

# requirement words -> (decision topic, decision)
_DECISIONS: list[tuple[tuple[str, ...], str, str]] = [
    (
        ("score", "save", "persist", "history"),
        "storage",
        "store high scores and game history in an embedded SQLite database in WAL mode: no server to run, "
        "and a crash never loses a finished game",
    ),
    (
        ("multiplayer", "online", "friends"),
        "networking",
        "use WebSockets with an authoritative server tick of 20 Hz; clients only send inputs",
    ),
    (
        ("cli", "terminal", "command-line"),
        "interface",
        "render in the terminal with curses, arrow keys to steer, q to quit",
    ),
    (("web", "browser"), "interface", "render on an HTML canvas; keyboard and touch controls"),
    (("leaderboard", "ranking"), "ranking", "rank players by best score, ties broken by the earlier game"),
]


def _requirement_text(news: Sequence[Message]) -> str:
    return " ".join(m.content for m in news)


def decisions_for(text: str) -> list[tuple[str, str]]:
    """The (topic, decision) pairs the requirement's words call for."""
    lowered = text.lower()
    found = [(topic, decision) for words, topic, decision in _DECISIONS if any(w in lowered for w in words)]
    return found or [("scope", "ship the smallest version that satisfies the requirement, then iterate")]


class WritePRD(Action):
    """Product manager: requirement -> product requirements document."""

    def template(self, role: Role, news: Sequence[Message]) -> str:
        req = _requirement_text(news)
        goals = "; ".join(f"{topic}: {decision.split(':')[0].split(',')[0]}" for topic, decision in decisions_for(req))
        return (
            f"PRD. Goal: {req.rstrip('.')}. User stories: as a player I can start, play and finish a game. "
            f"Requirements by area - {goals}."
        )

    def prompt(self, role: Role, news: Sequence[Message]) -> str:
        return (
            f"Write a short product requirements document (goal, user stories, requirements) for: "
            f"{_requirement_text(news)}"
        )


class WriteDesign(Action):
    """Architect: PRD -> system design with explicit decisions."""

    def template(self, role: Role, news: Sequence[Message]) -> str:
        prd = _requirement_text(news)
        lines = [f"Decision on {topic}: we {decision}." for topic, decision in decisions_for(prd)]
        return "System design. Modules: game loop, input, rendering, persistence. " + " ".join(lines)

    def prompt(self, role: Role, news: Sequence[Message]) -> str:
        return (
            "Write a short system design with one explicit decision per area (storage, interface, ...) "
            f"for this PRD: {_requirement_text(news)}"
        )


class WriteCode(Action):
    """Engineer: design -> a code plan (files and what each holds)."""

    def template(self, role: Role, news: Sequence[Message]) -> str:
        design = _requirement_text(news)
        files = ["main.py (entry point and game loop)", "board.py (snake, food, collisions)"]
        if "sqlite" in design.lower():
            files.append("scores.py (SQLite high-score table, one transaction per finished game)")
        if "websocket" in design.lower():
            files.append("server.py (WebSocket server, 20 Hz tick)")
        if "curses" in design.lower():
            files.append("ui.py (curses renderer)")
        return "Code plan. Files: " + "; ".join(files) + ". Tests: one per module."

    def prompt(self, role: Role, news: Sequence[Message]) -> str:
        return f"List the files (and what each holds) that implement this design: {_requirement_text(news)}"


def build_team(**role_kwargs: object) -> list[Role]:
    """The three roles: Alice (product manager), Bob (architect), Charlie (engineer)."""
    return [
        Role("Alice", "Product Manager", watch={UserRequirement}, action=WritePRD(), **role_kwargs),  # type: ignore[arg-type]
        Role("Bob", "Architect", watch={WritePRD}, action=WriteDesign(), **role_kwargs),  # type: ignore[arg-type]
        Role("Charlie", "Engineer", watch={WriteDesign}, action=WriteCode(), **role_kwargs),  # type: ignore[arg-type]
    ]
