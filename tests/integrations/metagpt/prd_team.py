"""A MetaGPT product manager and architect (RememberingRoles, no LLM), run as one process per requirement.

    python -m tests.integrations.metagpt.prd_team IDEA  # one Team run; appends "<role>:<requirement>" to $TEAM_ACTS
    python -m tests.integrations.metagpt.prd_team --similarity IDEA1 IDEA2  # the two PRDs' cosine, as the roles embed

The product manager writes every PRD from one template, so two PRDs for different products differ in one line
and look alike to an embedding model; the architect must still design each.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
from typing import Any

from metagpt.actions import Action, UserRequirement
from metagpt.roles import Role
from metagpt.team import Team
from metagpt.utils.common import any_to_str

from ltm.integrations.metagpt.messages import metagpt_embedding
from ltm.integrations.metagpt.role import RememberingRole

PRD_TEMPLATE = (
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


def _record(line: str) -> None:
    with open(os.environ["TEAM_ACTS"], "a", encoding="utf-8") as out:
        out.write(line + "\n")


def _latest(history: list[Any], action: type) -> str:
    cause = any_to_str(action)
    return str([m for m in history if m.cause_by == cause][-1].content)


class WritePRD(Action):
    name: str = "WritePRD"

    async def run(self, history: list[Any]) -> str:
        requirement = _latest(history, UserRequirement)
        _record(f"pm:{requirement}")
        return PRD_TEMPLATE.format(requirement)


class WriteDesign(Action):
    name: str = "WriteDesign"

    async def run(self, history: list[Any]) -> str:
        requirement = _latest(history, WritePRD).rstrip("\n").rsplit("\n", 1)[-1]
        _record(f"architect:{requirement}")
        return f"design for {requirement}"


class ProductManager(RememberingRole, Role):
    name: str = "Alice"
    profile: str = "Product Manager"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.set_actions([WritePRD])
        self._watch([UserRequirement])


class Architect(RememberingRole, Role):
    name: str = "Bob"
    profile: str = "Architect"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.set_actions([WriteDesign])
        self._watch([WritePRD])


async def run(idea: str) -> None:
    team = Team()
    team.hire([ProductManager(), Architect()])
    await team.run(idea=idea, n_round=4)


def similarity(first: str, second: str) -> float:
    """The cosine of the two ideas' PRDs under the embedding the roles' stores use."""
    a, b = metagpt_embedding().get_text_embedding_batch([PRD_TEMPLATE.format(first), PRD_TEMPLATE.format(second)])
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return float(dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b)))


if __name__ == "__main__":
    if sys.argv[1] == "--similarity":
        print(json.dumps(similarity(sys.argv[2], sys.argv[3])))
    else:
        asyncio.run(run(sys.argv[1]))
