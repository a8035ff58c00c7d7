"""The web inspector at ``/ui``: server-rendered pages over the same state and keys as the API.

Nothing is fetched from the internet: the page's CSS and its one small script are served from
``/ui/static``. With keys on, a person signs in once by pasting a key; it is kept in an HttpOnly,
SameSite=Strict cookie (so another site cannot make the browser approve a change), checked like a Bearer key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

__all__ = ["TEMPLATES", "mount_ui"]

_HERE = Path(__file__).parent
TEMPLATES = Jinja2Templates(directory=str(_HERE / "templates"))
TEMPLATES.env.filters["ns_url"] = lambda namespace: quote(str(namespace), safe="/")


def diff_lines(diff: str) -> list[dict[str, Any]]:
    """A unified diff as lines tagged add / del / hunk / head / same, for colouring."""
    out: list[dict[str, Any]] = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            kind = "head"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "same"
        out.append({"kind": kind, "text": line})
    return out


TEMPLATES.env.filters["diff_lines"] = diff_lines


def mount_ui(app: FastAPI) -> None:
    """Add the inspector's pages and its static files to ``app``."""
    from ltm.service.ui.pages import router

    app.mount("/ui/static", StaticFiles(directory=str(_HERE / "static")), name="ui-static")
    app.include_router(router)
