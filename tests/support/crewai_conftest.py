"""conftest for CrewAI's own memory tests, run by scripts/frameworks/crewai (copied in beside them; CrewAI's own
root conftest is copied unchanged above them): registers the storage factory of tests/support/crewai_swap.py, so
that ``Memory(storage="path")`` builds an LtmStorage (nothing with LTM_SWAP_REFERENCE=1, the reference run)."""

from ltm_crewai_swap import install  # tests/support/crewai_swap.py, copied in beside CrewAI's tests

install()
