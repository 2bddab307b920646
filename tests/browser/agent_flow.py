"""An agent from the console, by its pages alone: an AI provider pointing at the scripted
upstream (QUARRY_UPSTREAM, from tests/it/browser.rs), a client tool and an agent made
from the agent form; the playground runs a streamed generation, the model calls the
client tool, the page shows the call and the pause, the output is answered from the
page's form and the final answer shown. Then a second version, a staged rollout
between the two, its promotion, and a restore from the versions list."""

import os

from harness import run

UPSTREAM = os.environ["QUARRY_UPSTREAM"]


def steps(b):
    key = b.sign_up("agent@browser.test")
    b.go("/agents")
    b.wait("h1", "Agents")
    b.wait("#ag-list-h + p", "No agents yet")
    b.shot("agents-empty")

    b.press("New agent")
    b.wait("h1", "New agent")
    b.wait("form.ag-form")
    b.fill("Name", "weather helper")
    # Without a provider the page says what to do, in words.
    b.press("Create agent")
    err = b.wait(".ag-form [role=alert]")
    assert "Choose an AI provider" in err.text, err.text
    b.press("New AI provider")
    b.fill("Provider name", "scripted")
    b.select("Kind", "OpenAI-compatible (custom)")
    b.fill("Base URL", UPSTREAM)
    b.fill("Default model", "reader")
    b.shot("agent-provider-form")
    b.press("Create provider")
    b.wait("#notice", "Provider scripted created")
    chosen = b.js("const s = document.querySelector('select[name=ai_provider_id]'); return s.options[s.selectedIndex].text")
    assert chosen.startswith("scripted (custom"), chosen
    # The provider's models, as the upstream lists them, offered for the model field.
    b.press("List the provider's models")
    b.wait(".ag-form .msg", "Models: reader, writer")

    b.fill("Instructions", "You help with the weather. Call get_weather for a city's weather.")
    b.press("New tool")
    b.fill("Tool name", "get_weather")
    b.select("Type", "client: the generation pauses until you answer it")
    b.fill("Description (optional)", "The weather in a city, from the user's device")
    # A schema the server refuses: its message, in words, beside the form.
    b.fill("Parameters (JSON Schema, optional)", '{"type": "nothing"}')
    b.press("Create tool")
    err = b.wait(".ag-subform [role=alert]")
    assert "not accepted" in err.text and "VALIDATION_FAILED" in err.text, err.text
    b.shot("agent-tool-refused")
    b.fill("Parameters (JSON Schema, optional)", '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}')
    b.press("Create tool")
    b.wait("#notice", "Tool get_weather created")
    box = b.wait(".ag-tools label", "get_weather")
    assert b.field(box.text).is_selected(), "the new tool is bound"
    b.js("document.querySelector(arguments[0]).scrollIntoView()", ".ag-tools")
    b.shot("agent-form")

    b.press("Create agent")
    b.wait("h1", "Agent: weather helper")
    b.wait("#ag-ver-h", "Versions (1)")
    b.shot("agent-created")

    b.press("Open the playground")
    b.wait("h1", "Playground: weather helper")
    b.fill("Message", "What is the weather in Paris?")
    b.press("Run")
    call = b.wait(".pg-tool", "get_weather")
    assert "Paris" in call.text and "your client answers it" in call.text, call.text
    b.wait(".pg-pause h2", "The agent is waiting for you")
    pause = b.wait(".pg-pause")
    assert "Paris" in pause.text, pause.text
    b.wait(".pg-live", "waiting for your answer to 1 tool call")
    b.js("document.querySelector(arguments[0]).scrollIntoView()", ".pg-pause")
    b.shot("playground-paused")

    b.fill("Output for get_weather", '{"forecast": "sunny", "high_c": 24}')
    b.press("Send the output")
    final = b.wait(".pg-final", "sunny", timeout=30)
    assert "24" in final.text, final.text
    b.wait_gone(".pg-pause")
    b.js("document.querySelector(arguments[0]).scrollIntoView()", ".pg-final")
    b.shot("playground-answered")

    # A second turn, streamed as text: the conversation so far goes with it.
    b.fill("Message", "And tomorrow?")
    b.press("Run")
    b.wait(".pg-final", "Tomorrow looks sunny too", timeout=30)
    assert len(b.all(".pg-final")) == 2 and len(b.all(".pg-user")) == 2
    b.js("document.querySelector(arguments[0]).scrollIntoView()", ".pg-final:last-of-type")
    b.shot("playground-second-turn")

    # The generation as the API records it: completed, the page's output in its transcript.
    status, gens = b.api("GET", "/api/v1/generations", None, key)
    assert status == 200 and [g["status"] for g in gens["data"]] == ["completed", "completed"], gens

    # A second version, a rollout between the two, promote; then a restore.
    b.press("Edit this agent")
    b.wait("#ag-ver-h", "Versions (1)")
    b.fill("Instructions", "You help with the weather, briefly.")
    b.fill("Version label (optional)", "brief")
    b.press("Save as a new version")
    b.wait("#ag-ver-h", "Versions (2)")
    b.wait("#notice", "Saved as version 2")
    # Promoting a canary whose configuration is live already writes nothing: the
    # rollout keeps v2 stable and tries v1 on a quarter of the traffic.
    b.select("Stable version", "v2 — brief")
    b.select("Canary version", "v1")
    b.fill("Canary share, %", "25")
    b.press("Start the rollout")
    b.wait(".ag-release", "stable v2, canary v1 on 25% of traffic")
    b.js("document.querySelector(arguments[0]).scrollIntoView()", "#ag-rel-h")
    b.shot("agent-rollout")
    b.press("Promote canary v1")
    b.wait("#notice", "Canary promoted")
    b.wait("#ag-ver-h", "Versions (3)")
    b.wait(".ag-versions li.current", "promoted canary v1")
    b.press("Restore v2")
    b.wait("#ag-ver-h", "Versions (4)")
    b.wait(".ag-versions li.current", "restored from v2")
    status, agents = b.api("GET", "/api/v1/agents", None, key)
    a = agents["data"][0]
    assert a["version"] == 4 and a["active_release"] is None and a["instructions"] == "You help with the weather, briefly.", a
    b.js("document.querySelector(arguments[0]).scrollIntoView()", "#ag-ver-h")
    b.shot("agent-versions")

    # The list: the agent, its version, its playground; the provider and the tool.
    b.press("← All agents")
    row = b.wait(".ag-table tbody tr", "weather helper")
    assert "v4" in row.text and "Playground for weather helper" in row.text, row.text
    b.wait(".ag-records li", "scripted")
    b.wait(".ag-records li", "get_weather")
    b.shot("agents-list")


run("agent", steps)
