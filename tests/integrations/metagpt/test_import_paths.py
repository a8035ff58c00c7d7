"""The MetaGPT adapter's import paths: the package's, and the module path code written before it was a package
uses."""

from __future__ import annotations


def test_the_older_role_path_gives_the_same_classes() -> None:
    from ltm.integrations import metagpt_role
    from ltm.integrations.metagpt.role import LtmRoleContext, RememberingRole

    assert metagpt_role.RememberingRole is RememberingRole
    assert metagpt_role.LtmRoleContext is LtmRoleContext
