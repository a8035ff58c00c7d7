"""``ltm demo``: the team of agents that remembers across a restart."""

from __future__ import annotations

import argparse

from ltm.cli.common import EXIT_OK, AddCommand, Options, settings_from

COMMANDS = {"demo": "run the demo: a team of agents that remembers across a restart"}


def cmd_demo(args: argparse.Namespace) -> int:
    from ltm.demo import run_demo

    run_demo(settings_from(args), reset=args.reset)
    return EXIT_OK


def register(add: AddCommand, opts: Options) -> None:
    p = add("demo")
    p.add_argument("--reset", action="store_true", help="forget the demo team's memory first")
    p.set_defaults(func=cmd_demo)
