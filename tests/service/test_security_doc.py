"""docs/security.md's reverse-proxy set-up agrees with the server it fronts: the ``ltm serve`` line parses with the
real command's parser, and the nginx block sends to that port and allows the body size the server allows."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from ltm.cli import _parser

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text("utf-8")


def _block(lang: str) -> str:
    match = re.search(rf"^```{lang}\n(.*?)^```", PAGE, re.S | re.M)
    assert match, f"docs/security.md has no {lang} block"
    return match.group(1)


def test_the_serve_line_parses_and_the_proxy_matches_it() -> None:
    argv = shlex.split(_block("bash"))
    assert argv[0] == "ltm"
    top, _ = _parser()
    args = top.parse_args(argv[1:])
    assert args.command == "serve" and args.host == "127.0.0.1"
    nginx = _block("nginx")
    assert f"proxy_pass http://127.0.0.1:{args.port};" in nginx
    server_name = re.search(r"server_name\s+([^;]+);", nginx)
    assert server_name and server_name.group(1).strip() in args.allow_host
    body = re.search(r"client_max_body_size\s+(\d+)m;", nginx)
    assert body and int(body.group(1)) * 1024 * 1024 == args.max_body_bytes
