"""Roles and Environment: MetaGPT routing, news filtering, and recovery after a restart."""

from __future__ import annotations

from ltm import Message, Settings, UserRequirement
from ltm.agents import Environment, Role
from ltm.demo_team import WriteDesign, WritePRD, build_team


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
