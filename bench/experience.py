#!/usr/bin/env python
"""Experience benchmark: does an agent stop repeating its mistakes? (document 000 of shared/seeds)

A customer-service agent serves the five requests of document 000 for N rounds, against a tiny back end
(ORD-1001 delivered 299, ORD-1002 pending 149; tools query_order, refund_order, add_note). Two runs:

- **memory**: tools are watched by an ExperienceMemory (failures become lessons), the agent reads the
  policies retrieved for each request before planning, and the lessons are distilled after each round;
- **control**: the same agent with memory disabled.

The default agent is a scripted planner whose behaviour changes *only* through the policies it retrieves: it
knows two habits a policy can switch on (look the order's status up before a refund; verify the order exists,
or ask for its number, before acting on it) and switches one on only when a retrieved policy's text calls
for it. With ``--llm-base-url`` an LLM plans each step instead, with the policies in its prompt.

Per round it prints the success rate (requests served right with no failed refund/note call), the wasted
steps (calls that failed or repeated an identical call, per request) and the policy hits (requests where a
retrieved policy changed what the agent did), and writes a PNG plot.

    python -m bench.experience --rounds 10 --embedding local --plot docs/experience.png
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ltm.config import Settings
from ltm.experience.memory import DEFAULT_MIN_RELEVANCE, ExperienceMemory

ORDERS: dict[str, dict[str, Any]] = {
    "ORD-1001": {"status": "delivered", "amount": 299},
    "ORD-1002": {"status": "pending", "amount": 149},
}
WRITES = ("refund_order", "add_note")


# -- the back end (document 000's tools) -------------------------------------------------------------------
def query_order(order_id: str) -> dict[str, Any]:
    """Look an order's status and amount up."""
    return dict(ORDERS.get(order_id, {"error": "Order not found"}))


def refund_order(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an order; only a delivered order can be refunded."""
    order = ORDERS.get(order_id)
    if not order:
        return {"error": "Order not found"}
    if order["status"] != "delivered":
        return {"error": f"Refund not allowed: order status is {order['status']}"}
    return {"refund_id": uuid.uuid4().hex[:12], "amount": amount}


def add_note(order_id: str, note: str) -> dict[str, Any]:
    """Add a note to an order."""
    if order_id not in ORDERS:
        return {"error": "Order not found"}
    return {"status": "noted", "order_id": order_id, "note": note}


TOOLS: dict[str, Callable[..., dict[str, Any]]] = {f.__name__: f for f in (query_order, refund_order, add_note)}


@dataclass
class Call:
    tool: str
    args: dict[str, Any]
    result: dict[str, Any]

    @property
    def failed(self) -> bool:
        return bool(self.result.get("error"))


@dataclass
class Task:
    """A request (English text for the agent, document 000's Chinese original) and what serving it right means."""

    name: str
    text: str
    original: str
    right: Callable[[list[Call]], bool]


def _no_failed_write(calls: list[Call]) -> bool:
    return not any(c.failed and c.tool in WRITES for c in calls)


TASKS = [
    Task(
        "refund ORD-1001",
        "Please refund the 299 yuan of my order ORD-1001.",
        "请帮我退款 ORD-1001 的 299 元",
        lambda cs: _no_failed_write(cs) and any(c.tool == "refund_order" and not c.failed for c in cs),
    ),
    Task(
        "status, then refund ORD-1002",
        "What is the status of order ORD-1002? If it is not good, refund it.",
        "ORD-1002 的订单状态是什么?如果不好就退款",
        lambda cs: _no_failed_write(cs) and any(c.tool == "query_order" and not c.failed for c in cs),
    ),
    Task(
        "note on ORD-9999",
        "Add a note to order ORD-9999: the customer asks for express handling.",
        "给 ORD-9999 添加备注:客户要求加急",
        _no_failed_write,
    ),
    Task(
        "no order number",
        "I don't remember my order number, but my name is Zhang Wei. Look up my latest order.",
        "我不记得单号,但我叫张伟,帮我查最近的订单",
        lambda cs: not any(c.failed for c in cs),
    ),
    Task(
        "refund ORD-1002 now",
        "Refund 149 yuan for order ORD-1002 immediately.",
        "立刻退款 ORD-1002 149 元",
        _no_failed_write,
    ),
]


# -- agents ------------------------------------------------------------------------------------------------
@dataclass
class Episode:
    calls: list[Call] = field(default_factory=list)
    reply: str = ""
    applied: bool = False  # a retrieved policy changed what the agent did


_ORDER_ID = re.compile(r"\bORD-\d+\b")
_NAME = re.compile(r"my name is ([A-Z][a-z]+(?: [A-Z][a-z]+)*)")


def policy_habits(policies: list[str]) -> set[str]:
    """The habits the retrieved policies call for (the only way the scripted agent's behaviour changes)."""
    habits: set[str] = set()
    for text in (p.lower() for p in policies):
        if "refund" in text and any(w in text for w in ("status", "state", "delivered")):
            habits.add("check_state")
        if any(w in text for w in ("not found", "exist", "order id", "order number")):
            habits.add("verify_order")
    return habits


def scripted_agent(task: str, policies: list[str], call: Callable[..., dict[str, Any]]) -> Episode:
    """A deterministic agent: naive habits, plus whatever the retrieved policies switch on.

    Naive habits (document 000's starting point): act on the request at once, use the customer's name when
    no order number is given, read "if it is not good, refund it" as "refund unless delivered", and retry a
    failed call once.
    """
    habits = policy_habits(policies)
    ep = Episode()

    def do(tool: str, **args: Any) -> dict[str, Any]:
        result = call(tool, **args)
        ep.calls.append(Call(tool, args, result))
        if result.get("error"):  # the naive retry: same call again
            result = call(tool, **args)
            ep.calls.append(Call(tool, args, result))
        return result

    lowered = task.lower()
    found = _ORDER_ID.search(task)
    name = _NAME.search(task)
    order_id = found.group(0) if found else (name.group(1) if name else "")
    if not found and "verify_order" in habits:
        ep.applied = True
        ep.reply = "Could you give me your order number? I cannot look orders up by name."
        return ep
    if found and "verify_order" in habits and "refund" not in lowered and "status" not in lowered:
        looked = call("query_order", order_id=order_id)  # verify once; no retry: the answer is the answer
        ep.calls.append(Call("query_order", {"order_id": order_id}, looked))
        ep.applied = True
        if looked.get("error"):
            ep.reply = f"I could not find order {order_id}; please check the number."
            return ep
    if "refund" in lowered:
        amount = re.search(r"(\d+(?:\.\d+)?) yuan", task)
        status = None
        if "status" in lowered or "check_state" in habits:
            ep.applied = ep.applied or "status" not in lowered  # the lookup is the policy's doing
            looked = do("query_order", order_id=order_id)
            status = looked.get("status")
            if "check_state" in habits and status != "delivered":
                ep.applied = True
                ep.reply = f"Order {order_id} is {status or 'unknown'}; it cannot be refunded now."
                return ep
            if "status" in lowered and status == "delivered" and "check_state" not in habits:
                ep.reply = f"Order {order_id} is delivered."
                return ep
        value = float(amount.group(1)) if amount else float(ORDERS.get(order_id, {}).get("amount", 0))
        result = do("refund_order", order_id=order_id, amount=value)
        ep.reply = "Refunded." if not result.get("error") else f"Refund failed: {result['error']}"
    elif "note" in lowered:
        note = task.split(":", 1)[1].strip() if ":" in task else task
        result = do("add_note", order_id=order_id, note=note)
        ep.reply = "Noted." if not result.get("error") else f"Could not add the note: {result['error']}"
    else:
        result = do("query_order", order_id=order_id)
        ep.reply = json.dumps(result)
    return ep


def llm_agent(llm: Any, max_steps: int = 5) -> Callable[[str, list[str], Callable[..., dict[str, Any]]], Episode]:
    """An agent whose LLM picks one tool call (or the reply) per step, with the retrieved policies in its prompt."""
    system = (
        "You are an e-commerce customer-service agent. Tools: query_order(order_id) -> status and amount; "
        "refund_order(order_id, amount); add_note(order_id, note). Answer each step with one JSON object only: "
        '{"tool": name, "args": {...}, "policy": "the principle you applied, or empty"} to call a tool, or '
        '{"reply": "text to the customer", "policy": "..."} to finish.'
    )

    def agent(task: str, policies: list[str], call: Callable[..., dict[str, Any]]) -> Episode:
        ep = Episode()
        rules = "\n".join(f"- {p}" for p in policies)
        transcript = f"Customer: {task}\n" + (f"Lessons learned (follow them):\n{rules}\n" if rules else "")
        for _ in range(max_steps):
            answer = llm.ask(transcript + "Next step (JSON):", system=system)
            try:
                step = json.loads(answer[answer.find("{") : answer.rfind("}") + 1])
            except json.JSONDecodeError:
                ep.reply = answer
                break
            if policies and str(step.get("policy") or "").strip():
                ep.applied = True
            if "tool" not in step or step["tool"] not in TOOLS:
                ep.reply = str(step.get("reply", answer))
                break
            args = step.get("args") or {}
            result = call(step["tool"], **args) if isinstance(args, dict) else {"error": "args must be an object"}
            ep.calls.append(Call(step["tool"], dict(args) if isinstance(args, dict) else {}, result))
            transcript += f"Called {step['tool']}({json.dumps(args)}) -> {json.dumps(result)}\n"
        return ep

    return agent


# -- the benchmark -----------------------------------------------------------------------------------------
@dataclass
class RoundStats:
    round: int
    success_rate: float
    wasted_steps: float
    policy_hits: int
    policies: int


def wasted(calls: list[Call]) -> int:
    """Calls that failed or repeated an identical earlier call."""
    seen: set[str] = set()
    count = 0
    for c in calls:
        key = c.tool + json.dumps(c.args, sort_keys=True, default=str)
        count += c.failed or key in seen
        seen.add(key)
    return count


def run(
    rounds: int, memory: ExperienceMemory | None, agent: Callable[..., Episode], max_policies: int = 3
) -> list[RoundStats]:
    """Serve the five requests ``rounds`` times; distil after each round when there is a memory."""
    tools = {n: (memory.watch_tool(f) if memory else f) for n, f in TOOLS.items()}

    def call(tool: str, **args: Any) -> dict[str, Any]:
        if tool not in tools:
            return {"error": f"Unknown tool {tool}"}
        try:
            return tools[tool](**args)
        except TypeError as exc:  # an LLM agent passing wrong arguments: a failed call, recorded by the watcher
            return {"error": str(exc)}

    stats: list[RoundStats] = []
    for r in range(1, rounds + 1):
        ok = waste = hits = 0
        for task in TASKS:
            if memory is None:
                episode = agent(task.text, [], call)
            else:
                with memory.working_on(task.text):
                    policies = [p.text for p in memory.policies_for(task.text)]
                    episode = agent(task.text, policies, call)
                    if task.right(episode.calls):
                        memory.record_success(task=task.text)
            ok += task.right(episode.calls)
            waste += wasted(episode.calls)
            hits += episode.applied
        if memory is not None:
            memory.distill(min_lessons=3, keep_recent=2, max_policies=max_policies)
        held = len(memory.policies(include_demoted=False)) if memory else 0
        stats.append(RoundStats(r, ok / len(TASKS), waste / len(TASKS), hits, held))
    return stats


def table(mem: list[RoundStats], ctl: list[RoundStats]) -> str:
    lines = [
        "| round | success (memory) | success (control) | wasted steps (memory) | wasted steps (control) "
        "| policy hits (memory) | policies held |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m, c in zip(mem, ctl, strict=True):
        lines.append(
            f"| {m.round} | {m.success_rate:.0%} | {c.success_rate:.0%} | {m.wasted_steps:.1f} | "
            f"{c.wasted_steps:.1f} | {m.policy_hits}/{len(TASKS)} | {m.policies} |"
        )
    return "\n".join(lines)


def plot(mem: list[RoundStats], ctl: list[RoundStats], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [s.round for s in mem]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(xs, [100 * s.success_rate for s in mem], "o-", label="with experience memory")
    left.plot(xs, [100 * s.success_rate for s in ctl], "s--", label="control (memory off)")
    left.set(xlabel="round", ylabel="success rate (%)", ylim=(0, 105), title="Requests served right")
    right.plot(xs, [s.wasted_steps for s in mem], "o-", label="with experience memory")
    right.plot(xs, [s.wasted_steps for s in ctl], "s--", label="control (memory off)")
    right.set(xlabel="round", ylabel="wasted steps per request", ylim=(0, None), title="Wasted tool calls")
    for ax in (left, right):
        ax.legend(loc="center right")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> tuple[list[RoundStats], list[RoundStats]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument(
        "--embedding",
        choices=("local", "hash"),
        default="local",
        help="policy retrieval embedding (local all-MiniLM-L6-v2, or hash for speed)",
    )
    parser.add_argument("--storage-dir", type=Path, default=None, help="default: a fresh temp dir")
    parser.add_argument("--plot", default="docs/experience.png", help="PNG to write ('' for none)")
    parser.add_argument("--max-policies", type=int, default=3, help="policies one distillation may add or merge")
    parser.add_argument("--llm-base-url", default=None, help="OpenAI-compatible endpoint: plan and distil with it")
    parser.add_argument("--llm-model", default="gpt-4o-mini")
    parser.add_argument("--llm-api-key", default="not-needed")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    with tempfile.TemporaryDirectory() as tmp:
        root = args.storage_dir or Path(tmp)
        settings = Settings(storage_dir=root, embedding=args.embedding)
        llm = None
        if args.llm_base_url:
            from ltm.llm.base import resolve_llm

            settings = settings.with_(
                llm="openai",
                openai_base_url=args.llm_base_url,
                openai_api_key=args.llm_api_key,
                llm_model=args.llm_model,
            )
            llm = resolve_llm(settings)
        agent = llm_agent(llm) if llm is not None else scripted_agent
        # The hash embedding only counts shared words, so its cosines are far lower than the model's.
        floor = 0.05 if args.embedding == "hash" else DEFAULT_MIN_RELEVANCE
        memory = ExperienceMemory(f"bench-{uuid.uuid4().hex[:8]}", settings=settings, llm=llm, min_relevance=floor)
        try:
            mem = run(args.rounds, memory, agent, args.max_policies)
        finally:
            memory.close()
        ctl = run(args.rounds, None, agent)

    kind = "LLM" if llm is not None else "scripted"
    print(f"{kind} agent, {args.rounds} rounds x {len(TASKS)} requests, policy retrieval: {args.embedding} embedding")
    print(table(mem, ctl))
    if args.plot:
        plot(mem, ctl, Path(args.plot))
        print(f"plot: {args.plot}")
    return mem, ctl


if __name__ == "__main__":
    main()
