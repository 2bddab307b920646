"""Webhooks from the console: one made from the form pointing at a loopback receiver
the test runs (QUARRY_HOOK, from tests/it/browser.rs), its secret shown once with a
copy button and never again; a generation run (through the API) is delivered and
listed as delivered with the receiver's answer; redelivered; the secret rotated (the
new one shown once); the settings saved; the webhook deleted; one made in a second project."""

import os
import time

from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from harness import run

UPSTREAM = os.environ["QUARRY_UPSTREAM"]
HOOK = os.environ["QUARRY_HOOK"]


def made(b, key, path, body):
    status, out = b.api("POST", path, body, key)
    assert status == 201, (path, status, out)
    return out


def accept_confirm(b):
    WebDriverWait(b.d, 10).until(expected_conditions.alert_is_present())
    b.d.switch_to.alert.accept()


def delivered_rows(b, n, timeout=20):
    """Presses Refresh until `n` deliveries are listed, every one delivered."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            rows = b.all(".wh-deliveries tbody tr")
            if len(rows) == n and all("delivered" in r.text for r in rows):
                return rows
        except StaleElementReferenceException:
            pass  # redrawn meanwhile: read it again
        b.press("Refresh")
        time.sleep(0.5)
    raise AssertionError(f"not {n} delivered rows: {b.text('main')[:2000]}")


def steps(b):
    key = b.sign_up("hooks@browser.test")
    b.go("/webhooks")
    b.wait("h1", "Webhooks")
    b.wait("#wh-list-h + p", "No webhooks yet")

    b.fill("Name", "orders")
    b.fill("URL", HOOK)
    # Completed and failed are chosen to begin with; with none, the page says so.
    for ev in ("agents.generation.completed", "agents.generation.failed"):
        b.field(f"{ev} — " + ("it completed" if ev.endswith("completed") else "it failed")).click()
    b.press("Create webhook")
    err = b.wait("form [role=alert]")
    assert "at least one event" in err.text, err.text
    b.field("agents.generation.completed — it completed").click()
    b.shot("webhook-form")
    b.press("Create webhook")
    secret = b.wait("#wh-secret").text.strip()
    assert secret.startswith("whsec_"), secret
    b.wait("#wh-made-h", "Webhook orders created")
    b.wait(".wh-reveal", "not shown again")
    b.press("Copy secret")
    b.wait("#notice", "ecret")
    row = b.wait(".wh-table tbody tr", "orders")
    assert HOOK in row.text and "agents.generation.completed" in row.text, row.text
    b.shot("webhook-created")

    b.press("I have stored it: open orders")
    b.wait("h1", "Webhook: orders")
    b.wait("#wh-dl-h", "Deliveries (0)")
    assert secret not in b.text("body"), "the secret is shown once only"

    # A generation completes: its event is delivered to the receiver.
    provider = made(b, key, "/api/v1/ai-providers",
                    {"name": "scripted", "provider": "custom", "base_url": UPSTREAM, "default_model": "reader"})
    agent = made(b, key, "/api/v1/agents", {"name": "greeter", "ai_provider_id": provider["id"]})
    status, g = b.api("POST", f"/api/v1/agents/{agent['id']}/generate?wait=true",
                      {"messages": [{"role": "user", "content": "Say hello"}]}, key)
    assert status == 200 and g["status"] == "completed", (status, g)
    [row] = delivered_rows(b, 1)
    assert "agents.generation.completed" in row.text and "HTTP 200" in row.text, row.text
    assert row.find_element("css selector", "[data-label=Attempts]").text == "1", row.text
    b.shot("webhook-delivered")

    # Redelivered: a second delivery of the same event, delivered too.
    b.press("Redeliver", within=row)
    b.wait("#notice", "Redelivery queued as whd_")
    rows = delivered_rows(b, 2)
    assert all("agents.generation.completed" in r.text for r in rows)
    b.shot("webhook-redelivered")

    # The secret rotated: a new one, shown once.
    b.press("Rotate the secret")
    accept_confirm(b)
    b.wait("#notice", "Secret rotated")
    rotated = b.wait("#wh-secret").text.strip()
    assert rotated.startswith("whsec_") and rotated != secret, (secret, rotated)
    b.shot("webhook-rotated")

    # The settings: a new name, paused.
    b.fill("Name", "orders v2")
    b.field("Active: send events (off pauses the webhook)").click()
    b.press("Save changes")
    b.wait("#notice", "Webhook saved")
    b.wait("h1", "Webhook: orders v2")
    b.wait(".pairs", "no: paused")
    assert rotated not in b.text("body"), "the rotated secret is shown once only"
    status, w = b.api("GET", "/api/v1/webhooks", None, key)
    assert [(x["name"], x["active"], x["events"]) for x in w["data"]] == [("orders v2", False, ["agents.generation.completed"])], w

    b.press("Delete this webhook")
    accept_confirm(b)
    b.wait("#notice", "Webhook orders v2 deleted")
    b.wait("#wh-list-h + p", "No webhooks yet")

    # With a second project, the page lists and makes one project's webhooks.
    project = made(b, key, "/api/v1/projects", {"name": "staging"})
    b.go("/")
    b.go("/webhooks")
    b.wait("form.wh-project")
    b.select("Project", f"staging ({project['id']})")
    b.press("Show")
    b.wait("#wh-list-h", "Your webhooks (0)")
    b.fill("Name", "staging hook")
    b.fill("URL", HOOK)
    b.press("Create webhook")
    b.wait("#wh-made-h", "Webhook staging hook created")
    b.wait(".wh-table tbody tr", "staging hook")
    b.shot("webhooks-project")
    status, w = b.api("GET", f"/api/v1/webhooks?project_id={project['id']}", None, key)
    assert [x["name"] for x in w["data"]] == ["staging hook"], w
    status, w = b.api("GET", "/api/v1/webhooks", None, key)
    assert w["data"] == [], w


run("webhooks", steps)
