"""Offline tests of the tutorials' `soat` stand-in and of the runner's parsing and
checks (`pytest tests/tutorials`, run by tests/it/soat_tutorials.rs): each command line
against a tiny recording HTTP server on loopback, no Quarry."""

import hashlib
import hmac
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_tutorial  # noqa: E402
import soat  # noqa: E402


@pytest.fixture(scope="module")
def routes(tmp_path_factory):
    path = tmp_path_factory.mktemp("routes") / "routes.json"
    path.write_text(json.dumps(soat.Specs(soat.SPECS).routes()))
    return str(path)


@pytest.fixture
def fake():
    """A loopback server recording each request and answering what the test sets."""
    seen, answer = [], {"status": 200, "body": {"ok": True}}

    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def handle_one(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            seen.append({"method": self.command, "path": self.path, "auth": self.headers.get("Authorization"), "body": json.loads(body) if body else None})
            data = json.dumps(answer["body"]).encode()
            self.send_response(answer["status"])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_one

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen, answer
    server.shutdown()


def run(routes, base, *args, token="tok_1", home=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOAT_")}
    env.update(SOAT_BASE_URL=base, SOAT_ROUTES=routes, HOME=home or os.environ.get("HOME", "/tmp"))
    if token:
        env["SOAT_TOKEN"] = token
    return subprocess.run([sys.executable, os.path.join(HERE, "soat.py"), *args], env=env, capture_output=True, text=True, timeout=30)


def test_a_command_is_the_kebab_operation_id_and_flags_its_parameters_and_body(routes, fake):
    base, seen, _ = fake
    r = run(routes, base, "create-agent-generation", "--wait", "true", "--agent-id", "agent_abc123", "--messages", '[{"role":"user","content":"hi"}]')
    assert r.returncode == 0, r.stderr
    assert seen[-1] == {
        "method": "POST",
        "path": "/api/v1/agents/agent_abc123/generate?wait=true",
        "auth": "Bearer tok_1",
        "body": {"messages": [{"role": "user", "content": "hi"}]},
    }
    assert json.loads(r.stdout) == {"ok": True}


def test_values_are_typed_by_the_spec(routes, fake):
    base, seen, _ = fake
    # A string property keeps text that looks like JSON or a number; booleans, objects
    # and arrays are parsed; a scalar for an array becomes a one-element array.
    r = run(routes, base, "create-session", "--agent-id", "agent_1", "--name", "42", "--auto-generate", "true", "--tool-context", '{"a":"b"}')
    assert r.returncode == 0, r.stderr
    assert seen[-1]["body"] == {"agent_id": "agent_1", "name": "42", "auto_generate": True, "tool_context": {"a": "b"}}
    run(routes, base, "search-knowledge", "--project-id", "proj_1", "--query", "true", "--document-paths", "/alice/", "--limit", "5")
    assert seen[-1]["body"] == {"project_id": "proj_1", "query": "true", "document_paths": ["/alice/"], "limit": 5}
    run(routes, base, "create-memory", "--project_id", "proj_1", "--name", "n", "--tags", '["alice","customer"]')
    assert seen[-1]["body"] == {"project_id": "proj_1", "name": "n", "tags": ["alice", "customer"]}


def test_query_parameters_and_the_sole_path_parameter_by_id_or_position(routes, fake):
    base, seen, _ = fake
    run(routes, base, "list-webhook-deliveries", "--webhook-id", "whk_1", "--limit", "2")
    assert seen[-1]["method"] == "GET" and seen[-1]["path"] == "/api/v1/webhook-deliveries?webhook_id=whk_1&limit=2"
    run(routes, base, "get-trace", "trace_abc")
    assert seen[-1]["path"] == "/api/v1/traces/trace_abc"
    run(routes, base, "get-trace-tree", "--id", "trace_x")
    assert seen[-1]["path"] == "/api/v1/traces/trace_x/tree"
    run(routes, base, "update-session", "--session-id", "sess_1", "--auto-generate", "false")
    assert seen[-1] == {"method": "PATCH", "path": "/api/v1/sessions/sess_1", "auth": "Bearer tok_1", "body": {"auto_generate": False}}


def test_refusals_before_any_request(routes, fake):
    base, seen, _ = fake
    r = run(routes, base, "get-trace")
    assert r.returncode == 1 and "trace_id" in r.stderr and not seen
    r = run(routes, base, "list-memory-entries", "--memory-id", "mem_1", "--limitt", "1")
    assert r.returncode == 1 and "--limitt" in r.stderr and not seen
    r = run(routes, base, "no-such-command")
    assert r.returncode == 1 and "Unknown command" in r.stderr and not seen


def test_an_error_status_exits_1_printing_the_body(routes, fake):
    base, _, answer = fake
    answer.update(status=404, body={"error": {"code": "RESOURCE_NOT_FOUND", "message": "No agent x."}})
    r = run(routes, base, "get-agent", "--agent-id", "agent_x")
    assert r.returncode == 1 and r.stdout == ""
    assert json.loads(r.stderr) == {"status": 404, "error": {"code": "RESOURCE_NOT_FOUND", "message": "No agent x."}}


def test_the_token_comes_from_the_profile_when_not_in_the_environment(routes, fake, tmp_path):
    base, seen, _ = fake
    (tmp_path / ".soat").mkdir()
    (tmp_path / ".soat" / "config.json").write_text(json.dumps({"default": {"baseUrl": "http://nowhere.invalid", "token": "tok_p"}, "bob": {"baseUrl": base, "token": "tok_b"}}))
    run(routes, base, "get-project", "--project-id", "proj_1", token=None, home=str(tmp_path))
    assert seen[-1]["auth"] == "Bearer tok_p", "SOAT_BASE_URL outranks the profile's baseUrl"
    run(routes, base, "get-project", "--project-id", "proj_1", "--profile", "bob", token=None, home=str(tmp_path))
    assert seen[-1]["auth"] == "Bearer tok_b" and seen[-1]["path"] == "/api/v1/projects/proj_1"
    run(routes, base, "get-project", "--project-id", "proj_1", "--profile", "bob", token="tok_env", home=str(tmp_path))
    assert seen[-1]["auth"] == "Bearer tok_env", "SOAT_BASE_URL and SOAT_TOKEN both set outrank any profile"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body, headers):
    req = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_listen_prints_matching_deliveries_and_checks_signatures(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOAT_")}
    out = open(tmp_path / "log", "w")
    p = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "soat.py"), "listen", "--port", str(port), "--path", "/webhook", "--filter", "sessions.generation.*", "--json", "--secret", "s3cret"],
        stdout=out, env=env,
    )
    try:
        url = f"http://127.0.0.1:{port}/webhook"
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        body = json.dumps({"type": "sessions.generation.completed"}).encode()
        t = "1700000000"
        v2 = hmac.new(b"s3cret", f"{t}.".encode() + body, hashlib.sha256).hexdigest()
        v1 = hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
        assert post(url, body, {"X-Soat-Event": "sessions.generation.completed", "X-Soat-Delivery": "d1", "X-Soat-Signature-V2": f"t={t},v1={v2}"}) == 200
        assert post(url, body, {"X-Soat-Event": "sessions.generation.started", "X-Soat-Delivery": "d2", "X-Soat-Signature": f"sha256={v1}"}) == 200
        assert post(url, body, {"X-Soat-Event": "sessions.generation.failed", "X-Soat-Delivery": "d3", "X-Soat-Signature": "sha256=00"}) == 401
        assert post(url, body, {"X-Soat-Event": "files.created", "X-Soat-Delivery": "d4"}) == 200
        assert post(f"http://127.0.0.1:{port}/other", body, {"X-Soat-Event": "sessions.generation.x"}) == 404
    finally:
        p.terminate()
        p.wait(timeout=5)
        out.close()
    lines = (tmp_path / "log").read_text().splitlines()
    assert lines[0].startswith("Listening for SOAT webhooks on http://localhost:")
    records = [json.loads(l) for l in lines if l.startswith("{")]
    assert [(r["event_type"], r["delivery_id"], r["signature_scheme"], r["signature_valid"]) for r in records] == [
        ("sessions.generation.completed", "d1", "v2", True),
        ("sessions.generation.started", "d2", "v1", True),
        ("sessions.generation.failed", "d3", "v1", False),
    ], "files.created is filtered out"
    assert records[0]["payload"] == {"type": "sessions.generation.completed"}


# ── the runner's parsing and checks ──────────────────────────────────────────────

TUTORIALS = os.path.join(os.path.dirname(HERE), "data", "soat-tutorials")


def steps_of(name):
    with open(os.path.join(TUTORIALS, name), encoding="utf-8") as f:
        return run_tutorial.parse(f.read())


def test_the_cli_tab_commands_are_cut_as_soats_runner_cuts_them():
    steps = steps_of("chat-with-llm.md")
    assert len(steps) == 32
    assert steps[0].cmd == "export SOAT_BASE_URL=http://localhost:5047"
    assert not any("curl" in s.cmd for s in steps), "only the CLI tabs"
    # Backslash continuations joined as SOAT's runner joins them.
    assert steps[5].cmd.startswith('AI_PROVIDER_ID=$(soat create-ai-provider    --project-id "$PROJECT_ID"')
    assert [s.annotation for s in steps if s.annotation] == ["retry 30"]
    debug = steps_of("debug-session-generation-trace-history.md")
    heredoc = [s for s in debug if s.cmd.startswith("cat > /tmp/debug-links.json <<EOF")]
    assert len(heredoc) == 1 and heredoc[0].cmd.endswith("\nEOF")
    memories = steps_of("memories-agent.md")
    assert memories[-1].annotation == "ignore" and memories[-1].cmd.startswith("soat get-generation")
    # A quote left open across lines (jq's filter) stays one command.
    assert any(s.cmd.count("\n") == 1 and 'select(.source_type == "agent")' in s.cmd for s in memories)


def test_every_expected_output_is_attached_to_its_command():
    expected = {
        name: [(s.cmd.split()[1] if s.cmd.startswith("soat") else s.cmd.split()[0], e.line, e.kind) for s in steps_of(name) for e in s.expected]
        for name in ("chat-with-llm.md", "memories-agent.md", "debug-session-generation-trace-history.md")
    }
    assert expected["chat-with-llm.md"] == [
        ("echo", 114, "text"), ("echo", 160, "text"), ("echo", 214, "text"), ("echo", 268, "text"),
        ("add-session-message", 321, "json"), ("list-conversation-messages", 431, "json"), ("generate-session-response", 580, "json"),
    ]
    assert expected["memories-agent.md"] == [
        ("create-memory-entry", 279, "json"), ("create-memory-entry", 322, "json"), ("create-memory-entry", 366, "json"),
        ("create-memory-entry", 409, "json"), ("list-memory-entries", 452, "json"), ("create-agent-generation", 607, "json"),
        ("search-knowledge", 882, "json"), ("list-memory-entries", 950, "json"),
    ]
    assert expected["debug-session-generation-trace-history.md"] == []


def failures(text, stdout, kind="json"):
    return run_tutorial.check(run_tutorial.Expected(kind, text, 1, ""), stdout)


def test_the_checks_rules():
    ok = lambda text, out, kind="json": failures(text, out, kind) == []  # noqa: E731
    assert ok('{ "action": "created", ... }', '{"action": "created", "id": "mem_1"}')
    assert not ok('{ "action": "created", ... }', '{"action": "skipped"}')
    assert not ok('{ "action": "created", "id": "x" }', '{"action": "created"}'), "a stated key must be there"
    assert ok('{"id": "gen_mznGfHSV4YAGiBXy"}', '{"id": "gen_Ab12Cd34Ef56"}')
    assert not ok('{"id": "gen_mznGfHSV4YAGiBXy"}', '{"id": "trace_Ab12Cd34Ef56"}')
    assert ok('{"session_id": "sess_..."}', '{"session_id": "sess_X1"}') and not ok('{"session_id": "sess_..."}', '{"session_id": "conv_X1"}')
    assert ok('"The population of Paris … approximately 2.1 million …"', '"The population of Paris is approximately 2.1 million people."')
    assert not ok('"The population of Paris … approximately 2.1 million …"', '"Paris has approximately 2.1 million people."')
    assert ok('"an initial response ... 2 hours ..."', '"an initial response within 2 hours is due."')
    assert ok('{"score": 0.69}', '{"score": 0.12}') and not ok('{"score": 0.69}', '{"score": "0.69"}')
    assert ok('{"x": null}', '{"x": null}') and not ok('{"x": null}', '{"x": "gen_abcdefgh"}')
    assert not ok('{"ok": true}', '{"ok": false}')
    assert ok('{ "a": 1 }\n{ "a": 2 }', '{"a": 5}\n{"a": 6}') and not ok('{ "a": 1 }\n{ "a": 2 }', '{"a": 5}'), "a stream, all listed"
    assert ok('["a", "b"]', '["a", "b"]') and not ok('["a", "b"]', '["b", "a"]') and not ok('["a", "b"]', '["a", "b", "c"]')
    assert ok('["a", ...]', '["a", "b", "c"]')
    assert ok("PROJECT_ID: proj_vh9qHLINTdsrAqwK", "PROJECT_ID: proj_Kz6zKhsG66LcB8T5\n", "text")
    assert not ok("PROJECT_ID: proj_vh9qHLINTdsrAqwK", "PROJECT_ID: \n", "text")
    assert failures('{"a": 1}', "not json")[0].startswith("the command's output is not JSON")
