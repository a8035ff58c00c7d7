"""A two-role MetaGPT team whose actions call no LLM, run as a process that a test can kill -9 and restart.

    python -m tests.integrations.metagpt.team IDEA        # one team run; prints nothing, appends to $TEAM_ACTS
    TEAM_CRASH_IN=reviewer python -m ...         # the reviewer's action kills the process (SIGKILL) mid-work
    python -m tests.integrations.metagpt.team --reload DIR  # Team.serialize to DIR, Team.deserialize, print facts

Writer watches the user's requirement and writes a draft; Reviewer watches drafts and reviews them. Each
action appends "<role>:<content>" to the file $TEAM_ACTS before finishing, so a test counts who acted on what.
The roles are RememberingRole: their memory lives in ltm (LTM_STORAGE_DIR), embedded through MetaGPT's own
OpenAI embedding (the test points MetaGPT's config at a local OpenAI-compatible server).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from metagpt.actions import Action, UserRequirement
from metagpt.roles import Role
from metagpt.team import Team
from metagpt.utils.common import any_to_str

from ltm.integrations.metagpt.role import RememberingRole


def _record(line: str) -> None:
    with open(os.environ["TEAM_ACTS"], "a", encoding="utf-8") as out:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())


def _latest(history: list[Any], action: type) -> str:
    """The newest message in the role's memory caused by ``action`` (memory also holds unwatched messages)."""
    cause = any_to_str(action)
    return str([m for m in history if m.cause_by == cause][-1].content)


class WriteDraft(Action):
    name: str = "WriteDraft"

    async def run(self, history: list[Any]) -> str:
        requirement = _latest(history, UserRequirement)
        _record(f"writer:{requirement}")
        return f"draft for {requirement}"


class Review(Action):
    name: str = "Review"

    async def run(self, history: list[Any]) -> str:
        draft = _latest(history, WriteDraft)
        if os.environ.get("TEAM_CRASH_IN") == "reviewer":
            _record(f"reviewer-killed:{draft}")
            os.kill(os.getpid(), signal.SIGKILL)
        _record(f"reviewer:{draft}")
        return f"review of {draft}"


class Writer(RememberingRole, Role):
    name: str = "Wanda"
    profile: str = "Writer"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.set_actions([WriteDraft])
        self._watch([UserRequirement])


class Reviewer(RememberingRole, Role):
    name: str = "Rex"
    profile: str = "Reviewer"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.set_actions([Review])
        self._watch([WriteDraft])


def make_team() -> Team:
    team = Team()
    team.hire([Writer(), Reviewer()])
    return team


async def run(idea: str) -> None:
    await make_team().run(idea=idea, n_round=4)


def reload(directory: str) -> dict[str, object]:
    team = make_team()
    for role in team.env.roles.values():
        role._ltm_start()
    team.serialize(Path(directory))
    again = Team.deserialize(Path(directory))
    return {
        role.profile: {
            "memory_type": f"{type(role.rc.memory).__module__}.{type(role.rc.memory).__name__}",
            "messages": [m.content for m in role.rc.memory.get()],
            "role_type": type(role).__name__,
        }
        for role in again.env.roles.values()
    }


if __name__ == "__main__":
    if sys.argv[1] == "--reload":
        print(json.dumps(reload(sys.argv[2])))
    else:
        asyncio.run(run(sys.argv[1]))
