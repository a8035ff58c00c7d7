"""The web inspector in headless Chromium (Debian's package, driven by Playwright): sign in, page through
messages, search with the mode switch and per-signal scores, a chat's summary, approve and reject memory-file
changes as diffs, lessons and policies. Screenshots go to tmp_path, or to docs/screenshots/ with
LTM_SCREENSHOTS=1 (that is how the pictures of docs/service.md are made)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from ltm.config import Settings
from tests.support.service import ServiceThread

ROOT = Path(__file__).resolve().parents[2]
NS = "team-a/support"
SAVE_TO_DOCS = os.environ.get("LTM_SCREENSHOTS") == "1"  # read at import: the tests run with LTM_* cleared

pytestmark = pytest.mark.slow

NOTES = [
    "Customer 4411 asked for a refund; the order was not delivered yet, so we waited.",
    "The checkout page timed out during the Friday deploy; rolled back at 17:05.",
    "Alice prefers email over phone calls for billing questions.",
    "Refunds above 500 EUR need a manager's approval before they are issued.",
    "The VPN certificate expires on March 3; renew it a week before.",
    "Bob moved the on-call handbook to the wiki under Operations.",
    "A duplicate charge happened when the payment provider retried a webhook.",
    "Shipping to Norway takes five working days since the carrier change.",
]


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    if SAVE_TO_DOCS:
        target = ROOT / "docs" / "screenshots"
        target.mkdir(parents=True, exist_ok=True)
        return target
    return tmp_path


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[tuple[ServiceThread, str]]:
    settings = Settings(storage_dir=tmp_path / "storage", embedding="local")
    service = ServiceThread(settings).start()
    key, _ = service.state.keys.create(["team-a/*"], label="inspector")
    api = httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=120)
    base = f"/v1/namespaces/{NS}"
    many = [{"content": f"Ticket {i}: routine password reset for user {i}", "role": "agent"} for i in range(60)]
    api.post(base + "/messages", json={"messages": many}).raise_for_status()
    api.post(base + "/messages", json={"messages": [{"content": t, "role": "agent"} for t in NOTES]}).raise_for_status()
    chat = [
        {"content": "Hi, I was charged twice for order 8812", "role": "user"},
        {"content": "Sorry about that. I see two charges from the payment provider's retry.", "role": "assistant"},
        {"content": "Can you refund the duplicate to my card?", "role": "user"},
        {"content": "Done: the duplicate charge is refunded and will show in 3-5 days.", "role": "assistant"},
    ]
    api.post(base + "/chats/order-8812/messages", json={"messages": chat}).raise_for_status()
    first = api.post(
        base + "/files/changes",
        json={
            "path": "AGENTS.md",
            "reason": "learned from ticket 4411",
            "text": "# Support agent\n\n- Check the order is delivered before refunding.\n",
        },
    ).json()
    change = api.post(base + f"/files/changes/{first['id']}/approve").json()
    assert change["status"] == "applied"
    api.post(
        base + "/files/changes",
        json={
            "path": "AGENTS.md",
            "reason": "refund limit from the finance team",
            "text": "# Support agent\n\n- Check the order is delivered before refunding.\n"
            "- Refunds above 500 EUR need a manager's approval.\n",
        },
    ).raise_for_status()
    api.post(
        base + "/files/changes",
        json={"path": "notes/vpn.md", "reason": "agent's own idea", "text": "Disable the VPN when it is slow.\n"},
    ).raise_for_status()
    for i, error in enumerate(
        ["order 4411 is not delivered yet", "order 5120 is not delivered yet", "order 6001 is not delivered yet"]
    ):
        api.post(
            base + "/experience/lessons", json={"tool": "refund_order", "error": error, "task": f"refund request #{i}"}
        ).raise_for_status()
    api.post(base + "/experience/distill").raise_for_status()
    api.close()
    yield service, key
    service.close()


def _sign_in(page: Page, url: str, key: str) -> None:
    page.goto(url + "/ui")
    expect(page).to_have_url(url + "/ui/login")
    page.fill("#key", "ltm_00000000_wrong")
    page.click("#sign-in")
    expect(page.locator("#login-error")).to_be_visible()
    page.fill("#key", key)
    page.click("#sign-in")
    expect(page.get_by_role("link", name=NS)).to_be_visible()


def test_search_with_mode_switch_and_signal_scores(
    browser: Browser, seeded: tuple[ServiceThread, str], shots: Path
) -> None:
    service, key = seeded
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    _sign_in(page, service.url, key)
    page.get_by_role("link", name=NS).click()
    expect(page.locator("h1")).to_contain_text("Messages (68)")
    assert page.locator("table.messages tbody tr").count() == 50
    page.click("#next-page")
    assert page.locator("table.messages tbody tr").count() == 18
    expect(page.locator("table.messages")).to_contain_text("Shipping to Norway")

    page.get_by_role("link", name="Search").click()
    page.fill("#query", "money taken twice for a purchase")  # no word in common, stemmed or not (not "times", "one")
    page.click("#search-button")
    hits = page.locator("tr.hit")
    expect(hits.filter(has_text="duplicate charge")).to_have_count(1)  # found by meaning: no word in common
    dense = hits.filter(has_text="duplicate charge").locator("td.num").nth(1).inner_text()
    assert 0.0 < float(dense) <= 1.0  # its dense cosine beside the fused score
    page.screenshot(path=str(shots / "ui-search.png"))

    page.check("input[name=mode][value=keyword]")  # the switch re-runs the search by itself
    page.wait_for_url("**mode=keyword**")
    expect(page.locator("#hits")).to_be_visible()
    expect(page.locator("#hits")).not_to_contain_text("duplicate charge")  # no word in common: keywords miss it
    page.fill("#query", "refund approval")
    page.click("#search-button")
    rows = page.locator("tr.hit")
    expect(rows.first).to_contain_text("Refunds above 500 EUR")
    for i in range(rows.count()):
        assert rows.nth(i).locator(".tag").all_inner_texts() == ["keyword"]
        assert float(rows.nth(i).locator("td.num").nth(2).inner_text()) > 0  # its BM25 score
    page.close()


def test_approve_and_reject_changes_and_read_chat_and_policies(
    browser: Browser, seeded: tuple[ServiceThread, str], shots: Path
) -> None:
    service, key = seeded
    api = httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"})
    second, third = (c["id"] for c in api.get(f"/v1/namespaces/{NS}/files/changes").json()["changes"])
    assert second.startswith("2-") and third.startswith("3-")  # counted, and unguessable past the dash
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    _sign_in(page, service.url, key)
    page.goto(f"{service.url}/ui/ns/{NS}/files")
    change = page.locator(f"#change-{second}")
    expect(change.locator("pre.diff .add")).to_contain_text("+- Refunds above 500 EUR need a manager's approval.")
    expect(page.locator(f"#change-{third}")).to_contain_text("notes/vpn.md")
    page.screenshot(path=str(shots / "ui-approval.png"), full_page=True)

    page.click(f"#approve-{second}")
    expect(page.locator("#notice")).to_contain_text(f"approved {second}")
    expect(page.locator(f"#change-{second}")).to_have_count(0)
    expect(page.locator("#files")).to_contain_text("AGENTS.md")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click(f"#reject-{third}")
    expect(page.locator("#notice")).to_contain_text(f"rejected {third}")
    expect(page.locator("#no-pending")).to_be_visible()
    text = api.get(f"/v1/namespaces/{NS}/files/content/AGENTS.md").json()["text"]
    assert "500 EUR" in text  # the approval reached the store
    assert api.get(f"/v1/namespaces/{NS}/files").json()["files"][0]["path"] == "AGENTS.md"  # vpn.md rejected
    api.close()

    page.get_by_role("link", name="Chats").click()
    page.get_by_role("link", name="order-8812").click()
    expect(page.locator("ol.history li")).to_have_count(4)
    page.click("#summarize")
    expect(page.locator("#confirm-what")).to_contain_text("4 turns")
    page.click("#confirm")
    expect(page.locator("#chat-summary")).to_contain_text("charged twice")
    page.click("#make-title")
    page.click("#confirm")
    expect(page.locator("#chat-title")).to_be_visible()
    later = [
        {"content": "Thanks! Will I get an email when it lands?", "role": "user"},
        {"content": "Yes, the payment provider emails you once the refund is processed.", "role": "assistant"},
    ]
    httpx.post(
        f"{service.url}/v1/namespaces/{NS}/chats/order-8812/messages",
        json={"messages": later},
        headers={"Authorization": f"Bearer {key}"},
    ).raise_for_status()
    page.reload()
    expect(page.locator("ol.history li")).to_have_count(2)  # new turns beside the summary of the earlier ones
    expect(page.locator("#chat-summary")).to_contain_text("charged twice")
    page.screenshot(path=str(shots / "ui-chat.png"))

    page.get_by_role("link", name="Lessons & policies").click()
    expect(page.locator("table.policies")).to_contain_text("refund_order")
    expect(page.locator("table.lessons tbody tr")).to_have_count(3)
    page.screenshot(path=str(shots / "ui-experience.png"))
    page.close()


def test_a_key_sees_only_its_namespaces(browser: Browser, seeded: tuple[ServiceThread, str]) -> None:
    service, _ = seeded
    reader, _ = service.state.keys.create(["team-b/*"], read_only=True)
    page = browser.new_page()
    page.goto(service.url + "/ui/login")
    page.fill("#key", reader)
    page.click("#sign-in")
    expect(page.locator("ul.namespaces")).to_have_count(0)  # team-a is not listed for a team-b key
    response = page.goto(f"{service.url}/ui/ns/{NS}/messages")
    assert response is not None and response.status == 403
    expect(page.locator("h1")).to_have_text("Forbidden")
    page.close()


def test_header_before_and_after_signing_in(browser: Browser, seeded: tuple[ServiceThread, str]) -> None:
    """No namespace in the header of a page that has none (not Jinja2's namespace helper), and "Sign out" only once
    signed in."""
    service, key = seeded
    page = browser.new_page()
    page.goto(service.url + "/ui/login")
    expect(page.locator("header")).not_to_contain_text("jinja2")
    expect(page.locator("header nav")).to_have_count(0)
    expect(page.locator("form.logout")).to_have_count(0)
    _sign_in(page, service.url, key)
    expect(page.locator("header")).not_to_contain_text("jinja2")
    expect(page.locator("header nav")).to_have_count(0)
    expect(page.locator("form.logout button")).to_have_text("Sign out")
    page.close()


def test_a_message_has_its_own_page(browser: Browser, seeded: tuple[ServiceThread, str]) -> None:
    service, key = seeded
    api = httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=120)
    stored = api.get(f"/v1/namespaces/{NS}/messages", params={"limit": 100}).json()["messages"]
    target = next(m for m in stored if m["content"] == NOTES[3])
    api.close()
    page = browser.new_page()
    _sign_in(page, service.url, key)
    page.goto(f"{service.url}/ui/ns/{NS}/messages")
    page.get_by_role("link", name="Next page").click()
    page.get_by_role("link", name=target["id"][:8]).click()
    expect(page).to_have_url(f"{service.url}/ui/ns/{NS}/messages/{target['id']}")
    expect(page.locator("#message-id")).to_have_text(target["id"])
    expect(page.locator("#message-content")).to_have_text(NOTES[3])
    expect(page.locator("table.history-events")).to_contain_text("ADD")
    page.close()


def test_titling_a_chat_asks_first_and_says_what_it_removes(
    browser: Browser, seeded: tuple[ServiceThread, str]
) -> None:
    service, key = seeded
    page = browser.new_page()
    _sign_in(page, service.url, key)
    page.goto(f"{service.url}/ui/ns/{NS}/chats/order-8812")
    page.click("#make-title")
    expect(page.locator("#confirm-what")).to_contain_text("4 turns not yet summarized")
    expect(page.locator("#confirm-what")).to_contain_text("removed from its history")
    page.click("#cancel")
    expect(page.locator("ol.history li")).to_have_count(4)  # nothing happened
    # a POST without the confirmation (a stray form, an old page) only shows the question
    asked = page.request.post(f"{service.url}/ui/ns/{NS}/chats/order-8812/title")
    assert asked.status == 200 and "cannot be undone" in asked.text()
    page.reload()
    expect(page.locator("ol.history li")).to_have_count(4)
    page.click("#make-title")
    page.click("#confirm")
    expect(page.locator("#chat-title")).to_be_visible()
    expect(page.locator("ol.history li")).to_have_count(0)
    page.close()
