"""The ``ltm`` command: a thin layer over the library (every command calls the public API).

Each module of this package holds one group of commands: a ``COMMANDS`` dict (name -> one-line help) and a
``register(add, opts)`` that builds their sub-parsers. A new group is a new module listed in ``_GROUPS``.

Exit codes: 0 success; 1 an ltm error (one line on stderr, no traceback); 2 bad usage; 3 not found;
4 declined at a prompt; 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from ltm import __version__
from ltm.cli import demo, forget, memories, messages, migrate, namespaces, service
from ltm.cli.common import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_NOT_FOUND, EXIT_OK, Options
from ltm.cli.output import visible
from ltm.errors import ConfigError, LTMError, NotFound

__all__ = ["COMMANDS", "main"]

_GROUPS: tuple[ModuleType, ...] = (demo, messages, memories, forget, namespaces, service, migrate)

COMMANDS: dict[str, str] = {name: help_ for group in _GROUPS for name, help_ in group.COMMANDS.items()}


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser and each command's own (a bad flag is reported with that command's usage)."""
    opts = Options()
    parser = argparse.ArgumentParser(
        prog="ltm",
        description="ltm: long-term memory for LLM agents.",
        epilog="Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 declined.",
    )
    parser.add_argument("--version", action="version", version=f"ltm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands: dict[str, argparse.ArgumentParser] = {}

    def add(name: str, *parents: argparse.ArgumentParser) -> argparse.ArgumentParser:
        commands[name] = sub.add_parser(
            name, help=COMMANDS[name], description=COMMANDS[name], parents=[opts.common, *parents]
        )
        return commands[name]

    for group in _GROUPS:
        group.register(add, opts)
    return parser, commands


def _configure_logging(verbose: int) -> None:
    """Log to stderr at LTM_LOG_LEVEL; each -v lowers it a step (INFO, DEBUG). Without either, logging is left
    as it is (Python prints warnings and errors to stderr), so calling :func:`main` in a process that configured
    its own logging (a test run, an application) changes nothing there."""
    named = os.environ.get("LTM_LOG_LEVEL")
    if named is None and not verbose:
        return
    level = logging.getLevelName((named or "WARNING").upper())
    if not isinstance(level, int):
        raise ConfigError(f"LTM_LOG_LEVEL={named!r} is not a level: use DEBUG, INFO, WARNING, ERROR or CRITICAL")
    if verbose:
        level = min(level, logging.INFO if verbose == 1 else logging.DEBUG)
    logging.basicConfig(level=level, stream=sys.stderr, format="ltm: %(levelname)s %(name)s: %(message)s")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ltm`` console script; returns the exit code."""
    parser, commands = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # argparse would print the top-level usage: the command's says what it takes
        commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        _configure_logging(args.verbose)
        return int(args.func(args))
    except NotFound as exc:
        print(f"ltm: not found: {visible(exc)}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except LTMError as exc:
        print(f"ltm: error: {visible(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt as exc:
        print(f"ltm: interrupted: {visible(exc)}" if str(exc) else "ltm: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except RecursionError:
        print("ltm: error: input nested too deeply; flatten it", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:  # a missing file, a folder given as a file, read-only media: one line, no traceback
        where = f": {visible(exc.filename)}" if exc.filename else ""
        print(f"ltm: error: {visible(exc.strerror or exc)}{where}", file=sys.stderr)
        return EXIT_ERROR
