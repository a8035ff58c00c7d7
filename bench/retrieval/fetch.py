"""Convert public conversational-memory benchmarks into ``bench/data/<set>.json`` (git-ignored).

Each set comes from a public GitHub repository, read from a local clone (``--from owner+name=PATH``, a
work tree or a bare git directory) or cloned with ``git clone --depth 1`` when none is given::

    python -m bench.retrieval.fetch                      # clones what is missing (needs github.com)
    python -m bench.retrieval.fetch --from realtalk=/path/to/REALTALK --from madial=/path/to/MADial-Bench \
        --from friendsqa=/path/to/FriendsQA --from qmsum=/path/to/QMSum

Sets (see ``SOURCES``):

- ``realtalk``: REALTALK (Lee et al. 2025, github.com/danny911kr/REALTALK): 10 real 21-day messaging-app chats
  between people, about 700 memory-probing questions labelled with their evidence turns, categories
  fact / date / inference. No licence file in the repository; used for evaluation only, never redistributed.
  The repository also carries a copy of LoCoMo under ``data/locomo/``: it is skipped (LoCoMo is held out).
- ``madial``: MADial-Bench (He et al., NAACL 2025, github.com/hejunqing/MADial-Bench, MIT): the English
  memory-recall task: 160 dialogues whose history must recall the right ones of 160 dated memory events.
- ``friendsqa``: FriendsQA (Yang & Choi, SIGDIAL 2019, github.com/emorynlp/FriendsQA, Apache-2.0): questions on
  transcripts of the TV show Friends, each answer a span of one utterance. One conversation per episode (all its
  scenes in order), the questions of every scene asked against the whole episode, the utterances holding the
  answer spans as evidence; categories by the question's wh-word. See :func:`friendsqa`.
- ``qmsum``: QMSum (Zhong et al., NAACL 2021, github.com/Yale-LILY/QMSum, MIT): 232 transcribed meetings (AMI
  product-design meetings, ICSI research meetings, Welsh and Canadian parliamentary committees), people's queries
  labelled with the utterance ranges that answer them. One conversation per meeting, one turn per utterance; only
  the "specific" queries whose ranges cover at most 10 utterances (``QMSUM_MAX_SPAN``) are kept, evidence = those
  utterances, category = the meeting's domain (academic / committee / product). See :func:`qmsum`.

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
    "friendsqa": "https://github.com/emorynlp/FriendsQA",
    "qmsum": "https://github.com/Yale-LILY/QMSum",
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
                turns.append(
                    {
                        "id": message["dia_id"],
                        "speaker": message["speaker"],
                        "text": text,
                        "time": when.timestamp(),
                        "session": int(key.split("_")[1]),
                    }
                )
        known = {t["id"] for t in turns}
        questions = []
        for i, qa in enumerate(chat.get("qa", [])):
            evidence = [e for e in dict.fromkeys(qa.get("evidence") or []) if e in known]
            if evidence and qa.get("question"):
                questions.append(
                    {
                        "id": f"{Path(path).stem}:{i}",
                        "question": qa["question"],
                        "evidence": evidence,
                        "category": _REALTALK_CATEGORY.get(qa.get("category"), str(qa.get("category"))),
                    }
                )
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
    dialogues = [
        json.loads(line) for line in repo.read("data/en/MADial-Bench-en-dialogue.json").splitlines() if line.strip()
    ]
    for i, dialogue in enumerate(dialogues):
        lines = []
        for line in dialogue["dialogue"][: dialogue["test-turn"][0]]:
            match = re.match(r"<([^>]+)>:\s*\"?(.*?)\"?\s*$", line.strip())
            if match:
                lines.append(f"{match.group(1)}: {match.group(2)}")
        evidence = [str(r) for r in dialogue["relevant-id"] if str(r) in memory]
        if lines and evidence:
            questions.append(
                {
                    "id": f"madial:{i}",
                    "question": "\n".join(lines),
                    "evidence": evidence,
                    "category": memory[evidence[0]]["scene"].lower(),
                }
            )
    return {
        "name": "madial",
        "source": SOURCES["madial"],
        "conversations": [{"id": "madial-en", "turns": turns, "questions": questions}],
    }


# FriendsQA's files, each with the half its questions belong to (bench.retrieval.explore.is_dev: the question id
# starts with it). The repository's README says dev holds episodes 21-22 and test 23-25; its files hold the reverse
# (friendsqa_dev.json: e23-e25; friendsqa_tst.json: e21-e22): each file keeps the name it has. The training file
# is listed but its object is absent from some clones (it is the largest): read when present, in the dev half.
_FRIENDSQA_SPLITS = (
    ("dat/friendsqa_trn.json", "dev"),
    ("dat/friendsqa_dev.json", "dev"),
    ("dat/friendsqa_tst.json", "test"),
)
_WH = {
    "who": "who",
    "whom": "who",
    "whose": "who",
    "what": "what",
    "which": "what",
    "when": "when",
    "where": "where",
    "why": "why",
    "how": "how",
}
_DETOKENIZE = (
    (re.compile(r" (n't|'s|'re|'m|'ve|'ll|'d)\b", re.IGNORECASE), r"\1"),
    (re.compile(r"\b(gon|wan|got) (na|ta)\b", re.IGNORECASE), r"\1\2"),
    (re.compile(r" ([.,!?;:%)\]])"), r"\1"),
    (re.compile(r"([(\[]) "), r"\1"),
    (re.compile(r"`` ?| ?''"), '"'),
)


def detokenized(text: str) -> str:
    """FriendsQA's tokenised text as written ("You 're gon na kill me !" -> "You're gonna kill me!")."""
    for pattern, replacement in _DETOKENIZE:
        text = pattern.sub(replacement, text)
    return text.strip()


def wh_word(question: str) -> str:
    """The question's first wh-word (whom / whose -> who, which -> what), else "other"."""
    return next((_WH[w] for w in re.findall(r"[a-z]+", question.lower()) if w in _WH), "other")


def friendsqa(repo: Repo) -> dict[str, Any]:
    """FriendsQA: one conversation per episode, as an agent present at every scene would hold it.

    Scenes are sittings: scene ``c`` of an episode starts 8 hours after scene ``c - 1`` (so apart for the neighbour
    rule, ``ltm.store.search.fusion.NEIGHBOUR_GAP``), its turns 5 seconds apart; episode ``e`` of season ``s`` starts on
    22 September of 1993 + s (the show's first air date, 1994) plus 14 days per episode, so times rise through the
    seasons. A turn's speaker is as given (several speakers joined by " and "; stage directions are "#NOTE#"), its
    text detokenised (:func:`detokenized`). Every question of the episode's scenes is asked against the whole
    episode; its evidence is the utterance(s) holding its answer spans (deduplicated); a question none of whose
    answers names an utterance is dropped (counted in ``dropped``). Category: :func:`wh_word`."""
    episodes: dict[str, dict[str, Any]] = {}
    dropped = 0
    for path, half in _FRIENDSQA_SPLITS:
        try:
            scenes = json.loads(repo.read(path))["data"]
        except subprocess.CalledProcessError:
            continue  # listed but absent from this clone (the training file): see _FRIENDSQA_SPLITS
        for scene in scenes:
            title = scene["title"]
            match = re.fullmatch(r"s(\d+)_e(\d+)_c(\d+)", title)
            if match is None:
                raise ValueError(f"unexpected FriendsQA scene title {title!r}")
            season, number, cut = (int(g) for g in match.groups())
            episode = episodes.setdefault(title.rsplit("_", 1)[0], {"scenes": []})
            start = (
                datetime(1993 + season, 9, 22, 8, tzinfo=timezone.utc).timestamp()
                + 14 * 86400 * (number - 1)
                + 8 * 3600 * (cut - 1)
            )
            for paragraph in scene["paragraphs"]:
                turns = [
                    {
                        "id": f"{title}:{u['uid']}",
                        "speaker": " and ".join(u["speakers"]) or "unknown",
                        "text": detokenized(u["utterance"]),
                        "time": start + 5.0 * u["uid"],
                        "session": cut,
                    }
                    for u in paragraph["utterances:"]
                    if u["utterance"].strip()
                ]
                known = {t["id"] for t in turns}
                questions = []
                for qa in paragraph["qas"]:
                    evidence = [
                        e
                        for e in dict.fromkeys(
                            f"{title}:{a['utterance_id']}" for a in qa["answers"] if a.get("utterance_id") is not None
                        )
                        if e in known
                    ]
                    if not evidence or not qa["question"].strip():
                        dropped += 1
                        continue
                    question = detokenized(qa["question"])
                    questions.append(
                        {
                            "id": f"{half}:{qa['id']}",
                            "question": question,
                            "evidence": evidence,
                            "category": wh_word(question),
                        }
                    )
                episode["scenes"].append((cut, turns, questions))
    conversations = []
    for name in sorted(episodes):
        scenes = sorted(episodes[name]["scenes"], key=lambda s: s[0])
        conversations.append(
            {
                "id": name,
                "turns": [t for _, turns, _ in scenes for t in turns],
                "questions": [q for _, _, qs in scenes for q in qs],
            }
        )
    return {"name": "friendsqa", "source": SOURCES["friendsqa"], "dropped": dropped, "conversations": conversations}


# QMSum: a query is kept when its relevant_text_span ranges cover at most this many utterances (as annotated):
# recall@10 can then reach 1, and the query asks about a passage rather than a long stretch of the meeting.
QMSUM_MAX_SPAN = 10
_QMSUM_SPLITS = ("train", "val", "test")
_QMSUM_DOMAINS = ("Academic", "Committee", "Product")
_QMSUM_NOISE = re.compile(r"\{(?:disfmarker|vocalsound|pause|gap|comment|nonvocalsound)\}")
_QMSUM_LETTERS = re.compile(r"\b((?:[A-Za-z]_)+)")  # spelt-out letters: "L_C_D_s" -> "LCDs"
_QMSUM_START = datetime(2020, 1, 6, 9, tzinfo=timezone.utc).timestamp()


def qmsum_text(text: str) -> str:
    """One QMSum utterance as written: the transcribers' noise marks ({disfmarker}, {vocalsound}, {pause}, {gap},
    {comment}, {nonvocalsound}) removed, spelt-out letters joined ("T_V_" -> "TV"), tokenised text detokenised
    (:func:`detokenized`), runs of spaces closed."""
    text = _QMSUM_LETTERS.sub(lambda m: m.group(1).replace("_", ""), _QMSUM_NOISE.sub(" ", text))
    return detokenized(re.sub(r"\s+", " ", text))


def qmsum(repo: Repo) -> dict[str, Any]:
    """QMSum: one conversation per meeting, as an agent that sat through it would hold it.

    Meetings are the files ``data/ALL/{train,val,test}/<meeting>.json`` (the per-domain folders hold the same
    meetings again: they are read only for the domain). A turn is one entry of ``meeting_transcripts``: id
    ``<meeting>:<index>`` (the index the spans count in), speaker as given, text cleaned by :func:`qmsum_text`;
    an entry left empty (only noise marks) is dropped. There are no dates: meeting ``i`` (in name order) starts at
    09:00 UTC on 6 January 2020 + ``i`` days, its turn ``j`` at ``5 j`` seconds after (one sitting).

    Questions: the ``specific_query_list`` entries only (the general queries, "Summarize the whole meeting", have
    no span, and the ``topic_list`` entries are topics, not queries). Evidence: the utterances of the query's
    ``relevant_text_span`` ranges (inclusive, deduplicated, in order), less the ones dropped as empty. A query is
    kept only when its ranges cover at most ``QMSUM_MAX_SPAN`` (10) utterances as annotated; longer ones (most of
    them, up to whole stretches of a meeting) are dropped, as are queries left with no evidence: both counted in
    ``dropped``. Question id ``<split>:<meeting>:<n>`` (n = the query's place in the list). Category: the meeting's
    domain, lower case (``academic`` = ICSI, ``committee`` = parliamentary committees, ``product`` = AMI)."""
    domain: dict[str, str] = {}
    for name in _QMSUM_DOMAINS:
        for path in repo.files(f"data/{name}/all/"):
            domain[Path(path).stem] = name.lower()
    meetings = sorted(
        (Path(p).stem, split, p)
        for split in _QMSUM_SPLITS
        for p in repo.files(f"data/ALL/{split}/")
        if p.endswith(".json")
    )
    conversations = []
    dropped = 0
    for number, (meeting, split, path) in enumerate(meetings):
        data = json.loads(repo.read(path))
        start = _QMSUM_START + 86400 * number
        turns = []
        for j, entry in enumerate(data["meeting_transcripts"]):
            text = qmsum_text(entry["content"])
            if text.strip(" .,"):
                turns.append(
                    {
                        "id": f"{meeting}:{j}",
                        "speaker": entry["speaker"].strip() or "unknown",
                        "text": text,
                        "time": start + 5.0 * j,
                    }
                )
        known = {t["id"] for t in turns}
        questions = []
        for n, query in enumerate(data.get("specific_query_list") or []):
            covered = list(
                dict.fromkeys(
                    i for first, last in query.get("relevant_text_span") or [] for i in range(int(first), int(last) + 1)
                )
            )
            evidence = [e for e in (f"{meeting}:{i}" for i in covered) if e in known]
            if not evidence or len(covered) > QMSUM_MAX_SPAN or not query["query"].strip():
                dropped += 1
                continue
            questions.append(
                {
                    "id": f"{split}:{meeting}:{n}",
                    "question": query["query"].strip(),
                    "evidence": evidence,
                    "category": domain.get(meeting, "other"),
                }
            )
        conversations.append({"id": meeting, "turns": turns, "questions": questions})
    return {"name": "qmsum", "source": SOURCES["qmsum"], "dropped": dropped, "conversations": conversations}


CONVERTERS: dict[str, Callable[[Repo], dict[str, Any]]] = {
    "realtalk": realtalk,
    "madial": madial,
    "friendsqa": friendsqa,
    "qmsum": qmsum,
}


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
    parser.add_argument(
        "--from",
        dest="sources",
        action="append",
        default=[],
        metavar="SET=PATH",
        help="read SET from a local clone (work tree or bare git dir) instead of cloning",
    )
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
        dropped = f" ({data['dropped']} dropped)" if data.get("dropped") else ""
        print(
            f"{name}: {len(data['conversations'])} conversations, {turns} turns, {questions} questions{dropped}"
            f" -> {path}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
