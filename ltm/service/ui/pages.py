"""The inspector's pages: namespaces, messages, search, chats, memory files (approve / reject), experience."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ltm.errors import AuthRequired, LTMError, NotFound
from ltm.service.auth import COOKIE, caller, read_access, state_of, write_access
from ltm.service.catalog import namespace_names
from ltm.service.errors import status_of
from ltm.service.routes.chats import load_chat
from ltm.service.routes.search import signal_scores
from ltm.service.schemas import SearchIn
from ltm.service.ui import TEMPLATES
from ltm.service.ui.csrf import check_csrf, csrf_token, set_csrf_cookie
from ltm.store import MessagePage

__all__ = ["router"]

router = APIRouter(prefix="/ui", include_in_schema=False)
PAGE = 50


def _q(namespace: str) -> str:
    return quote(namespace, safe="/")


def _render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    auth = state_of(request).auth
    token, new = csrf_token(request)
    response = TEMPLATES.TemplateResponse(
        request,
        name,
        {"auth": auth, "signed_in": auth and _signed_in(request), "csrf": token, "namespace": None, **context},
        status_code=status,
    )
    if new:
        set_csrf_cookie(response, token)
    return response


def _signed_in(request: Request) -> bool:
    """True when the browser holds a key the service knows (the header then offers to sign out)."""
    key = request.cookies.get(COOKIE)
    return key is not None and state_of(request).keys.lookup(key.strip()) is not None


def _failed(request: Request, exc: LTMError, namespace: str | None = None) -> Response:
    if isinstance(exc, AuthRequired):
        return RedirectResponse("/ui/login", status_code=303)
    return _render(
        request, "error.html", status_of(exc), error=type(exc).__name__, message=str(exc), namespace=namespace
    )


@router.get("/login")
def login_form(request: Request) -> HTMLResponse:
    """A form to paste an API key."""
    return _render(request, "login.html")


Token = Annotated[str, Form()]


@router.post("/login")
def login(request: Request, key: Annotated[str, Form()], csrf: Token = "") -> Response:
    """Check the key and keep it in an HttpOnly cookie (sent back to ``/ui`` only)."""
    try:
        check_csrf(request, csrf)
    except LTMError as exc:
        return _failed(request, exc)
    if state_of(request).keys.lookup(key.strip()) is None:
        return _render(request, "login.html", 401, failed=True)
    response = RedirectResponse("/ui", status_code=303)
    response.set_cookie(COOKIE, key.strip(), httponly=True, samesite="strict", path="/ui")
    return response


@router.post("/logout")
def logout(request: Request, csrf: Token = "") -> Response:
    """Forget the key cookie."""
    try:
        check_csrf(request, csrf)
    except LTMError as exc:
        return _failed(request, exc)
    response = RedirectResponse("/ui/login", status_code=303)
    response.delete_cookie(COOKIE, path="/ui")
    response.delete_cookie(COOKIE, path="/")  # where an older inspector set it
    return response


@router.get("")
def home(request: Request, namespace: str | None = None) -> Response:
    """Pick a namespace: those on disk that the key may use, or type one."""
    if namespace:
        return RedirectResponse(f"/ui/ns/{_q(namespace)}/messages", status_code=303)
    try:
        who = caller(request)
    except LTMError as exc:
        return _failed(request, exc)
    names = [n for n in namespace_names(state_of(request).settings) if who.may_use(n)]
    return _render(request, "home.html", namespaces=names, read_only=who.read_only)


@router.get("/ns/{namespace:path}/search")
def search(
    request: Request, namespace: str, q: str = "", mode: str = "hybrid", k: Annotated[int, Query(ge=1, le=100)] = 10
) -> Response:
    """Search with a mode switch; each hit shows its fused score and its dense and keyword scores."""
    try:
        read_access(request, namespace)
        hits: list[dict[str, Any]] = []
        store = state_of(request).existing_store(namespace) if q.strip() else None
        if store is not None:
            body = SearchIn.model_validate(
                {"query": q, "k": k, "mode": mode if mode in ("hybrid", "dense", "keyword") else "hybrid"}
            )
            scores = signal_scores(store, body)
            hits = [
                {"hit": h, "scores": scores.get(h.message.id, {})}
                for h in store.search(body.query, body.k, mode=body.mode)
            ]
    except LTMError as exc:
        return _failed(request, exc, namespace)
    return _render(request, "search.html", namespace=namespace, tab="search", q=q, mode=mode, k=k, hits=hits)


@router.get("/ns/{namespace:path}/chats/{chat_id}")
async def chat(request: Request, namespace: str, chat_id: str, offset: Annotated[int, Query(ge=0)] = 0) -> Response:
    """A chat's summary and history, a page at a time; buttons to summarize and title it."""
    try:
        read_access(request, namespace)
        memory = await load_chat(request, namespace, chat_id)
    except LTMError as exc:
        return _failed(request, exc, namespace)
    page = memory.history[offset : offset + PAGE]
    following = offset + PAGE if offset + PAGE < len(memory.history) else None
    return _render(
        request,
        "chat.html",
        namespace=namespace,
        tab="chats",
        chat_id=chat_id,
        memory=memory,
        page=page,
        offset=offset,
        following=following,
        title=request.query_params.get("title"),
    )


# What each of a chat's buttons does to it, said on its confirmation page before anything changes.
_CHAT_ACTIONS = {
    "summarize": "Summarizing folds the chat's {n} turns not yet summarized into its summary and removes them from "
    "its history.",
    "title": "Titling summarizes the chat first: its {n} turns not yet summarized are folded into its summary and "
    "removed from its history; then a title is made from the summary.",
}


async def _confirm(request: Request, namespace: str, chat_id: str, action: str) -> Response:
    """The page that says what ``action`` will do to the chat and asks to go on (the action's POST needs it)."""
    try:
        write_access(request, namespace)
        memory = await load_chat(request, namespace, chat_id)
    except LTMError as exc:
        return _failed(request, exc, namespace)
    return _render(
        request,
        "confirm.html",
        namespace=namespace,
        tab="chats",
        chat_id=chat_id,
        action=action,
        what=_CHAT_ACTIONS[action].format(n=len(memory.history)),
    )


@router.get("/ns/{namespace:path}/chats/{chat_id}/summarize")
async def confirm_summarize(request: Request, namespace: str, chat_id: str) -> Response:
    """Ask before summarizing: it removes the chat's turns."""
    return await _confirm(request, namespace, chat_id, "summarize")


@router.post("/ns/{namespace:path}/chats/{chat_id}/summarize")
async def summarize(
    request: Request, namespace: str, chat_id: str, csrf: Token = "", confirm: Annotated[str, Form()] = ""
) -> Response:
    """Fold the chat's history into its summary (once confirmed), then show the chat."""
    if confirm != "yes":
        return await _confirm(request, namespace, chat_id, "summarize")
    try:
        check_csrf(request, csrf)
        write_access(request, namespace)
        await (await load_chat(request, namespace, chat_id)).summarize()
    except LTMError as exc:
        return _failed(request, exc, namespace)
    return RedirectResponse(f"/ui/ns/{_q(namespace)}/chats/{quote(chat_id, safe='')}", status_code=303)


@router.get("/ns/{namespace:path}/chats/{chat_id}/title")
async def confirm_title(request: Request, namespace: str, chat_id: str) -> Response:
    """Ask before titling: it summarizes the chat first, which removes its turns."""
    return await _confirm(request, namespace, chat_id, "title")


@router.post("/ns/{namespace:path}/chats/{chat_id}/title")
async def title(
    request: Request, namespace: str, chat_id: str, csrf: Token = "", confirm: Annotated[str, Form()] = ""
) -> Response:
    """Title the chat (summarizes first; once confirmed), then show it with its title."""
    if confirm != "yes":
        return await _confirm(request, namespace, chat_id, "title")
    try:
        check_csrf(request, csrf)
        write_access(request, namespace)
        text = await (await load_chat(request, namespace, chat_id)).get_title()
    except LTMError as exc:
        return _failed(request, exc, namespace)
    target = f"/ui/ns/{_q(namespace)}/chats/{quote(chat_id, safe='')}?title={quote(text)}"
    return RedirectResponse(target, status_code=303)


@router.get("/ns/{namespace:path}/chats")
def chats(request: Request, namespace: str) -> Response:
    """The namespace's chats."""
    from ltm.service.routes.chats import chat_ids

    try:
        read_access(request, namespace)
        ids = chat_ids(request, namespace)
    except LTMError as exc:
        return _failed(request, exc, namespace)
    ttl = state_of(request).settings.brain_ttl_seconds
    return _render(request, "chats.html", namespace=namespace, tab="chats", chats=ids, ttl=ttl)


@router.post("/ns/{namespace:path}/files/{change_id}/approve")
def approve(request: Request, namespace: str, change_id: str, csrf: Token = "") -> Response:
    """Apply a pending change, then show the files page."""
    try:
        check_csrf(request, csrf)
        write_access(request, namespace)
        state_of(request).files(namespace).approve(change_id)
    except LTMError as exc:
        return _failed(request, exc, namespace)
    return RedirectResponse(f"/ui/ns/{_q(namespace)}/files?done=approved+{change_id}", status_code=303)


@router.post("/ns/{namespace:path}/files/{change_id}/reject")
def reject(
    request: Request, namespace: str, change_id: str, reason: Annotated[str, Form()] = "", csrf: Token = ""
) -> Response:
    """Drop a pending change (kept in the audit log), then show the files page."""
    try:
        check_csrf(request, csrf)
        write_access(request, namespace)
        state_of(request).files(namespace).reject(change_id, reason)
    except LTMError as exc:
        return _failed(request, exc, namespace)
    return RedirectResponse(f"/ui/ns/{_q(namespace)}/files?done=rejected+{change_id}", status_code=303)


@router.get("/ns/{namespace:path}/files")
def files(request: Request, namespace: str, done: str = "") -> Response:
    """Pending changes as diffs with approve / reject, and the approved files."""
    try:
        who = caller(request)
        read_access(request, namespace)
        fs = state_of(request).files(namespace)
        changes = [{"change": c, "diff": fs.diff(c.id)} for c in fs.pending()]
        approved = sorted(fs.files().items())
        decided = list(reversed(fs.decided(10)))
    except LTMError as exc:
        return _failed(request, exc, namespace)
    return _render(
        request,
        "files.html",
        namespace=namespace,
        tab="files",
        changes=changes,
        approved=approved,
        decided=decided,
        done=done,
        read_only=who.read_only,
    )


@router.get("/ns/{namespace:path}/experience")
def experience(request: Request, namespace: str) -> Response:
    """Lessons and the policies distilled from them."""
    try:
        read_access(request, namespace)
        memory = state_of(request).existing_experience(namespace)
        lessons, policies = ([], []) if memory is None else (memory.lessons(pending_only=False), memory.policies())
    except LTMError as exc:
        return _failed(request, exc, namespace)
    return _render(
        request, "experience.html", namespace=namespace, tab="experience", lessons=lessons[-200:], policies=policies
    )


@router.get("/ns/{namespace:path}/messages/{message_id}")
def message(request: Request, namespace: str, message_id: str) -> Response:
    """One message: every field, and its ADD / UPDATE / DELETE history."""
    try:
        read_access(request, namespace)
        store = state_of(request).existing_store(namespace)
        if store is None:
            raise NotFound(f"no namespace {namespace!r}")
        found = store.get(message_id)
        events = store.history(message_id) if hasattr(store, "history") else []
    except LTMError as exc:
        return _failed(request, exc, namespace)
    return _render(request, "message.html", namespace=namespace, tab="messages", message=found, events=events)


@router.get("/ns/{namespace:path}/messages")
def messages(request: Request, namespace: str, cursor: str | None = None) -> Response:
    """The namespace's messages, oldest first, a page at a time."""
    try:
        read_access(request, namespace)
        store = state_of(request).existing_store(namespace)
        page = MessagePage([], None) if store is None else store.list(limit=PAGE, cursor=cursor)
        count = 0 if store is None else store.count()
    except LTMError as exc:
        return _failed(request, exc, namespace)
    return _render(request, "messages.html", namespace=namespace, tab="messages", page=page, count=count, cursor=cursor)
