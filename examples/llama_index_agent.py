"""A llama-index chat agent whose memory outlives its process: llama-index's ``Memory`` with an
``LtmMemoryBlock`` recalls what the user said in an earlier session (a new process, here: new objects).

    python examples/llama_index_agent.py

Offline: the local all-MiniLM-L6-v2 model embeds, and llama-index's ``MockLLM`` answers (it echoes its prompt,
which shows what the memory put into the agent's context). Use any llama-index LLM instead of ``MockLLM``.
"""

from __future__ import annotations

import tempfile

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory

from ltm import MemoryStorage, Message, Settings
from ltm.integrations.llama_index import LtmMemoryBlock


def agent(settings: Settings, session: str) -> tuple[SimpleChatEngine, MemoryStorage]:
    storage = MemoryStorage("user-7", kind="user", settings=settings)  # the user's long-term memory
    block = LtmMemoryBlock(storage=storage, k=2, scope={"user_id": "u7"})
    memory = Memory.from_defaults(session_id=session, token_limit=4000, memory_blocks=[block])
    return SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory), storage


def main() -> None:
    settings = Settings.load(storage_dir=tempfile.mkdtemp())
    _, storage = agent(settings, "monday")
    storage.add(Message("My cat is called Mochi and she is afraid of the vacuum cleaner.", role="user"))
    storage.add(Message("I am allergic to peanuts.", role="user"))
    storage.close()  # the process ends

    friday, storage = agent(settings, "friday")  # a new session, days later
    reply = str(friday.chat("What was my cat's name again?"))
    print(reply[-300:])
    assert "Mochi" in reply  # recalled from long-term memory into the prompt
    storage.close()


if __name__ == "__main__":
    main()
