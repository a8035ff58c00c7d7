"""Through the ``ltm`` command: destructive commands touch only what
ltm made, imports are idempotent and say where they failed, OS errors are one line, reading never creates."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.cli import main


def cli(
    capsys: pytest.CaptureFixture[str],
    root: Path,
    *args: str,
    stdin: str | None = None,
    monkeypatch: pytest.MonkeyPatch | None = None,
) -> tuple[int, str, str]:
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main([*args, "--storage-dir", str(root), "--embedding", "hash"])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(code: int, err: str) -> None:
    assert code == 1, err
    assert err.startswith("ltm: error:") and err.count("\n") == 1 and "Traceback" not in err, err


# -- 12: wipe --all deletes only what ltm made ----------------------------------------------------------------
def test_wipe_all_refuses_a_folder_that_is_not_an_ltm_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("KEY")
    (home / "Documents").mkdir()
    (home / "Documents" / "thesis.txt").write_text("years of work")
    (home / "notes.md").write_text("notes")
    code, _, err = cli(capsys, home, "wipe", "--all", "--yes")
    _one_line_error(code, err)
    assert "does not look like an ltm storage root" in err
    assert (home / ".ssh" / "id_rsa").read_text() == "KEY"
    assert (home / "Documents" / "thesis.txt").exists() and (home / "notes.md").exists()


def test_wipe_all_deletes_namespaces_and_leaves_foreign_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "data"
    assert cli(capsys, root, "add", "-n", "a", "first note")[0] == 0
    assert cli(capsys, root, "add", "-n", "b", "--kind", "user", "second note")[0] == 0
    (root / "notes.md").write_text("mine")
    (root / "role" / "my-folder").mkdir()
    (root / "role" / "my-folder" / "keep.txt").write_text("mine too")
    (root / "README.md").write_text("readme")
    code, out, err = cli(capsys, root, "wipe", "--all", "--yes")
    assert code == 0, err
    assert "2 namespaces" in out
    assert (root / "notes.md").read_text() == "mine" and (root / "README.md").exists()
    assert (root / "role" / "my-folder" / "keep.txt").read_text() == "mine too"
    assert not (root / "user").exists()  # emptied kind folders go
    assert cli(capsys, root, "stats")[1].startswith("no namespaces")


def test_wipe_of_one_namespace_keeps_a_foreign_file_inside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "data"
    cli(capsys, root, "add", "-n", "a", "first note")
    (directory,) = (root / "role").iterdir()
    (directory / "mine.txt").write_text("not ltm's")
    code, _, err = cli(capsys, root, "wipe", "-n", "a", "--yes")
    assert code == 0, err
    assert (directory / "mine.txt").read_text() == "not ltm's"
    assert not (directory / "memory.sqlite").exists() and not (directory / "manifest.json").exists()


# -- 17: reading never creates --------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["search", "anything"], ["recent"], ["export"], ["delete", "some-id"]])
def test_reading_a_mistyped_namespace_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    root = tmp_path / "data"
    cli(capsys, root, "add", "-n", "real", "a note")
    code, _, err = cli(capsys, root, *command, "-n", "reall")
    assert code == 3 and "no namespace" in err and err.count("\n") == 1, err
    assert len(list((root / "role").iterdir())) == 1
    assert "reall" not in cli(capsys, root, "stats")[1]


# -- 14: idempotent imports, errors with line numbers, Ctrl-C reports ------------------------------------------
def _lines(n: int, with_ids: bool) -> str:
    return "".join(
        json.dumps({**({"id": f"m{i}"} if with_ids else {}), "content": f"note {i}"}) + "\n" for i in range(n)
    )


@pytest.mark.parametrize("with_ids", [True, False])
@pytest.mark.parametrize("command", ["import", "add"])
def test_import_and_add_twice_store_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, with_ids: bool, command: str
) -> None:
    root = tmp_path / "data"
    for _ in range(2):
        code, _, err = cli(capsys, root, command, "-n", "twice", stdin=_lines(300, with_ids), monkeypatch=monkeypatch)
        assert code == 0, err
    assert MemoryStorage("twice", kind="role", settings=Settings(storage_dir=root, embedding="hash")).count() == 300


def test_import_error_names_the_line_and_what_was_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    lines = _lines(300, True).splitlines(keepends=True)
    lines.insert(279, json.dumps({"id": "bad", "content": "   "}) + "\n")  # line 280 is empty content
    code, _, err = cli(capsys, root, "import", "-n", "lines", stdin="".join(lines), monkeypatch=monkeypatch)
    _one_line_error(code, err)
    assert "line 280" in err and "256 stored" in err


def test_import_of_a_message_that_cannot_load_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin = _lines(3, True) + json.dumps({"content": "x", "created_at": "soon"}) + "\n"
    code, _, err = cli(capsys, tmp_path / "data", "import", "-n", "l", stdin=stdin, monkeypatch=monkeypatch)
    _one_line_error(code, err)
    assert "line 4" in err


def test_ctrl_c_during_import_says_how_many_were_stored(tmp_path: Path) -> None:
    env = {**os.environ, "LTM_STORAGE_DIR": str(tmp_path / "data"), "LTM_EMBEDDING": "hash"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltm.cli", "import", "-n", "cut"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdin is not None
    proc.stdin.write(_lines(300, True))  # one chunk of 256 is stored, 44 wait for more input
    proc.stdin.flush()
    settings = Settings(storage_dir=tmp_path / "data", embedding="hash")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (tmp_path / "data" / "role").exists() and MemoryStorage("cut", kind="role", settings=settings).count():
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "256" in err and "interrupted" in err and "Traceback" not in err


# -- 13 / 9: vectors from another model are not stored as if they were ours --------------------------------
def test_import_of_another_models_vectors_re_embeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    texts = ["the deploy failed on friday", "lunch is at noon", "the cat sleeps on the sofa"]
    stdin = "".join(
        json.dumps(
            {"id": f"t{i}", "content": t, "embedding": [1.0] + [0.0] * 383, "embedding_model": "some-other-model"}
        )
        + "\n"
        for i, t in enumerate(texts)
    )
    code, _, err = cli(capsys, root, "import", "-n", "foreign", stdin=stdin, monkeypatch=monkeypatch)
    assert code == 0, err
    assert "some-other-model" in err  # said, not silent
    store = MemoryStorage("foreign", kind="role", settings=Settings(storage_dir=root, embedding="hash"))
    for i, text in enumerate(texts):
        assert store.search(text, k=1, mode="dense")[0].message.id == f"t{i}"


def test_a_first_given_vector_of_the_wrong_dimension_does_not_fix_the_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    stdin = json.dumps({"content": "three dims", "embedding": [0.1, 0.2, 0.3]}) + "\n"
    code, _, err = cli(capsys, root, "add", "-n", "dims", stdin=stdin, monkeypatch=monkeypatch)
    assert code == 0, err
    assert cli(capsys, root, "add", "-n", "dims", "a normal add")[0] == 0
    store = MemoryStorage("dims", kind="role", settings=Settings(storage_dir=root, embedding="hash"))
    assert store.stats().vectors == 2


def test_library_refuses_given_vectors_of_another_dimension_in_a_new_namespace(settings: Settings) -> None:
    from ltm import InvalidInput

    store = MemoryStorage("dims", settings=settings)
    with pytest.raises(InvalidInput, match="384"):
        store.add_batch([Message("three dims")], vectors=[[0.1, 0.2, 0.3]])
    assert store.add(Message("a normal add"))


# -- 16: OS errors are one line; a read-only store can be searched ------------------------------------------
def test_os_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "data"
    cli(capsys, root, "add", "-n", "a", "a note")
    (tmp_path / "latin1.jsonl").write_bytes(b'{"content": "caf\xe9"}\n')
    (tmp_path / "a-file").write_text("x")
    cases = [
        ("import", str(tmp_path / "missing.jsonl"), "-n", "a"),
        ("import", str(tmp_path / "latin1.jsonl"), "-n", "a"),
        ("import", str(tmp_path), "-n", "a"),
        ("export", "-n", "a", "-o", str(tmp_path / "no" / "such" / "dir" / "out.jsonl")),
    ]
    for args in cases:
        code, _, err = cli(capsys, root, *args)
        _one_line_error(code, err)
    code, _, err = cli(capsys, tmp_path / "a-file", "add", "-n", "a", "text")
    _one_line_error(code, err)
    assert "line 1" in cli(capsys, root, "import", str(tmp_path / "latin1.jsonl"), "-n", "a")[2]


@pytest.fixture
def read_only_copy(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(writable data root, the same folder mounted read-only). Root ignores file modes, so a read-only bind
    mount stands in for read-only media; other users get a chmod."""
    data, view = tmp_path / "data", tmp_path / "ro"
    data.mkdir()
    if os.geteuid() != 0:
        yield data, data
        for path in [data, *data.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        return
    view.mkdir()
    mounted = subprocess.run(["mount", "--bind", "-o", "ro", str(data), str(view)], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot make a read-only mount here: {mounted.stderr!r}")
    try:
        yield data, view
    finally:
        subprocess.run(["umount", str(view)], check=True)


def test_a_read_only_store_can_be_searched(read_only_copy: tuple[Path, Path]) -> None:
    data, view = read_only_copy
    settings = Settings(storage_dir=data, embedding="hash")
    with MemoryStorage("ro", kind="role", settings=settings) as store:
        store.add(Message("the read only note"))
    if view == data:
        for path in [data, *data.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
    before = sorted((str(p), p.stat().st_size) for p in data.rglob("*"))
    env = {**os.environ, "LTM_STORAGE_DIR": str(view), "LTM_EMBEDDING": "hash"}
    for args in (["search", "read only"], ["recent"]):
        run = subprocess.run(
            [sys.executable, "-m", "ltm.cli", *args, "-n", "ro"], env=env, capture_output=True, text=True, check=False
        )
        assert run.returncode == 0, run.stderr
        assert "the read only note" in run.stdout
    added = subprocess.run(
        [sys.executable, "-m", "ltm.cli", "add", "-n", "ro", "more"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    _one_line_error(added.returncode, added.stderr)
    assert sorted((str(p), p.stat().st_size) for p in data.rglob("*")) == before


def test_ctrl_c_after_a_chunks_commit_counts_that_chunk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C can land after add_batch committed a chunk and before it returned: the count comes from the store,
    so the message says 256 were stored, not 0 (seen under load in a full test run)."""
    add_batch = MemoryStorage.add_batch

    def committed_then_interrupted(self: MemoryStorage, *args: object, **kwargs: object) -> int:
        add_batch(self, *args, **kwargs)  # type: ignore[arg-type]
        raise KeyboardInterrupt

    monkeypatch.setattr(MemoryStorage, "add_batch", committed_then_interrupted)
    code, _, err = cli(
        capsys, tmp_path / "data", "import", "-n", "cut", stdin=_lines(300, True), monkeypatch=monkeypatch
    )
    assert code == 130
    assert "256 new messages of the first 256 read were stored" in err, err
    monkeypatch.setattr(MemoryStorage, "add_batch", add_batch)
    settings = Settings(storage_dir=tmp_path / "data", embedding="hash")
    assert MemoryStorage("cut", kind="role", settings=settings).count() == 256
