"""Actors from the console (issue 36): the empty list, an actor made from the form, the
same external id again answering that actor (nothing new), its sessions counted once
one names it, a delete refused in words once the actor has spoken, and another actor
deleted after the confirmation."""

from harness import run


def steps(b):
    key = b.sign_up("actors@browser.test")
    b.go("/actors")
    b.wait("h1", "Actors")
    b.wait("#ac-list-h + p", "No actors yet")
    b.shot("actors-empty")

    b.fill("Name", "Alice")
    b.fill("External id (optional)", "+15551234567")
    b.press("Create actor")
    b.wait("#notice", "Actor Alice created")
    b.wait("td", "+15551234567")
    b.fill("Name", "Alice again")
    b.fill("External id (optional)", "+15551234567")
    b.press("Create actor")
    b.wait("#notice", "already has that external id")
    status, page = b.api("GET", "/api/v1/actors", key=key)
    assert status == 200 and page["total"] == 1, page
    alice = page["data"][0]["id"]

    # A session names Alice, and she speaks in it.
    _, p = b.api("POST", "/api/v1/ai-providers", {"name": "p", "provider": "custom", "base_url": "http://127.0.0.1:9/v1", "default_model": "m"}, key)
    _, a = b.api("POST", "/api/v1/agents", {"ai_provider_id": p["id"], "name": "helper"}, key)
    status, s = b.api("POST", "/api/v1/sessions", {"agent_id": a["id"], "actor_id": alice}, key)
    assert status == 201, s
    status, _ = b.api("POST", f"/api/v1/sessions/{s['id']}/messages", {"message": "Bonjour"}, key)
    assert status == 201
    b.fill("Name", "Bob")
    b.press("Create actor")
    b.wait("#notice", "Actor Bob created")
    b.go("/")
    b.wait("h1", "Welcome")
    b.go("/actors")
    row = b.wait("tr", "Alice")
    cells = [c.text for c in row.find_elements("css selector", "td")]
    assert cells[2] == "1", cells
    b.shot("actors-list")

    b.js("window.confirm = () => true")
    b.press("Delete Alice")
    err = b.wait("td [role=alert]")
    assert "has spoken in a conversation" in err.text, err.text
    b.press("Delete Bob")
    b.wait("#notice", "Actor Bob deleted")
    status, page = b.api("GET", "/api/v1/actors", key=key)
    assert [x["name"] for x in page["data"]] == ["Alice"], page
    b.shot("actors-after-delete")


run("actors", steps)
