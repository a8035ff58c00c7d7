"""Where :func:`~ltm.message.with_context` used to live; it prepares messages and touches no storage, so it
moved to :mod:`ltm.message` (``from ltm import with_context``). This import path keeps working.
"""

from __future__ import annotations

from ltm.message import with_context

__all__ = ["with_context"]
