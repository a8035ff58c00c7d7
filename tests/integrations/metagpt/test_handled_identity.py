"""A real MetaGPT Team (RememberingRoles): "handled" is this message, not one that looks like it; old news is
not stored again; and the ``ltm`` command reads what the team wrote (embedded with MetaGPT's model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("metagpt")

ROOT = Path(__file__).resolve().parents[3]
SNAKE = "a snake game in the terminal"
PUZZLE = "a 2048 puzzle game in the browser with an undo button"


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, *args],
        cwd=env["METAGPT_PROJECT_ROOT"],
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _team(env: dict[str, str], idea: str) -> None:
    done = _run(env, "-m", "tests.integrations.metagpt.prd_team", idea)
    assert done.returncode == 0, done.stderr[-2000:]


def _acts(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.mark.slow
def test_prds_that_look_alike_are_both_designed_and_a_resent_one_is_not_stored_again(
    metagpt_home: dict[str, str], tmp_path: Path
) -> None:
    acts = tmp_path / "acts.log"
    env = {**metagpt_home, "TEAM_ACTS": str(acts)}
    alike = _run(env, "-m", "tests.integrations.metagpt.prd_team", "--similarity", SNAKE, PUZZLE)
    assert alike.returncode == 0, alike.stderr[-2000:]
    assert json.loads(alike.stdout.strip().splitlines()[-1]) >= 0.95  # the two PRDs look alike to the model

    _team(env, SNAKE)
    _team(env, PUZZLE)
    assert _acts(acts) == [f"pm:{SNAKE}", f"architect:{SNAKE}", f"pm:{PUZZLE}", f"architect:{PUZZLE}"]

    _team(env, SNAKE)  # the same request sent again, after a restart: nobody works on it again...
    assert _acts(acts)[4:] == []

    # ...and it is not stored again. Read through the ltm command, which loads no model for reading (the
    # namespace holds vectors of MetaGPT's embedding, not ltm's default one).
    recent = _run(env, "-m", "ltm.cli", "recent", "--kind", "role", "-n", "Alice(Product Manager)", "--json")
    assert recent.returncode == 0, recent.stderr
    contents = [json.loads(line)["content"] for line in recent.stdout.splitlines()]
    assert sorted(c for c in contents if c in (SNAKE, PUZZLE)) == [PUZZLE, SNAKE]
    exported = _run(env, "-m", "ltm.cli", "export", "--kind", "role", "-n", "Bob(Architect)")
    assert exported.returncode == 0, exported.stderr
    assert len(exported.stdout.splitlines()) >= 2
