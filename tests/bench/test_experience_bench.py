"""bench/experience.py: the memory run rises above a flat control; the agents behave as documented."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from bench import experience as experience_bench
from ltm.config import Settings
from ltm.llm.base import resolve_llm
from tests.support.openai_server import OpenAIServer


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return experience_bench


def test_memory_run_rises_and_control_stays_flat(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "experience.png"
    mem, ctl = bench.main(["--rounds", "3", "--embedding", "hash", "--storage-dir", str(tmp_path), "--plot", str(png)])
    assert len({(s.success_rate, s.wasted_steps) for s in ctl}) == 1  # control: flat
    assert all(s.policy_hits == 0 for s in ctl)
    assert mem[0].success_rate == ctl[0].success_rate  # the opening pass: nothing learned yet
    assert mem[-1].success_rate > ctl[-1].success_rate and mem[-1].wasted_steps < ctl[-1].wasted_steps
    assert mem[-1].policy_hits > 0 and mem[-1].policies >= 1
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = capsys.readouterr().out
    assert "| round | success (memory) | success (control)" in out and "| 3 |" in out


def test_scripted_agent_changes_only_through_policies(bench: ModuleType) -> None:
    def call(tool: str, **args: Any) -> dict[str, Any]:
        result: dict[str, Any] = bench.TOOLS[tool](**args)
        return result

    refund_now = bench.TASKS[4].text
    naive = bench.scripted_agent(refund_now, [], call)
    assert [c.tool for c in naive.calls] == ["refund_order", "refund_order"]  # fails, retries, fails
    assert not bench.TASKS[4].right(naive.calls) and bench.wasted(naive.calls) == 2
    unrelated = bench.scripted_agent(refund_now, ["Be polite to the customer."], call)
    assert [c.tool for c in unrelated.calls] == ["refund_order", "refund_order"] and not unrelated.applied
    rule = 'Before calling refund_order, check that the current state allows it: it failed with "..status is pending".'
    taught = bench.scripted_agent(refund_now, [rule], call)
    assert [c.tool for c in taught.calls] == ["query_order"] and taught.applied
    assert bench.TASKS[4].right(taught.calls) and bench.wasted(taught.calls) == 0
    ask = bench.scripted_agent(bench.TASKS[3].text, ["If an order is not found, confirm the order ID first."], call)
    assert ask.calls == [] and "order number" in ask.reply


def test_llm_agent_plans_through_an_openai_compatible_server(bench: ModuleType, openai_server: OpenAIServer) -> None:
    llm = resolve_llm(Settings(llm="openai", openai_base_url=openai_server.base_url, openai_api_key="k"))
    openai_server.script(
        '{"tool": "query_order", "args": {"order_id": "ORD-1002"}, "policy": "query the status before a refund"}',
        '{"reply": "ORD-1002 is pending, so it cannot be refunded yet.", "policy": ""}',
    )
    episode = bench.llm_agent(llm)(
        bench.TASKS[4].text, ["Query the status before a refund."], lambda tool, **a: bench.TOOLS[tool](**a)
    )
    assert [(c.tool, c.args) for c in episode.calls] == [("query_order", {"order_id": "ORD-1002"})]
    assert episode.applied and "pending" in episode.reply
    second_prompt = openai_server.requests[-1]["body"]["messages"][-1]["content"]
    assert "Query the status before a refund." in second_prompt and '"status": "pending"' in second_prompt
