"""Adapters to agent frameworks and libraries (each imports its framework; ltm's core never does):
``ltm.integrations.metagpt``, ``ltm.integrations.llama_index`` (``LtmVectorStore``, ``LtmMemoryBlock``),
``ltm.integrations.langgraph`` (``LtmStore``), ``ltm.integrations.autogen`` (``LtmMemory``) and
``ltm.integrations.crewai`` (``LtmStorage``)."""
