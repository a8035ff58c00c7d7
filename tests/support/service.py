"""A real ``ltm serve`` app under uvicorn, in a thread, on a free loopback port chosen by the kernel."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import httpx
import uvicorn

from ltm.config import Settings
from ltm.service import Limits, create_app
from ltm.service.server import ServerLimits, uvicorn_config


class ServiceThread:
    """Start with :meth:`start` (returns self once the server answers), stop with :meth:`close`."""

    def __init__(
        self,
        settings: Settings,
        *,
        auth: bool = True,
        limits: Limits | None = None,
        mcp: bool = False,
        server_limits: ServerLimits | None = None,
        **app_args: Any,
    ) -> None:
        self.settings = settings
        self.app = create_app(settings, auth=auth, limits=limits, mcp_path="/mcp" if mcp else None, **app_args)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn_config(self.app, limits=server_limits, access_log=False, log_level="warning", log_config=None)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def state(self) -> Any:
        return self.app.state.ltm

    def start(self) -> ServiceThread:
        self.thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not self.thread.is_alive():
                raise RuntimeError("the ltm server thread exited during start-up")
            try:
                if httpx.get(self.url + "/v1/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError("the ltm server did not answer /v1/health within 30 s")

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()


def mcp_text(result: Any) -> str:
    """The text of an MCP tool call's first content block."""
    from mcp.types import TextContent

    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text


def mcp_data(result: Any) -> Any:
    """An MCP tool call's answer as data: its structured content (unwrapped from ``{"result": ...}``) or its text
    read as JSON; the call must not have failed."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if set(data) == {"result"} else data
    return json.loads(mcp_text(result))
