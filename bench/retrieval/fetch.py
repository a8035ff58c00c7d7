"""Convert public conversational-memory benchmarks into ``bench/data/<set>.json`` (git-ignored).

Each set comes from a public GitHub repository, read from a local clone (``--from owner+name=PATH``, a
work tree or a bare git directory) or cloned with ``git clone --depth 1`` when none is given::

    python -m bench.retrieval.fetch                      # clones what is missing (needs github.com)
    python -m bench.retrieval.fetch --from realtalk=/path/to/REALTALK --from madial=/path/to/MADial-Bench

Sets (see ``SOURCES``):

- ``realtalk``: REALTALK (Lee et al. 2025, github.com/danny911kr/REALTALK): 10 real 21-day messaging-app chats
  between people, about 700 memory-probing questions labelled with their evidence turns, categories
  fact / date / inference. No licence file in the repository; used for evaluation only, never redistributed.
  The repository also carries a copy of LoCoMo under ``data/locomo/``: it is skipped (LoCoMo is held out).
- ``madial``: MADial-Bench (He et al., NAACL 2025, github.com/hejunqing/MADial-Bench, MIT): the English
  memory-recall task: 160 dialogues whose history must recall the right ones of 160 dated memory events.

The common format: ``{"name", "source", "conversations": [{"id", "turns": [{"id", "speaker", "text",
"time"}], "questions": [{"id", "question", "evidence": [turn ids], "category"}]}]}``, ``time`` in unix seconds.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = ROOT / "bench" / "data"
HELD_OUT = ("locomo",)  # never read, whatever a repository ships

SOURCES = {
    "realtalk": "https://github.com/danny911kr/REALTALK",
    "madial": "https://github.com/hejunqing/MADial-Bench",
}
_REALTALK_CATEGORY = {1: "fact", 2: "date", 3: "inference"}


class Repo:
    """Read files of one commit of a git repository (a bare git directory or a work tree)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _git(self, *args: str) -> bytes:
        return subprocess.run(["git", "-C", str(self.path), *args], check=True, capture_output=True).stdout

    def files(self, prefix: str) -> list[str]:
        out = self._git("ls-tree", "-r", "--name-only", "HEAD", prefix).decode()
        return [p for p in out.splitlines() if not any(h in p.lower() for h in HELD_OUT)]

    def read(self, path: str) -> str:
        if any(h in path.lower() for h in HELD_OUT):
            raise ValueError(f"{path} is held out")
        return self._git("show", f"HEAD:{path}").decode("utf-8")

    def commit(self) -> str:
        return self._git("rev-parse", "HEAD").decode().strip()


def realtalk(repo: Repo) -> dict[str, Any]:
    """REALTALK: one conversation per chat file, each message its own turn at its own time (and its session's
    number, for ``python -m bench.retrieval --session-dates``)."""
    conversations = []
    for path in sorted(p for p in repo.files("data/") if re.fullmatch(r"data/Chat_\d+_[^/]+\.json", p)):
        chat = json.loads(repo.read(path))
        turns = []
        for key in sorted((k for k in chat if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
            for message in chat[key]:
                text = (message.get("clean_text") or "").strip()
                if not text:
                    continue  # photos without a caption: nothing to store or find
                when = datetime.strptime(message["date_time"], "%d.%m.%Y, %H:%M:%S").replace(tzinfo=timezone.utc)
                turns.append({"id": message["dia_id"], "speaker": message["speaker"], "text": text,
                              "time": when.timestamp(), "session": int(key.split("_")[1])})
        known = {t["id"] for t in turns}
        questions = []
        for i, qa in enumerate(chat.get("qa", [])):
            evidence = [e for e in dict.fromkeys(qa.get("evidence") or []) if e in known]
            if evidence and qa.get("question"):
                questions.append({"id": f"{Path(path).stem}:{i}", "question": qa["question"], "evidence": evidence,
                                  "category": _REALTALK_CATEGORY.get(qa.get("category"), str(qa.get("category")))})
        conversations.append({"id": Path(path).stem, "turns": turns, "questions": questions})
    return {"name": "realtalk", "source": SOURCES["realtalk"], "conversations": conversations}


def madial(repo: Repo) -> dict[str, Any]:
    """MADial-Bench English memory recall: the 160 memory events are the turns (speaker = the person the
    event is about, time = its date); each dialogue's history before its first test turn is the question,
    its relevant ids the evidence, the first relevant memory's scene the category."""
    memory: dict[str, dict[str, Any]] = {}
    for line in repo.read("data/en/MADial-Bench-en-memory.json").splitlines():
        if line.strip():
            memory.update(json.loads(line))
    turns = []
    for mid, event in memory.items():
        name = event["event"].split()[0].strip(",’'s")
        speaker = name if name in ("Bart", "Lisa") else "user"
        when = datetime.fromisoformat(event["time"]).replace(tzinfo=timezone.utc)
        turns.append({"id": mid, "speaker": speaker, "text": event["event"].strip(), "time": when.timestamp()})
    questions = []
    dialogues = [json.loads(line) for line in repo.read("data/en/MADial-Bench-en-dialogue.json").splitlines()
                 if line.strip()]
    for i, dialogue in enumerate(dialogues):
        lines = []
        for line in dialogue["dialogue"][: dialogue["test-turn"][0]]:
            match = re.match(r"<([^>]+)>:\s*\"?(.*?)\"?\s*$", line.strip())
            if match:
                lines.append(f"{match.group(1)}: {match.group(2)}")
        evidence = [str(r) for r in dialogue["relevant-id"] if str(r) in memory]
        if lines and evidence:
            questions.append({"id": f"madial:{i}", "question": "\n".join(lines), "evidence": evidence,
                              "category": memory[evidence[0]]["scene"].lower()})
    return {"name": "madial", "source": SOURCES["madial"],
            "conversations": [{"id": "madial-en", "turns": turns, "questions": questions}]}


CONVERTERS: dict[str, Callable[[Repo], dict[str, Any]]] = {"realtalk": realtalk, "madial": madial}


def fetch(name: str, source: Path | None, out_dir: Path = DATA_DIR) -> Path:
    """Convert set ``name`` from ``source`` (a clone; cloned into a temp dir when None) to ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ltm-fetch-") as tmp:
        if source is None:
            source = Path(tmp) / name
            subprocess.run(["git", "clone", "--depth", "1", "--quiet", SOURCES[name], str(source)], check=True)
        repo = Repo(source)
        data = CONVERTERS[name](repo)
        data["commit"] = repo.commit()
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fetch public conversational-memory sets into bench/data/.")
    parser.add_argument("sets", nargs="*", default=sorted(CONVERTERS), help=f"which sets ({', '.join(CONVERTERS)})")
    parser.add_argument("--from", dest="sources", action="append", default=[], metavar="SET=PATH",
                        help="read SET from a local clone (work tree or bare git dir) instead of cloning")
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="output folder (default bench/data, git-ignored)")
    args = parser.parse_args(argv)
    sources = dict(s.split("=", 1) for s in args.sources)
    for name in args.sets:
        if name not in CONVERTERS:
            parser.error(f"unknown set {name!r}; choose from {sorted(CONVERTERS)}")
        path = fetch(name, Path(sources[name]) if name in sources else None, args.out)
        data = json.loads(path.read_text("utf-8"))
        turns = sum(len(c["turns"]) for c in data["conversations"])
        questions = sum(len(c["questions"]) for c in data["conversations"])
        print(f"{name}: {len(data['conversations'])} conversations, {turns} turns, {questions} questions -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
