"""BrainMemory in a chat loop: each turn is appended to the chat's history, the chat is summarized and titled
offline, and a new process (here: a new object) picks the chat up where it stopped.

    python examples/chat_loop.py                 # embedded store in a temporary folder, no LLM, no server
    LTM_REDIS_URL=redis://localhost:6379/0 python examples/chat_loop.py   # the same chat on Redis

The "assistant" here answers from a tiny rule table so that the example runs offline; in an agent, the answer
comes from your LLM, and ``summarize``/``get_title`` use it too when ``LTM_LLM=openai`` is set.
"""

from __future__ import annotations

import asyncio
import tempfile

from ltm import BrainMemory, Settings

TURNS = [
    "Hi! I want a terminal snake game.",
    "It should save high scores between runs.",
    "Where would you keep the high scores?",
    "And can two players share one machine's scores?",
]
ANSWERS = {
    "snake": "A terminal snake game in Python with curses is a good start.",
    "save": "We keep the high scores in a small SQLite file next to the game.",
    "where": "In SQLite: one table with the player's name, the score and the date.",
    "share": "Yes: SQLite handles two games writing at once, so players on one machine share the table.",
}


def answer(text: str) -> str:
    return next((reply for word, reply in ANSWERS.items() if word in text.lower()), "Noted.")


async def chat(settings: Settings, key: str, turns: list[str]) -> BrainMemory:
    brain = await BrainMemory(settings=settings).loads(key)  # the chat so far (empty the first time)
    for text in turns:
        brain.add_talk(text)
        brain.add_answer(answer(text))
        await brain.dumps()  # durable after every turn
    return brain


async def main() -> None:
    settings = Settings.load(storage_dir=tempfile.mkdtemp())
    key = BrainMemory.to_redis_key("example", "user-1", "snake-chat")
    await chat(settings, key, TURNS[:2])
    brain = await chat(settings, key, TURNS[2:])  # "restarted": a new object, the same chat
    assert [m.content for m in brain.history[::2]] == TURNS
    title = await brain.get_title()  # summarizes first; offline without an LLM
    print(f"title:   {title}")
    print(f"summary: {brain.historical_summary}")
    assert title and "SQLite" in brain.historical_summary


if __name__ == "__main__":
    asyncio.run(main())
