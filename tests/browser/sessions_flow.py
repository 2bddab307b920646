"""A session from the console: an agent at the scripted upstream (QUARRY_UPSTREAM, from
tests/it/browser.rs) with a client tool, made through the API; from the agent's page
"New session"; a message whose generation is streamed from its events: the tool call
shows as it happens, the pause is answered from the page, the reply joins the
transcript; a second message streamed as text; a fork from the first reply; the
session closed (the message box with it), the list filtered by status, a delete."""

import os

from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from harness import run

UPSTREAM = os.environ["QUARRY_UPSTREAM"]


def made(b, key, path, body):
    status, out = b.api("POST", path, body, key)
    assert status == 201, (path, status, out)
    return out


def accept_confirm(b):
    WebDriverWait(b.d, 10).until(expected_conditions.alert_is_present())
    b.d.switch_to.alert.accept()


def steps(b):
    key = b.sign_up("sessions@browser.test")
    provider = made(b, key, "/api/v1/ai-providers",
                    {"name": "scripted", "provider": "custom", "base_url": UPSTREAM, "default_model": "reader"})
    tool = made(b, key, "/api/v1/tools", {
        "name": "lookup_order", "type": "client", "description": "An order's status",
        "parameters": {"type": "object", "properties": {"order": {"type": "integer"}}, "required": ["order"]}})
    agent = made(b, key, "/api/v1/agents", {
        "name": "order helper", "ai_provider_id": provider["id"], "instructions": "You answer about orders.",
        "tool_bindings": [{"tool_id": tool["id"]}]})

    b.go(f"/agents/{agent['id']}")
    b.wait("h1", "Agent: order helper")
    b.press("New session")
    b.wait("h1", "New session")
    chosen = b.js("const s = document.querySelector('select[name=agent_id]'); return s.options[s.selectedIndex].text")
    assert chosen == "order helper", chosen
    b.fill("Session name (optional)", "Ana's order")
    b.press("Create session")
    b.wait("h1", "Session: Ana's order")
    b.wait("#notice", "Session Ana's order started")
    b.wait("#se-status", "open")
    b.wait(".pg-note", "No messages yet")
    b.shot("session-new")

    # The first message: the model calls the client tool; the call shows as the
    # stream brings it, then the pause's form; the page's answer resumes the session.
    b.fill("Message", "Where is my order 42?")
    b.press("Send")
    call = b.wait(".pg-tool", "lookup_order")
    assert "42" in call.text and "your client answers it" in call.text, call.text
    b.wait(".pg-pause h2", "The agent is waiting for you")
    b.wait(".pg-live", "waiting for your answer to 1 tool call")
    b.js("document.querySelector(arguments[0]).scrollIntoView()", ".pg-pause")
    b.shot("session-paused")
    b.fill("Output for lookup_order", '{"status": "shipped", "eta": "Friday"}')
    b.press("Send the output")
    final = b.wait(".pg-final", "has shipped", timeout=30)
    assert "Friday" in final.text, final.text
    b.wait_gone(".pg-pause")
    b.wait(".pg-user", "Where is my order 42?")

    # The second: plain text, streamed from the generation's events into the transcript.
    b.fill("Message", "Thanks a lot")
    b.press("Send")
    b.wait(".pg-final", "You are welcome", timeout=30)
    b.wait(".pg-live", "The agent answered")
    assert len(b.all(".pg-user")) == 2 and len(b.all(".pg-assistant")) == 2, b.text(".pg-log")
    b.js("document.querySelector(arguments[0]).scrollIntoView()", ".pg-final")
    b.shot("session-answered")

    # What the API holds: the conversation, in order, and the session's record.
    status, s = b.api("GET", "/api/v1/sessions", None, key)
    session = s["data"][0]
    status, page = b.api("GET", f"/api/v1/conversations/{session['conversation_id']}/messages?limit=100", None, key)
    roles = [m["role"] for m in sorted(page["data"], key=lambda m: m["position"])]
    assert roles == ["user", "assistant", "user", "assistant"], page

    # A fork from the first reply: a new session holding the messages up to it.
    first_reply = b.all(".pg-assistant")[0]
    b.press("Fork from here", within=first_reply)
    b.wait("#notice", "Forked from message")
    b.wait(".se-facts", "Forked from")
    b.wait(".pg-assistant", "has shipped")
    assert len(b.all(".pg-msg")) == 2, b.text(".pg-log")
    b.shot("session-forked")
    # The parent lists its fork; back to the fork from there.
    b.press(session["id"])
    b.wait("h1", "Session: Ana's order")
    fork = b.wait(".ag-records li", "from message 1")
    b.press(fork.find_element("css selector", "a").text)
    b.wait(".se-facts", "Forked from")

    # Closed: the message box says so and takes nothing; reopened later if wanted.
    b.press("Close the session")
    b.wait("#notice", "Session closed")
    b.wait("#se-status", "closed")
    b.wait(".se-closed", "This session is closed")
    assert not b.field("Message").is_enabled(), "a closed session's box is disabled"
    b.shot("session-closed")

    # The list, filtered by status: the fork is the closed one.
    b.press("← All sessions")
    b.wait("#se-list-h", "Sessions (2)")
    b.select("Status", "closed")
    b.press("Filter")
    b.wait("#se-list-h", "Sessions (1)")
    row = b.wait(".se-table tbody tr", "closed")
    assert "(fork)" in row.text and "order helper" in row.text, row.text
    b.shot("sessions-list")

    # Deleted after a confirmation.
    b.press(row.find_element("css selector", "a").text)
    b.wait("h1", "Session: ")
    b.press("Delete the session")
    accept_confirm(b)
    b.wait("h1", "Sessions")
    b.wait("#notice", "deleted")
    b.wait("#se-list-h", "Sessions (1)")
    status, s = b.api("GET", "/api/v1/sessions", None, key)
    assert [x["name"] for x in s["data"]] == ["Ana's order"], s


run("sessions", steps)
