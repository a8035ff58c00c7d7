"""Adapters to agent frameworks and libraries (each imports its framework; ltm's core never does):
``ltm.integrations.metagpt``, ``ltm.integrations.llama_index`` (``LtmVectorStore``, ``LtmMemoryBlock``) and
``ltm.integrations.langgraph`` (``LtmStore``, LangGraph's store)."""
