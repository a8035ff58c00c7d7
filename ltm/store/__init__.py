"""Storage layer: the persistent message store and the key-value backends."""
