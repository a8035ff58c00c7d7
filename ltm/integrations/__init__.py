"""Adapters to agent frameworks and libraries (each imports its framework; ltm's core never does):
``ltm.integrations.metagpt`` and ``ltm.integrations.llama_index`` (``LtmVectorStore``, ``LtmMemoryBlock``)."""
