"""Learning from failures: :class:`ExperienceMemory` records lessons, distills them into policies, retrieves them."""

from __future__ import annotations

from ltm.experience.memory import ExperienceMemory
from ltm.experience.records import Lesson, Policy

__all__ = ["ExperienceMemory", "Lesson", "Policy"]
