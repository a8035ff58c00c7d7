"""The documentation site: the generated references match the code, every setting and command is documented, and
the site (with the API reference generated from the docstrings) builds with warnings as errors."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ltm import Settings
from ltm.cli import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _gen_ref() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_ref", DOCS / "gen_ref.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", ["cli.md", "configuration.md"])
def test_generated_reference_matches_the_code(page: str) -> None:
    gen = _gen_ref()
    render = {gen.CLI_PAGE: gen.cli_page, gen.CONFIG_PAGE: gen.config_page}[DOCS / page]
    assert (DOCS / page).read_text("utf-8") == render(), f"docs/{page} drifted: run `python docs/gen_ref.py`"


def test_the_check_fails_on_a_drifted_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gen = _gen_ref()
    stale = tmp_path / "cli.md"
    stale.write_text(gen.cli_page().replace("### `ltm add`", "### `ltm add-renamed`"), "utf-8")
    monkeypatch.setattr(gen, "PAGES", {stale: gen.cli_page})
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    assert gen.main(["--check"]) == 1


def test_configuration_page_lists_every_setting() -> None:
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    for name in Settings.model_fields:
        assert f"`LTM_{name.upper()}`" in page, f"docs/configuration.md misses {name}"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_cli_page_documents_every_command(command: str) -> None:
    assert f"### `ltm {command}`" in (DOCS / "cli.md").read_text(encoding="utf-8"), f"docs/cli.md misses {command}"


def test_the_ci_script_builds_the_site_before_the_tests() -> None:
    script = (ROOT / "scripts" / "test").read_text("utf-8")
    assert "mkdocs build --strict" in script
    assert script.index("mkdocs build --strict") < script.index("python -m pytest")


@pytest.mark.slow
def test_site_builds_strict(tmp_path: Path) -> None:
    if shutil.which("mkdocs") is None and not (Path(sys.executable).parent / "mkdocs").exists():
        pytest.fail("mkdocs is not installed: scripts/setup installs the dev extra")
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "store" / "index.html").is_file()
    assert not (tmp_path / "site" / "gen_ref.py").exists(), "the generator is not part of the site"


# `pip install 'ltm[...]'` / `pip install ltm` would fetch whatever the package index holds under that name, which is
# not this project: docs and error hints name the checkout (or the wheel built from it).
_INDEX_INSTALL = r"""pip install (?:-U |--upgrade )?(?:[\w.-]+ )*["']?ltm(?:\[|["'\s]|$)"""


def test_install_lines_name_the_checkout_never_the_package_index() -> None:
    import re

    pages = [ROOT / "README.md", *DOCS.rglob("*.md"), *(ROOT / "ltm").rglob("*.py"), *(ROOT / "examples").rglob("*.py")]
    found = [
        f"{page.relative_to(ROOT)}: {line.strip()}"
        for page in pages
        for line in page.read_text(encoding="utf-8").splitlines()
        if re.search(_INDEX_INSTALL, line)
    ]
    assert not found, found


def test_deployment_and_service_pages_agree_on_the_server() -> None:
    deployment = (DOCS / "DEPLOYMENT.md").read_text(encoding="utf-8")
    assert "There is no ltm server" not in deployment and "`ltm serve`" in deployment
