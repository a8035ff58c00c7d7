"""ltm as a service: the library's API over HTTP (FastAPI), with API keys scoped to namespaces, an MCP server
and a web inspector at ``/ui``.

``create_app(settings)`` builds the ASGI app; ``ltm serve`` runs it with uvicorn, ``ltm keys`` manages keys and
``ltm mcp`` starts the MCP server. Needs the ``service`` extra (``pip install '/path/to/ltm[service]'``, from the
checkout).
"""

from __future__ import annotations

from ltm.service.app import create_app
from ltm.service.keys import ApiKey, KeyStore, Principal
from ltm.service.state import Limits

__all__ = ["ApiKey", "KeyStore", "Limits", "Principal", "create_app"]
