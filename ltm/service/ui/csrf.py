"""The inspector's guard against forms posted from other sites: an Origin check and a token.

Every state-changing form (sign in, sign out, summarize, title, approve, reject) carries a hidden ``csrf``
field equal to the ``ltm_csrf`` cookie (random, HttpOnly, SameSite=Strict, path ``/ui``) that the page set.
A POST is served only when

- its ``Origin`` header (or, when a browser sent none, its ``Referer``) names this server's own host, and
- its ``csrf`` field equals the cookie (compared in constant time).

Another site can neither read the cookie nor make the browser send it, so a form it posts fails the token
check even in ``--no-auth`` mode, where no key cookie exists to protect.
"""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

from fastapi import Request
from starlette.responses import Response

from ltm.errors import Forbidden

__all__ = ["CSRF_COOKIE", "check_csrf", "csrf_token", "set_csrf_cookie"]

CSRF_COOKIE = "ltm_csrf"


def csrf_token(request: Request) -> tuple[str, bool]:
    """The token of this browser (from its cookie) and False, or a new one and True (set it on the answer)."""
    token = request.cookies.get(CSRF_COOKIE, "")
    if len(token) >= 32:
        return token, False
    return secrets.token_urlsafe(32), True


def set_csrf_cookie(response: Response, token: str) -> None:
    """Keep ``token`` in the browser for the inspector's later forms."""
    response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict", path="/ui")


def _same_host(url: str, host: str) -> bool:
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return False
    return bool(netloc) and netloc.lower() == host.lower()


def check_csrf(request: Request, token: str) -> None:
    """Forbidden unless the POST comes from this server's own pages (see the module's docstring)."""
    host = request.headers.get("host", "")
    origin = request.headers.get("origin")
    source = origin if origin is not None else request.headers.get("referer", "")
    if not host or not _same_host(source, host):
        raise Forbidden(
            "this form was not sent from the inspector's own page (its Origin is another site or "
            "missing); open the inspector and use its buttons"
        )
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not cookie or not token or not secrets.compare_digest(cookie.encode(), token.encode()):
        raise Forbidden("this form's token is missing or stale; reload the inspector's page and try again")
