"""The eval-gated canary from the console (issue 37): a dataset and a test case, an
eval made from the forms, a rollout gated on it from the agent's page whose promotion is
refused in words while no run passed, a run on the canary version from the evals page
(the case answered by the canary's instructions and scored), its results, then the
promotion that now goes through."""

import os

from harness import run

ANSWER = "Invoices go out on the first of the month."


def steps(b):
    key = b.sign_up("evals@browser.test")
    status, p = b.api("POST", "/api/v1/ai-providers", {"name": "fake", "provider": "custom", "base_url": os.environ["QUARRY_UPSTREAM"], "default_model": "m"}, key)
    assert status == 201, p
    status, a = b.api("POST", "/api/v1/agents", {"ai_provider_id": p["id"], "name": "billing", "instructions": "Be vague."}, key)
    assert status == 201, a
    status, a2 = b.api("PATCH", f"/api/v1/agents/{a['id']}", {"instructions": "CANARY-RULES: be exact."}, key)
    assert status == 200 and a2["version"] == 2, a2

    b.go("/evals")
    b.wait("h1", "Evals")
    b.wait("#ev-ds-h + table, #ev-ds-h + p", "No datasets yet")
    b.fill("Dataset name", "invoices")
    b.press("Create dataset")
    b.wait("#notice", "Dataset invoices created")
    b.fill("Question", "When is my invoice issued?")
    b.fill("Expected answer (optional)", ANSWER)
    b.press("Add test case")
    b.wait("#notice", "Test case added to invoices")
    b.wait("td", "1")
    b.fill("Eval name", "invoice-suite")
    b.fill("Answer contains (optional)", "first of the month")
    b.press("Create eval")
    b.wait("#notice", "Eval invoice-suite created")
    b.wait("td", "contains “first of the month”")
    b.shot("evals-made")
    status, evs = b.api("GET", "/api/v1/evals", key=key)
    assert status == 200 and evs["total"] == 1, evs
    ev = evs["data"][0]["id"]

    # A rollout of v2 gated on the eval: promotion is refused while no run passed.
    b.go(f"/agents/{a['id']}")
    b.wait("#ag-rel-h", "Staged rollout")
    b.fill("Canary share, %", "10")
    b.fill("Promotion gate (optional)", ev)
    b.press("Start the rollout")
    b.wait(".ag-release", "promotion needs a passed run of eval")
    b.press("Promote canary v2")
    err = b.wait(".card [role=alert]")
    assert "PROMOTION_GATE_UNMET" in err.text, err.text
    b.shot("agent-gate-refused")

    # The run on the canary version, from the evals page.
    b.go("/evals")
    b.wait("td", "invoice-suite")
    b.fill("Agent version", "2")
    b.press("Run the eval")
    b.wait("#notice", "on v2: passed, 100% of cases passed")
    b.wait(".ev-verdict", "Version 2: passed")
    b.wait("td", ANSWER)
    b.shot("evals-run-passed")

    b.go(f"/agents/{a['id']}")
    b.press("Promote canary v2")
    b.wait("#notice", "Canary promoted")
    status, runs = b.api("GET", f"/api/v1/evals/{ev}/runs", key=key)
    assert status == 200 and [r["passed"] for r in runs["data"]] == [True], runs
    status, agent = b.api("GET", f"/api/v1/agents/{a['id']}", key=key)
    assert agent["active_release"] is None and agent["instructions"] == "CANARY-RULES: be exact.", agent


run("evals", steps)
