"""Adapters that put ltm inside other frameworks (llama-index, MetaGPT). Import the submodule you need:
``from ltm.integrations.llama_index import LtmVectorStore``; nothing here imports a framework eagerly."""
