"""Model interfaces: embeddings (llama-index ``BaseEmbedding``), the LLM protocol, the offline summarizer."""
