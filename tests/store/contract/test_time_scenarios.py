"""The scenario suite of facts that change over time (bench/time_scenarios.py), through the default search with the
local model on every engine: the current version ranks first of its subject's versions for "now" questions, the
version valid then for ``as_of`` questions, the version recorded by then for ``known_at`` questions, and no stale
version shows in the top 5."""

from __future__ import annotations

import pytest

from bench.time_scenarios import SUBJECTS, load, run_questions
from ltm import MemoryStorage, Settings


@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
def test_changing_facts_are_answered_as_of_their_time(settings: Settings, mode: str) -> None:
    store = MemoryStorage("scenarios", settings=settings.with_(embedding="local"))
    tally = run_questions(store, load(store), mode)
    versions = sum(len(s.versions) for s in SUBJECTS)
    assert tally["now"] == {"right": len(SUBJECTS), "top1": tally["now"]["top1"], "asked": len(SUBJECTS), "stale": 0}
    for kind in ("as_of", "known_at"):
        assert tally[kind]["asked"] == versions
        assert tally[kind]["right"] == versions and tally[kind]["stale"] == 0, (kind, tally)
