"""The import path ``ltm.integrations.metagpt_role`` that code written before MetaGPT's adapter became a package
uses; the role lives in :mod:`ltm.integrations.metagpt.role`."""

from ltm.integrations.metagpt.role import LtmRoleContext, RememberingRole

__all__ = ["LtmRoleContext", "RememberingRole"]
