"""``ltm demo``: a software team that remembers across a restart, on the embedded default.

Three roles (product manager, architect, engineer) pass a requirement down the line; each role's long-term
memory is written to ``storage_dir``. Then the team is built again from scratch over the same storage (a
restart): the roles recover and resume any work a crash cut off, the same requirement is recognised as
already handled (no rework: "seen" is not "handled"), a new related
requirement is processed, semantic search answers questions about past decisions, and BrainMemory
summarizes and titles the conversation. Run the command twice: the second run starts from the recovered team.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from ltm.agents import Environment, ObserveReport, Role
from ltm.brain import BrainMemory
from ltm.config import Settings
from ltm.demo_team import WriteDesign, build_team
from ltm.llm.base import resolve_llm
from ltm.llm.embeddings import resolve_embedding
from ltm.llm.names import LOCAL_MODEL_NAME, configured_model_name
from ltm.llm.tasks import ask_title
from ltm.message import Message, UserRequirement, any_to_str

__all__ = ["FIRST_REQUIREMENT", "QUESTIONS", "SECOND_REQUIREMENT", "run_demo"]

FIRST_REQUIREMENT = "Write a CLI snake game in the terminal that saves high scores"
SECOND_REQUIREMENT = "Add an online multiplayer mode to the snake game with a leaderboard of friends"
QUESTIONS = [
    "what did we decide about storage?",
    "how will players play together over the network?",
    "where are the high scores kept?",
]
# The questions are about decisions, and the architect's designs hold them: searching every message would
# answer "where are the high scores kept?" with the requirement that asked for high scores (the closest text
# in meaning to a question that restates it), not with the decision that keeps them in SQLite.
DECISIONS = any_to_str(WriteDesign)
# The conversation is kept as a chat of the product manager's namespace (the role the user's requirements go
# to), under the key the service uses, so the inspector (`ltm serve`, /ui) lists it on that namespace's chats.
CHAT_NAMESPACE, CHAT_ID = "Alice(Product Manager)", "team-chat"


def _short(text: str, width: int = 90) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class _Narrator:
    """Prints what the team does as it happens."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, event: str, role: Role, payload: Any) -> None:
        if event == "observed":
            report: ObserveReport = payload
            for m in report.old_news:
                self.console.print(
                    f"  [yellow]{escape(role.name)}[/] ({escape(role.profile)}) already handled, no rework: "
                    f"[dim]{escape(_short(m.content, 70))}[/]"
                )
            for m in report.news:
                self.console.print(
                    f"  [green]{escape(role.name)}[/] ({escape(role.profile)}) received news: "
                    f"[dim]{escape(_short(m.content, 70))}[/]"
                )
        elif event == "acted":  # an LLM's text may hold brackets: shown as written, never as markup
            self.console.print(f"  [cyan]{escape(role.name)}[/] -> {escape(_short(payload.content))}")


def _team(settings: Settings, embedding: Any, console: Console) -> tuple[Environment, list[Role]]:
    llm = resolve_llm(settings) if settings.llm != "none" else None
    roles = build_team(settings=settings, embedding=embedding, llm=llm)
    return Environment(roles, on_event=_Narrator(console)), roles


def _recovery_table(roles: Sequence[Role]) -> Table:
    table = Table(title="recovered from long-term memory", show_lines=False)
    table.add_column("role")
    table.add_column("watches")
    table.add_column("messages in store", justify="right")
    table.add_column("restored to short-term", justify="right")
    table.add_column("unfinished, resumed", justify="right")
    for role in roles:
        store = role.memory.memory_storage
        count = store.count() if store is not None else 0
        table.add_row(
            role.role_id,
            ", ".join(sorted(w.rsplit(".", 1)[-1] for w in role.watch)),
            str(count),
            str(len(role.recovered)),
            str(len(role.resumed)),
        )
    return table


def _send(env: Environment, console: Console, text: str, turns: list[Message]) -> int:
    """Publish a requirement and run the team; the requirement and the documents it led to join ``turns`` (the
    chat the demo summarizes) when the team did new work (an old requirement is no new conversation)."""
    console.print(f"\n[bold]user requirement:[/] {escape(text)}")
    start = len(env.history)
    env.publish_message(Message(text, role="Human", cause_by=UserRequirement, sent_from="Human"))
    before = len(env.history)
    env.run()
    produced = len(env.history) - before
    if produced:
        turns.extend(env.history[start:])
    console.print(f"  [bold]{produced}[/] new documents written by the team")
    return produced


def run_demo(
    settings: Settings | None = None, *, reset: bool = False, console: Console | None = None
) -> dict[str, Any]:
    """Run the demo; returns a summary (documents produced per step, search answers, title) for tests."""
    settings = settings or Settings.load()
    console = console or Console()
    # The demo writes where every ltm command looks (the data root, role namespaces: the command's default kind),
    # so `ltm stats` and `ltm recent -n "Alice(Product Manager)"` show the team's memory afterwards.
    root = settings.storage_dir
    if reset:
        _forget(settings)
    result: dict[str, Any] = {}
    started = time.perf_counter()
    console.print(
        Panel.fit(
            f"ltm demo: a team of agents that remembers\nstorage: {escape(str(root))}\n"
            f"embedding: {settings.embedding}   llm: {settings.llm}",
            style="bold",
        )
    )
    embedding = resolve_embedding(settings)

    env, roles = _team(settings, embedding, console)
    first_run = all(role.memory.memory_storage is None or role.memory.memory_storage.count() == 0 for role in roles)
    turns: list[Message] = []  # this run's new conversation, for the chat
    if first_run:
        console.rule("run 1: a requirement flows through the team")
        result["run1"] = _send(env, console, FIRST_REQUIREMENT, turns)
    else:
        console.rule("this storage already holds a team's memory (an earlier run): no run 1")
        result["run1"] = 0
    env.close()

    console.rule("restart: new objects over the same storage")
    env, roles = _team(settings, embedding, console)
    console.print(_recovery_table(roles))
    result["recovered"] = {role.role_id: len(role.recovered) for role in roles}
    result["resumed"] = {role.role_id: len(role.resumed) for role in roles}
    console.rule("the same requirement again")
    result["repeat"] = _send(env, console, FIRST_REQUIREMENT, turns)
    if result["repeat"] == 0:
        console.print("  [green]recognised as already handled: no rework[/]")
    console.rule("a new, related requirement")
    result["second"] = _send(env, console, SECOND_REQUIREMENT, turns)

    console.rule("semantic search over past decisions")
    answers: dict[str, str] = {}
    for question in QUESTIONS:
        # Dense scores are cosines, comparable across the roles' stores (fused hybrid ranks are not).
        hits = [
            (hit, role) for role in roles for hit in role.memory.search(question, k=1, mode="dense", cause_by=DECISIONS)
        ]
        if hits:
            hit, role = max(hits, key=lambda pair: pair[0].score)
            answers[question] = hit.message.content
            # the whole design: the decision that answers is one of its sentences
            found = escape(hit.message.content)
            console.print(f"[bold]? {escape(question)}[/]\n  [dim]{escape(role.name)}'s memory:[/] {found}")
    result["answers"] = answers

    console.rule("BrainMemory: the conversation, summarized and titled")
    result["summary"], result["title"], result["extractive"] = asyncio.run(_summarize(settings, turns))
    kind = "extractive, offline" if result["extractive"] else f"LLM {settings.llm_model}"
    console.print(f"[bold]title:[/] {escape(result['title'])}   [dim]({kind})[/]")
    console.print(f"[bold]summary:[/] {escape(_short(result['summary'], 400))}")
    console.print(f"  [dim]the chat {CHAT_ID} of {escape(CHAT_NAMESPACE)}: `ltm serve`, then /ui shows it[/]")
    stores = [role.memory.memory_storage.path for role in roles if role.memory.memory_storage is not None]
    env.close()

    console.rule("where the data lives")
    for path in stores:
        if path is not None:
            size = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
            console.print(f"  {escape(str(path))}  ({size / 1024:.0f} KiB)")
    console.print(f"  {escape(str(root / 'kv.sqlite'))}  (BrainMemory)")
    console.rule("read it with the ltm command")
    for command in read_commands(settings):
        console.print(f"  {escape(command)}", soft_wrap=True)
    console.print(f"\ndone in {time.perf_counter() - started:.1f} s. Run it again: the team starts from its memory.")
    return result


def read_commands(settings: Settings) -> list[str]:
    """The ``ltm`` commands that read what the demo wrote (printed at its end; each runs as shown)."""
    root = ["--storage-dir", str(settings.storage_dir)]
    model = configured_model_name(settings)
    embeds = [] if model == LOCAL_MODEL_NAME else ["--embedding-model", model]
    commands = [
        ["ltm", "stats", *root],
        ["ltm", "recent", "-n", "Alice(Product Manager)", *root],
        ["ltm", "search", "-n", "Charlie(Engineer)", QUESTIONS[2], "-k", "1", *embeds, *root],
    ]
    return [shlex.join(command) for command in commands]


def _forget(settings: Settings) -> None:
    """``--reset``: delete the team's namespaces and the demo chat, and nothing else under the data root."""
    for role in build_team(settings=settings, embedding=None, llm=None):
        if role.memory.memory_storage is not None:
            role.memory.memory_storage.clean()
        role.handled.clean()  # what the role finished: forgotten too, or the team would skip its work
        role.close()
    brain = BrainMemory(settings=settings)
    asyncio.run(brain.delete(CHAT_KEY))
    # where the chat was kept before it was a namespace's (the inspector did not list it there)
    asyncio.run(brain.delete(BrainMemory.to_redis_key(settings.redis_prefix, "demo-user", "team-chat")))


CHAT_KEY = BrainMemory.namespace_key(CHAT_NAMESPACE, CHAT_ID)


async def _summarize(settings: Settings, turns: Sequence[Message]) -> tuple[str, str, bool]:
    """Add this run's new turns to the chat and fold them into its summary. A run with no new turns leaves the
    summary as it is (summarizing a summary again would only shorten it) and titles it as it stands."""
    brain = await BrainMemory(settings=settings).loads(CHAT_KEY)
    for message in turns:
        if not brain.exists(message.content):
            brain.add_history(message.model_copy(update={"role": message.role or "user"}))
    await brain.dumps(CHAT_KEY)
    llm = resolve_llm(settings) if settings.llm != "none" else None
    if brain.history:
        title = await brain.get_title(llm=llm)
    elif brain.historical_summary:
        title = await ask_title(brain.historical_summary, resolve_llm(settings, llm))
    else:
        title = "New"
    return brain.historical_summary, title, brain.summary_is_extractive
