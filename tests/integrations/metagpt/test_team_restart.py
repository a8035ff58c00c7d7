"""A real MetaGPT Team of two RememberingRoles across kill -9 and restarts (no LLM: the actions are plain code).

Each step is a separate process: a restart is a new interpreter that only has what ltm stored on disk.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("metagpt")

ROOT = Path(__file__).resolve().parents[3]


def _team(env: dict[str, str], *args: str, crash_in: str | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
    full.pop("TEAM_CRASH_IN", None)
    if crash_in:
        full["TEAM_CRASH_IN"] = crash_in
    return subprocess.run(
        [sys.executable, "-m", "tests.integrations.metagpt.team", *args],
        cwd=env["METAGPT_PROJECT_ROOT"],
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _acts(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.mark.slow
def test_team_recovers_after_kill_and_does_not_redo_handled_work(metagpt_home: dict[str, str], tmp_path: Path) -> None:
    acts = tmp_path / "acts.log"
    env = {**metagpt_home, "TEAM_ACTS": str(acts)}
    idea = "Write a cli snake game"

    # 1. The writer drafts, the reviewer is killed (SIGKILL) in the middle of reviewing.
    first = _team(env, idea, crash_in="reviewer")
    assert first.returncode == -signal.SIGKILL, first.stderr[-2000:]
    assert _acts(acts) == [f"writer:{idea}", f"reviewer-killed:draft for {idea}"]

    # 2. Restart, the same requirement sent again: the writer handled it already (no rework); the reviewer's
    #    cut-off review is done now, from the draft it had received before the crash.
    second = _team(env, idea)
    assert second.returncode == 0, second.stderr[-2000:]
    assert _acts(acts)[2:] == [f"reviewer:draft for {idea}"]

    # 3. The same requirement once more: everyone has handled it, nobody acts.
    third = _team(env, idea)
    assert third.returncode == 0, third.stderr[-2000:]
    assert _acts(acts)[3:] == []

    # 4. A new requirement is acted on by both roles.
    new_idea = "Write a 2048 web game"
    fourth = _team(env, new_idea)
    assert fourth.returncode == 0, fourth.stderr[-2000:]
    assert _acts(acts)[3:] == [f"writer:{new_idea}", f"reviewer:draft for {new_idea}"]

    # 5. Team.serialize + Team.deserialize in a fresh process: the roles come back with ltm memory.
    reloaded = _team(env, "--reload", str(tmp_path / "team"))
    assert reloaded.returncode == 0, reloaded.stderr[-2000:]
    facts = json.loads(reloaded.stdout.strip().splitlines()[-1])
    for profile in ("Writer", "Reviewer"):
        assert facts[profile]["memory_type"] == "ltm.integrations.metagpt.LongTermMemory"
    assert idea in facts["Writer"]["messages"] and new_idea in facts["Writer"]["messages"]
    assert f"draft for {new_idea}" in facts["Reviewer"]["messages"]
