"""The offline summary keeps a question with its answer: an answer alone ("On Friday, ...") loses what it
answers, and a short question ("When do we ship?") is easily taken for a filler."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ltm import BrainMemory, Settings

CHAT = [
    ("talk", "When do we ship?"),
    ("answer", "On Friday, after the release notes and the migration guide are reviewed by the whole team."),
    ("talk", "Who writes the migration guide?"),
    ("answer", "Dana writes it; Lee reviews the release notes on Thursday."),
]


def test_a_chosen_answer_keeps_its_question(tmp_path: Path) -> None:
    async def summary() -> str:
        settings = Settings(storage_dir=tmp_path, embedding="hash")
        brain = await BrainMemory(settings=settings).loads(BrainMemory.to_redis_key("ltm", "u", "c"))
        for kind, text in CHAT:
            (brain.add_talk if kind == "talk" else brain.add_answer)(text)
        return await brain.summarize()

    lines = asyncio.run(summary()).splitlines()
    assert any(line.startswith("assistant: On Friday") for line in lines), lines
    friday = next(i for i, line in enumerate(lines) if line.startswith("assistant: On Friday"))
    assert friday > 0 and lines[friday - 1] == "user: When do we ship?", lines
