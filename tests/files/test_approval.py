"""The approval queue on its own: change ids, pending changes, an approver's claim, the audit log, rebasing."""

from __future__ import annotations

import re

import pytest

from ltm.errors import InvalidInput, NotFound
from ltm.files import approval
from ltm.files.approval import ChangeQueue, rebase
from ltm.files.records import Change, FileInfo, FileOp
from ltm.kv import KVStore

PREFIX = "fs:{agent:notes}:"


def _change(queue: ChangeQueue, at: float, path: str = "AGENTS.md") -> Change:
    return Change(
        id=queue.new_id(), scope="agent:notes", ops=(FileOp("write", path, "# notes\n", None),), created_at=at
    )


def test_ids_count_up_and_secret_ids_add_random_digits(kv: KVStore) -> None:
    plain = ChangeQueue(kv, PREFIX, "agent:notes")
    assert [plain.new_id(), plain.new_id()] == ["1", "2"]
    secret = ChangeQueue(kv, PREFIX, "agent:notes", secret_ids=True)
    first, second = secret.new_id(), secret.new_id()
    assert re.fullmatch(r"3-[0-9a-f]{16}", first) and re.fullmatch(r"4-[0-9a-f]{16}", second)
    assert first[2:] != second[2:]


def test_pending_changes_are_oldest_first_and_a_missing_one_names_the_pending(kv: KVStore) -> None:
    queue = ChangeQueue(kv, PREFIX, "agent:notes")
    late, early = _change(queue, 20.0), _change(queue, 10.0)
    queue.hold(late)
    queue.hold(early)
    assert [c.id for c in queue.pending()] == [early.id, late.id]
    assert queue.get(late.id) == late
    with pytest.raises(NotFound, match=r"no pending change '9'.*\['2', '1'\]"):
        queue.get("9")


def test_a_claim_shuts_out_a_second_approver_until_it_is_released(kv: KVStore) -> None:
    queue = ChangeQueue(kv, PREFIX, "agent:notes")
    with queue.claim("1"):
        assert 0 < (kv.ttl(PREFIX + "claim:1") or 0) <= 60  # a crashed approver's claim expires
        with pytest.raises(InvalidInput, match="being approved by someone else"), queue.claim("1"):
            pass
    with pytest.raises(RuntimeError), queue.claim("1"):  # released after a failed approval too
        raise RuntimeError("the apply failed")
    with queue.claim("1"):
        pass
    assert kv.get(PREFIX + "claim:1") is None


def test_decided_changes_leave_the_pending_and_the_audit_log_keeps_the_last(
    kv: KVStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(approval, "DECIDED_KEEP", 3)
    queue = ChangeQueue(kv, PREFIX, "agent:notes")
    changes = [_change(queue, float(i)) for i in range(5)]
    for change in changes:
        queue.hold(change)
    done = queue.reject(changes[0], "not a durable fact")
    assert done.status == "rejected" and done.reason == "rejected: not a durable fact"
    for change in changes[1:]:
        with kv.atomic() as batch:
            queue.settle(batch, change.decided("applied", 99.0))
    assert queue.pending() == []
    assert [c.id for c in queue.decided(10)] == ["3", "4", "5"]
    assert [c.id for c in queue.decided(1)] == ["5"]


def test_rebase_reapplies_an_edit_and_refuses_a_stale_whole_file_write() -> None:
    heads = {"AGENTS.md": FileInfo("AGENTS.md", 2, 10, "x", 0.0)}
    texts = {"AGENTS.md": "# Notes\nBe brief.\nUse bullets.\n"}
    current = FileOp("write", "AGENTS.md", "new", 2)
    assert rebase(current, heads, texts.__getitem__) is current
    edit = FileOp("write", "AGENTS.md", "# Notes\nBe short.\n", 1, "Be brief.", "Be short.")
    assert rebase(edit, heads, texts.__getitem__) == FileOp(
        "write", "AGENTS.md", "# Notes\nBe short.\nUse bullets.\n", 2, "Be brief.", "Be short."
    )
    for stale in (FileOp("write", "AGENTS.md", "whole", 1), FileOp("delete", "AGENTS.md", None, 1)):
        with pytest.raises(InvalidInput, match=r"changed since this change was proposed \(version 1 -> 2\)"):
            rebase(stale, heads, texts.__getitem__)
    with pytest.raises(InvalidInput, match=r"version 1 -> None"):  # deleted since
        rebase(edit, {}, texts.__getitem__)
