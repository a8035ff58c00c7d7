"""Adapters to agent frameworks and libraries (each imports its framework; ltm's core never does)."""
