from __future__ import annotations

import builtins

import ltm.errors as errors


def test_tree_has_one_root_and_shadows_no_builtin() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.LTMError)
        assert not hasattr(builtins, name), name
    assert issubclass(errors.ValidationFailed, errors.InvalidInput)
    assert issubclass(errors.InvalidInput, ValueError)
    assert str(errors.NotFound("no such message 'x'")) == "no such message 'x'"
