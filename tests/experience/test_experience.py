"""ExperienceMemory: the failure hook, distillation (offline and LLM), persistence, usage counts, retrieval."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from ltm import ExperienceMemory, InvalidInput, Lesson, Policy
from ltm.config import Settings
from ltm.experience.records import POLICY_CAUSE
from tests.support.openai_server import OpenAIServer

REFUND_TASK = "Refund 149 yuan for order ORD-1002 immediately."
NOTE_TASK = "Add a note to order ORD-9999: the customer asks for express handling."
PENDING = "Refund not allowed: order status is pending"


def refund_order(order_id: str, amount: float) -> dict[str, Any]:
    if order_id == "ORD-1002":
        return {"error": PENDING}
    return {"refund_id": "r1", "amount": amount}


def add_note(order_id: str, note: str) -> dict[str, Any]:
    if order_id != "ORD-1001":
        raise KeyError(f"Order not found: {order_id}")
    return {"status": "noted"}


@pytest.fixture
def memory(settings: Settings) -> Any:
    with ExperienceMemory("agent-1", settings=settings) as mem:
        yield mem


def fail_refunds(memory: ExperienceMemory, n: int, task: str = REFUND_TASK) -> list[Lesson]:
    return [
        memory.record_failure("refund_order", PENDING, args={"order_id": f"ORD-{1002 + i}"}, task=task)
        for i in range(n)
    ]


def test_watched_tool_records_returned_errors_and_exceptions_and_passes_results_through(
    memory: ExperienceMemory,
) -> None:
    refund = memory.watch_tool(refund_order)
    note = memory.watch_tool(name="note")(add_note)
    assert refund.__name__ == "refund_order"
    with memory.working_on(REFUND_TASK):
        assert refund("ORD-1001", 299) == {"refund_id": "r1", "amount": 299}  # success: nothing recorded
        assert refund("ORD-1002", amount=149) == {"error": PENDING}  # returned unchanged
    with pytest.raises(KeyError, match="ORD-9"):  # re-raised as is
        note("ORD-9", "hurry")
    lessons = memory.lessons()
    assert [(x.tool, x.task) for x in lessons] == [("refund_order", REFUND_TASK), ("note", "")]
    assert lessons[0].error == PENDING and lessons[0].args == {"order_id": "ORD-1002", "amount": 149}
    assert "state" in lessons[0].precondition and PENDING in lessons[0].reflection
    assert lessons[1].error.startswith("KeyError: ") and lessons[1].args == {"order_id": "ORD-9", "note": "hurry"}
    assert "exists" in lessons[1].precondition


def test_watched_async_tool(memory: ExperienceMemory) -> None:
    @memory.watch_tool
    async def lookup(order_id: str) -> dict[str, Any]:
        return {"error": "Order not found"} if order_id == "X" else {"status": "delivered"}

    assert asyncio.run(lookup("A")) == {"status": "delivered"}
    assert asyncio.run(lookup("X")) == {"error": "Order not found"}
    assert [(x.tool, x.error, x.args) for x in memory.lessons()] == [("lookup", "Order not found", {"order_id": "X"})]


def test_record_failure_rejects_bad_input_and_keeps_what_is_stored(memory: ExperienceMemory) -> None:
    fail_refunds(memory, 1)
    with pytest.raises(InvalidInput, match="tool"):
        memory.record_failure("", "boom")
    with pytest.raises(InvalidInput, match="error"):
        memory.record_failure("refund_order", "  ")
    with pytest.raises(InvalidInput, match="task"):
        memory.policies_for(" ")
    with pytest.raises(InvalidInput, match="max_policies"):
        memory.distill(max_policies=0)
    assert len(memory.lessons()) == 1


def test_offline_distill_groups_merges_duplicates_keeps_provenance_and_retires(memory: ExperienceMemory) -> None:
    assert memory.llm is None  # settings.llm == "none": offline
    refunds = fail_refunds(memory, 3)
    notes = [memory.record_failure("add_note", "Order not found", args={"order_id": "ORD-9999"}, task=NOTE_TASK)]
    assert memory.distill(min_lessons=5) == []  # too few lessons: nothing happens
    policies = memory.distill(min_lessons=3, keep_recent=2, max_policies=3)
    assert len(policies) == 2
    refund = next(p for p in policies if p.tools == ["refund_order"])
    assert refund.source == "offline" and refund.label().endswith("[offline]")
    assert refund.text.startswith("Before calling refund_order, check that") and PENDING in refund.text
    assert refund.lesson_ids == [x.id for x in refunds]  # provenance: the three refund lessons
    assert refund.tasks == [REFUND_TASK]
    assert [x.id for x in memory.lessons()] == [refunds[2].id, notes[0].id]  # all but the 2 most recent retired
    assert len(memory.lessons(pending_only=False)) == 4

    # The same failure again (other order ids): it strengthens the held policy instead of adding one.
    more = fail_refunds(memory, 2)
    again = memory.distill(min_lessons=3, keep_recent=0)
    assert {p.id for p in again} >= {refund.id}
    held = memory.policies()
    assert len(held) == 2
    merged = next(p for p in held if p.id == refund.id)
    assert merged.lesson_ids == [x.id for x in refunds + more] and merged.revisions >= 2
    assert memory.lessons() == []


def test_llm_near_duplicates_merge_by_similarity(settings: Settings) -> None:
    class Scripted:
        def __init__(self, *answers: str) -> None:
            self.answers = list(answers)

        def ask(self, prompt: str, system: str | None = None) -> str:
            return self.answers.pop(0)

        async def aask(self, prompt: str, system: str | None = None) -> str:
            return self.ask(prompt, system)

    rule = "Always query the order status with query_order before calling refund_order."
    llm = Scripted(
        json.dumps([{"principle": rule, "lessons": [1, 2]}, {"principle": rule + " ", "lessons": [3]}]),
        f"- {rule}\n- Confirm the order ID with the customer before add_note.",
    )
    with ExperienceMemory("agent-2", settings=settings, llm=llm) as memory:
        lessons = fail_refunds(memory, 3)
        first = memory.distill()
        assert len(first) == 1 and first[0].source == "llm"  # two identical principles became one
        assert first[0].lesson_ids == [x.id for x in lessons] and first[0].tools == ["refund_order"]
        memory.record_failure("add_note", "Order not found", args={"order_id": "ORD-9"}, task=NOTE_TASK)
        second = memory.distill(keep_recent=0)
        assert len(memory.policies()) == 2  # the repeated refund rule merged, the note rule is new
        assert {p.text for p in second} == {rule, "Confirm the order ID with the customer before add_note."}


def test_policies_and_lessons_survive_a_restart(settings: Settings) -> None:
    with ExperienceMemory("agent-3", settings=settings) as memory:
        lessons = fail_refunds(memory, 3)
        [policy] = memory.distill(keep_recent=1)
    with ExperienceMemory("agent-3", settings=settings, min_relevance=0.0) as reopened:
        assert [p.id for p in reopened.policies()] == [policy.id]
        assert reopened.policies()[0].lesson_ids == [x.id for x in lessons]
        assert [x.id for x in reopened.lessons()] == [lessons[-1].id]
        assert len(reopened.lessons(pending_only=False)) == 3
        assert [p.id for p in reopened.policies_for(REFUND_TASK)] == [policy.id]
        assert reopened.policies()[0].hits == 1
    with ExperienceMemory("agent-other", settings=settings) as other:  # its own namespace
        assert other.policies() == [] and other.lessons() == []


def test_usage_counts_and_demotion(settings: Settings) -> None:
    with ExperienceMemory("agent-4", settings=settings, demote_after=2, min_relevance=0.0) as memory:
        fail_refunds(memory, 3)
        [policy] = memory.distill()
        assert memory.render(REFUND_TASK).endswith(policy.label())
        credited = memory.record_success("refund_order", task=REFUND_TASK)
        assert [(p.id, p.successes) for p in credited] == [(policy.id, 1)]
        assert memory.record_success("add_note", task=REFUND_TASK) == []  # not about this policy's tool
        assert memory.record_success(task="another task") == []  # nothing was served for it
        for _ in range(3):
            memory.policies_for(REFUND_TASK)
            memory.record_failure("refund_order", PENDING, task=REFUND_TASK)
        [stored] = memory.policies()
        assert (stored.hits, stored.successes, stored.failures, stored.demoted) == (3, 1, 2, True)  # 3rd: demoted
        assert memory.policies_for(REFUND_TASK) == []  # demoted: no longer served
        assert memory.policies(include_demoted=False) == []


def test_distill_with_openai_compatible_server(settings: Settings, openai_server: OpenAIServer) -> None:
    online = settings.with_(llm="openai", openai_base_url=openai_server.base_url, openai_api_key="test-key")
    answer = json.dumps(
        [
            {"principle": "Query the order and check it is delivered before calling refund_order.", "lessons": [1, 2]},
            {"principle": "Verify the order exists before add_note.", "lessons": [3]},
        ]
    )
    with ExperienceMemory("agent-5", settings=online) as memory:
        assert memory.llm is not None
        refunds = fail_refunds(memory, 2)
        note = memory.record_failure("add_note", "Order not found", args={"order_id": "ORD-9"}, task=NOTE_TASK)
        openai_server.script(answer)
        policies = memory.distill(max_policies=2)
        assert openai_server.chat_calls == 1
        body = openai_server.requests[-1]["body"]
        prompt = body["messages"][-1]["content"]
        assert "at most 2" in prompt and PENDING in prompt and "ORD-9" in prompt
        assert [(p.source, p.lesson_ids) for p in policies] == [
            ("llm", [x.id for x in refunds]),
            ("llm", [note.id]),
        ]
        # An answer without principles: offline principles instead, marked as such.
        fail_refunds(memory, 1)
        openai_server.script("I cannot help with that.")
        fallback = memory.distill(keep_recent=0)
        assert fallback and all(p.source == "offline" for p in fallback)
        # The async twin goes through aask.
        fail_refunds(memory, 3)
        openai_server.script(json.dumps(["Never refund a pending order."]))
        [made] = asyncio.run(memory.adistill())
        assert made.text == "Never refund a pending order." and made.source == "llm"


def test_llm_failure_leaves_lessons_pending(settings: Settings, openai_server: OpenAIServer) -> None:
    from ltm.errors import BackendUnavailable

    online = settings.with_(llm="openai", openai_base_url=openai_server.base_url, openai_api_key="k", llm_max_retries=0)
    with ExperienceMemory("agent-6", settings=online) as memory:
        fail_refunds(memory, 3)
        openai_server.fail(1, status=500)
        with pytest.raises(BackendUnavailable):  # the LLM server is down
            memory.distill()
        assert len(memory.lessons()) == 3 and memory.policies() == []


@pytest.mark.slow
def test_policies_for_finds_the_refund_policy_by_meaning(tmp_path: Any) -> None:
    """Real local model: refund requests get the refund policy first, note requests never get it."""
    settings = Settings(storage_dir=tmp_path / "storage", embedding="local")
    with ExperienceMemory("agent-7", settings=settings) as memory:
        refund_doc, note_doc = "Refund an order; only a delivered order can be refunded.", "Add a note to an order."
        for order in ("ORD-1002", "ORD-1003"):
            memory.record_failure(
                "refund_order", PENDING, args={"order_id": order}, task=REFUND_TASK, tool_doc=refund_doc
            )
        memory.record_failure(
            "add_note", "Order not found", args={"order_id": "ORD-9999"}, task=NOTE_TASK, tool_doc=note_doc
        )
        memory.record_failure(
            "query_order",
            "Order not found",
            args={"order_id": "Zhang Wei"},
            task="I don't remember my order number; my name is Zhang Wei.",
            tool_doc="Look an order's status and amount up.",
        )
        memory.distill(keep_recent=0)
        by_tool = {p.tools[0]: p for p in memory.policies()}
        assert set(by_tool) == {"refund_order", "add_note", "query_order"}
        refund, note = by_tool["refund_order"], by_tool["add_note"]
        assert refund_doc in refund.text
        # Wordings other than the tasks the lessons came from.
        refunds = ("Please refund my order ORD-1001, the item arrived broken.", "Can you issue a refund for ORD-2001?")
        for task in refunds:
            found = memory.policies_for(task)
            assert found and found[0].id == refund.id, task
        for task in (NOTE_TASK, "Add a note to order ORD-1001: call the customer back tomorrow."):
            found = memory.policies_for(task)
            assert found and found[0].id == note.id, task
            assert refund.id not in [p.id for p in found], task
        hits = memory.store.search(REFUND_TASK, k=3, mode="dense", filters={"cause_by": POLICY_CAUSE})
        assert Policy.from_message(hits[0].message).id == refund.id


def test_readme_example_runs(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "experience.md").read_text(encoding="utf-8")
    section = page[page.index("# Experience memory") :]
    start = section.index("```python\n") + len("```python\n")
    code = section[start : section.index("```\n", start)]
    monkeypatch.setenv("LTM_STORAGE_DIR", str(tmp_path / "storage"))
    monkeypatch.setenv("LTM_EMBEDDING", "hash")
    monkeypatch.setenv("LTM_LLM", "none")
    exec(compile(code, "docs/experience.md", "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    assert out.startswith("Before calling refund_order (Refund an order; only a delivered order can be refunded.)")
    assert "[offline]" in out.splitlines()[0]
