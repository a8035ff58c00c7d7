"""Fuzz BrainMemory, MemoryFS and the ``ltm`` command with hostile values: each case is accepted or refused
with an LTMError (the CLI: exit code 1-3 and one line, no traceback), and afterwards the data still loads,
the namespace reopens with rows equal to vectors, and a filtered search answers."""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ltm import BrainMemory, LTMError, MemoryFS, MemoryStorage, Settings
from ltm.cli import main
from ltm.kv.sqlite_kv import SQLiteKV
from tests.fuzz.strategies import DERANDOMIZE, EXAMPLES, JSONISH, NUMBER, TEXT, healthy

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=DERANDOMIZE,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-surfaces")


# -- BrainMemory ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def brain_kv(root: Path) -> Iterator[SQLiteKV]:
    kv = SQLiteKV(root / "brain.sqlite")
    yield kv
    kv.close()


@FUZZ
@given(talks=st.lists(st.tuples(st.booleans(), TEXT), min_size=1, max_size=4), user=TEXT, chat=TEXT)
def test_brain_memory_round_trips_or_refuses(
    root: Path, brain_kv: SQLiteKV, talks: list[tuple[bool, str]], user: str, chat: str
) -> None:
    brain = BrainMemory(settings=Settings(storage_dir=root, embedding="hash"), kv=brain_kv)
    accepted = []
    for is_talk, text in talks:
        try:
            (brain.add_talk if is_talk else brain.add_answer)(text)
            accepted.append(text)
        except LTMError:
            pass
    try:
        key = BrainMemory.to_redis_key("fuzz", user, chat)
        stored = asyncio.run(brain.dumps(key))
    except LTMError:
        return
    if stored:
        loaded = asyncio.run(brain.loads(key))
        assert [m.content for m in loaded.history] == [m.content for m in brain.history]
    brain_kv.ping()  # the backend still answers


# -- MemoryFS ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fs(root: Path) -> Iterator[MemoryFS]:
    with MemoryFS("agent:fuzz", settings=Settings(storage_dir=root / "fs", embedding="hash"), approval="yolo") as fs:
        fs.write("notes/anchor.md", "fuzz anchor note")
        yield fs


PATHS = st.one_of(
    TEXT,
    st.sampled_from(
        [
            "AGENTS.md",
            "tools.json",
            "skills/x/SKILL.md",
            "../up.md",
            "/abs.md",
            "a/../../b.md",
            "notes/ok.md",
            "notes/" + "d/" * 60 + "x.md",
        ]
    ),
)


@FUZZ
@given(
    path=PATHS,
    text=st.one_of(TEXT, st.just("---\nname: x\n---\nbody")),
    op=st.sampled_from(["write", "edit", "delete", "read"]),
)
def test_memory_fs_accepts_or_refuses(fs: MemoryFS, path: str, text: str, op: str) -> None:
    try:
        if op == "write":
            fs.write(path, text)
            assert fs.read(path) == text
        elif op == "edit":
            fs.edit(path, text, "x")
        elif op == "delete":
            fs.delete(path)
        else:
            fs.read(path)
    except LTMError:
        pass
    assert fs.read("notes/anchor.md") == "fuzz anchor note"
    assert "notes/anchor.md" in fs.files()
    assert fs.search("fuzz anchor note", k=3)


# -- the ltm command --------------------------------------------------------------------------------------------
class CLI:
    """Runs ``main`` in-process over one data root and checks the exit contract."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __call__(self, *args: str, stdin: str | None = None) -> int:
        out, err = io.StringIO(), io.StringIO()
        old = sys.stdin, sys.stdout, sys.stderr
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin or ""), out, err
        try:
            code = main([*args, "--storage-dir", str(self.root), "--embedding", "hash"])
        except SystemExit as exc:  # argparse's usage errors
            code = int(exc.code or 0)
        finally:
            sys.stdin, sys.stdout, sys.stderr = old
        text = err.getvalue()
        assert code in (0, 1, 2, 3), (code, text)
        assert "Traceback" not in text, text
        if code == 1:
            assert text.startswith("ltm: error:") and text.count("\n") == 1, text
        return code


@pytest.fixture(scope="module")
def cli() -> Iterator[CLI]:
    with tempfile.TemporaryDirectory() as tmp:
        runner = CLI(Path(tmp))
        assert runner("add", "-n", "fuzz", "fuzz anchor", "--meta", "anchor=true") == 0
        yield runner


def _cli_healthy(cli: CLI) -> None:
    store = MemoryStorage("fuzz", kind="role", settings=Settings(storage_dir=cli.root, embedding="hash"))
    healthy(store)
    store.close()


ARG = st.one_of(
    TEXT.filter(lambda t: "\x00" not in t and not any(0xD800 <= ord(c) <= 0xDFFF for c in t)),
    st.sampled_from(
        [
            "-k",
            "--k",
            "-N",
            "--mode",
            "--meta",
            "--role",
            "--after",
            "nan",
            "inf",
            "-1",
            str(2**64),
            "=",
            "a=",
            "=b",
            "x=[[[]]]",
            "x=NaN",
        ]
    ),
)


@FUZZ
@given(command=st.sampled_from(["add", "search", "recent", "export", "delete"]), args=st.lists(ARG, max_size=4))
def test_cli_arguments(cli: CLI, command: str, args: list[str]) -> None:
    with contextlib.suppress(UnicodeEncodeError):  # an argument the terminal could not even print
        cli(command, "-n", "fuzz", *args)
    _cli_healthy(cli)


LINE = st.one_of(
    TEXT,
    JSONISH.map(lambda v: __import__("json").dumps(v, allow_nan=True)),
    st.fixed_dictionaries(
        {"content": TEXT},
        optional={
            "id": TEXT,
            "metadata": JSONISH,
            "created_at": NUMBER,
            "embedding": st.lists(NUMBER, max_size=4),
            "embedding_model": TEXT,
        },
    ).map(lambda d: __import__("json").dumps(d, allow_nan=True)),
)


@FUZZ
@given(lines=st.lists(LINE, min_size=1, max_size=5), command=st.sampled_from(["import", "add"]))
def test_cli_jsonl_input(cli: CLI, lines: list[Any], command: str) -> None:
    stdin = "\n".join(str(line).replace("\n", " ") for line in lines) + "\n"
    stdin = stdin.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    cli(command, "-n", "fuzz", stdin=stdin)
    _cli_healthy(cli)
