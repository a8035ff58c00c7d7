"""The optional config file: ltm.toml or [tool.ltm] in pyproject.toml, below the environment and arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from ltm import ConfigError, Settings


def test_precedence_arguments_env_file_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = 'storage_dir = "from-file"\nembedding = "hash"\nsimilarity_threshold = 0.9\n'
    (tmp_path / "ltm.toml").write_text(text, "utf-8")
    assert Settings.load(environ={}).storage_dir == Path("from-file")
    assert Settings.load(environ={}).embedding == "hash"
    assert Settings.load(environ={"LTM_STORAGE_DIR": "from-env"}).storage_dir == Path("from-env")
    assert Settings.load(environ={"LTM_STORAGE_DIR": "from-env"}, storage_dir="arg").storage_dir == Path("arg")
    assert Settings(storage_dir="x").embedding == "local"  # the constructor reads no file


def test_pyproject_table_and_ltm_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.ltm]\nembedding = "hash"\n', "utf-8")
    assert Settings.load(environ={}).embedding == "hash"
    other = tmp_path / "elsewhere.toml"
    other.write_text('embedding = "openai"\n', "utf-8")
    assert Settings.load(environ={"LTM_CONFIG": str(other)}).embedding == "openai"


def test_bad_files_are_clear_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="not a file"):
        Settings.load(environ={"LTM_CONFIG": str(tmp_path / "missing.toml")})
    (tmp_path / "ltm.toml").write_text("storage_dir = \n", "utf-8")
    with pytest.raises(ConfigError, match="cannot be read"):
        Settings.load(environ={})
    (tmp_path / "ltm.toml").write_text('storage_dirr = "x"\n', "utf-8")
    with pytest.raises(ConfigError, match=r"ltm.toml: unknown setting\(s\) \['storage_dirr'\]"):
        Settings.load(environ={})
