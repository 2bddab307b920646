#!/usr/bin/env python3
"""A stand-in for SOAT's `soat` command line, for running SOAT's tutorials in tests.

SOAT's v0.28 CLI is not published (npm holds 0.7.0, without sessions), so the
tutorials' `soat <command>` lines run through this instead. It is generic over the
module specs in tests/data/specs/soat-v0.28/ the way SOAT's CLI is over its generated
route manifest (learnt from packages/cli/src/index.ts, flagParser.ts, config.ts,
webhookSignature.ts at v0.28.0; no code copied):

- the command is the kebab-case operationId (`createAgentGeneration` →
  `create-agent-generation`);
- each `--flag value` (or `--flag=value`; a flag with no value is `true`) is the path
  parameter, query parameter or body property whose canonical name it spells
  (kebab-case, snake_case and camelCase alike);
- a value is JSON-parsed unless the spec types it `string` (arrays, objects, booleans,
  numbers; an array flag given a scalar becomes a one-element array); a `string` flag
  keeps its text, except the literal `null`;
- an unknown flag on a GET is refused (the server cannot see it); on a write it is
  forwarded as a body property, for the server to judge, as SOAT's CLI does;
- `--id` or a bare argument fills a command's sole path parameter;
- base URL from `SOAT_BASE_URL`, token from `SOAT_TOKEN`; unless both are set, the
  profile (`--profile`, `SOAT_PROFILE`, `default`) in `~/.soat/config.json`, its
  `baseUrl` overridden by `SOAT_BASE_URL`;
- the JSON answer is printed (indented by 2); an HTTP error status prints
  `{"status": N, ...body}` on stderr and exits 1.

`soat listen --port N --path /webhook [--filter GLOBS] [--json] [--secret S]` is a
loopback webhook receiver: each POST to the path whose `X-Soat-Event` matches the filter
(comma-separated; `*` alone, a `prefix*`, or an exact name) is printed, as a JSON line
with `--json`; with a secret the `X-Soat-Signature-V2` (`t=…,v1=hex` over `t.body`) or
else `X-Soat-Signature` (`sha256=hex` over the body) HMAC-SHA256 is checked, and a bad
one is answered 401. `SOAT_LISTEN_PORT`, when set, replaces `--port`: the test harness
substitutes the listener's address as it does the server's.

`soat routes` prints the route manifest built from the specs; `SOAT_ROUTES` names such
a file to read instead of parsing the specs on every call.
"""

import datetime
import hashlib
import hmac
import http.server
import json
import os
import re
import signal
import sys
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SPECS = os.path.join(os.path.dirname(HERE), "data", "specs", "soat-v0.28")
METHODS = ("get", "put", "post", "patch", "delete")


def kebab(name):
    """`createAgentGeneration` or `create_agent_generation` → `create-agent-generation`."""
    return re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", name).replace("_", "-").lower()


def canonical(name):
    """The spelling flags are matched on: snake_case."""
    return kebab(name).replace("-", "_")


# ── the route manifest, from the specs ───────────────────────────────────────────


class Specs:
    """The module specs, with `$ref`s (local and `./other.yaml#/…`) resolved on demand."""

    def __init__(self, folder):
        import yaml  # only when building the manifest: a cached one needs no yaml

        self.folder = folder
        self.docs = {}
        for name in sorted(os.listdir(folder)):
            if name.endswith(".yaml"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    self.docs[name] = yaml.safe_load(f)

    def resolve(self, node, doc):
        """`node` with its `$ref` followed (repeatedly); returns (node, the doc it is in)."""
        seen = 0
        while isinstance(node, dict) and "$ref" in node and seen < 32:
            file, _, pointer = node["$ref"].partition("#")
            if file:
                doc = os.path.basename(file)
            node = self.docs[doc]
            for part in filter(None, pointer.split("/")):
                node = node[part.replace("~1", "/").replace("~0", "~")]
            seen += 1
        return node, doc

    def properties(self, schema, doc, depth=0):
        """A body schema's properties and their types (allOf merged; a oneOf/anyOf's
        alternatives merged, a property they type differently being `any`)."""
        schema, doc = self.resolve(schema, doc)
        out = {}
        if not isinstance(schema, dict) or depth > 8:
            return out
        for name, prop in (schema.get("properties") or {}).items():
            out[name] = self.type_of(prop, doc)
        for part in schema.get("allOf") or []:
            out.update(self.properties(part, doc, depth + 1))
        for key in ("oneOf", "anyOf"):
            for part in schema.get(key) or []:
                for name, t in self.properties(part, doc, depth + 1).items():
                    out[name] = t if out.get(name, t) == t else "any"
        return out

    def type_of(self, schema, doc):
        schema, doc = self.resolve(schema, doc)
        if not isinstance(schema, dict):
            return "any"
        t = schema.get("type")
        if isinstance(t, list):  # OpenAPI 3.1: ["string", "null"]
            t = [x for x in t if x != "null"]
            t = t[0] if len(t) == 1 else None
        if t:
            return t
        for key in ("allOf", "oneOf", "anyOf"):
            kinds = {self.type_of(p, doc) for p in schema.get(key) or []} - {"null"}
            if len(kinds) == 1:
                return kinds.pop()
        return "any"

    def routes(self):
        routes = {}
        for doc_name, doc in self.docs.items():
            for path, item in (doc.get("paths") or {}).items():
                shared = item.get("parameters") or []
                for method in METHODS:
                    op = item.get(method)
                    if not isinstance(op, dict) or "operationId" not in op:
                        continue
                    params = {}
                    for p in shared + (op.get("parameters") or []):
                        p, pdoc = self.resolve(p, doc_name)
                        params[(p["in"], p["name"])] = self.type_of(p.get("schema") or {}, pdoc)
                    body = {}
                    content = ((op.get("requestBody") or {}).get("content") or {}).get("application/json")
                    if content and "schema" in content:
                        body = self.properties(content["schema"], doc_name)
                    routes[kebab(op["operationId"])] = {
                        "method": method.upper(),
                        "path": path,
                        "path_params": {n: t for (where, n), t in params.items() if where == "path"},
                        "query_params": {n: t for (where, n), t in params.items() if where == "query"},
                        "body": body,
                        "spec": doc_name,
                    }
        return routes


def load_routes():
    cached = os.environ.get("SOAT_ROUTES")
    if cached and os.path.exists(cached):
        with open(cached, encoding="utf-8") as f:
            return json.load(f)
    return Specs(os.environ.get("SOAT_SPECS", SPECS)).routes()


# ── flags → a request ─────────────────────────────────────────────────────────────


class Usage(Exception):
    """A command line this CLI refuses before any request (exit 1, the message on stderr)."""


def parse_flags(args):
    """SOAT's pairing: `--k v`, `--k=v`, a bare `--k` is `true`; the rest are positional.
    Returns ([(key, value)] in order, [positional])."""
    flags, positional, i = [], [], 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--"):
            positional.append(arg)
            i += 1
            continue
        key, eq, value = arg[2:].partition("=")
        if not eq:
            nxt = args[i + 1] if i + 1 < len(args) else None
            if nxt is not None and not nxt.startswith("--"):
                value, i = nxt, i + 1
            else:
                value = "true"
        flags.append((key, value))
        i += 1
    return flags, positional


NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def parse_value(text, declared):
    """A flag's text as the JSON value its declared type asks for."""
    if declared == "string":
        return None if text.strip() == "null" else text
    t = text.strip()
    if t[:1] in ("{", "[") or t in ("true", "false", "null") or NUMBER.match(t):
        try:
            return json.loads(t)
        except ValueError:
            return text
    return text


def array_value(texts):
    parsed = [parse_value(t, None) for t in texts]
    if len(parsed) == 1 and isinstance(parsed[0], list):
        return parsed[0]
    return parsed


def build_request(route, args):
    """(method, path with its parameters, query dict, body dict or None)."""
    flags, positional = parse_flags(args)
    by_key = {}
    for key, value in flags:
        by_key.setdefault(key, []).append(value)
    path_args, query, body = {}, {}, {}
    profile = None
    for key, values in by_key.items():
        name = canonical(key)
        if name == "profile":
            profile = values[-1]
            continue
        if name == "id":
            continue
        if name in route["path_params"]:
            path_args[name] = parse_value(values[-1], route["path_params"][name])
        elif name in route["query_params"]:
            t = route["query_params"][name]
            query[name] = array_value(values) if t == "array" else parse_value(values[-1], t)
        elif route["method"] == "GET":
            raise Usage(f"Unknown flag --{kebab(key)} for this command.")
        else:
            t = route["body"].get(name)
            body[name] = array_value(values) if t == "array" else parse_value(values[-1], t)
    sole = list(route["path_params"]) if len(route["path_params"]) == 1 else []
    alias = by_key.get("id", [None])[-1] or (positional[0] if positional else None)
    if alias is not None and sole and sole[0] not in path_args:
        path_args[sole[0]] = parse_value(alias, route["path_params"][sole[0]])
    missing = [p for p in route["path_params"] if p not in path_args]
    if missing:
        raise Usage(f"Missing required path parameter(s): {', '.join(missing)}.\nProvide with --{kebab(missing[0])} <value>, --id <value>, or a positional argument.")
    path = route["path"]
    for name, value in path_args.items():
        path = path.replace("{" + name + "}", urllib.parse.quote(str(value), safe=""))
    return route["method"], path, query, (body if body else None), profile


def query_string(query):
    pairs = []
    for k, v in query.items():
        for item in v if isinstance(v, list) else [v]:
            if isinstance(item, bool):
                item = "true" if item else "false"
            elif item is None:
                item = "null"
            elif isinstance(item, (dict, list)):
                item = json.dumps(item)
            pairs.append((k, str(item)))
    return urllib.parse.urlencode(pairs)


def client(profile):
    """(base URL, token or None), as SOAT's CLI resolves them."""
    base, token = os.environ.get("SOAT_BASE_URL"), os.environ.get("SOAT_TOKEN")
    if base and token:  # both set: no profile is read, `--profile` or not (SOAT's order)
        return base, token
    name = profile or os.environ.get("SOAT_PROFILE") or "default"
    try:
        with open(os.path.join(os.path.expanduser("~"), ".soat", "config.json"), encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError):
        config = {}
    if name in config:
        return base or config[name].get("baseUrl"), config[name].get("token")
    if base:
        return base, token
    raise Usage(f'Profile "{name}" not found. Run: soat configure' + (f" --profile {name}" if name != "default" else ""))


def call(command, args):
    routes = load_routes()
    route = routes.get(command)
    if route is None:
        raise Usage(f"Unknown command: {command}")
    method, path, query, body, profile = build_request(route, args)
    base, token = client(profile)
    url = base.rstrip("/") + path + ("?" + query_string(query) if query else "")
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=float(os.environ.get("SOAT_TIMEOUT", "120"))) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    text = raw.decode("utf-8", "replace")
    try:
        payload = json.loads(text) if text.strip() else None
    except ValueError:
        payload = text
    if status >= 400:
        out = {"status": status, **payload} if isinstance(payload, dict) else {"status": status, "error": payload}
        print(json.dumps(out, indent=2), file=sys.stderr)
        return 1
    if isinstance(payload, str) and not text.lstrip().startswith('"'):
        sys.stdout.write(text)  # not JSON: its own bytes
    elif payload is not None:
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    return 0


# ── soat listen ────────────────────────────────────────────────────────────────────


def matches_filter(event, filter_text):
    patterns = [p.strip() for p in (filter_text or "").split(",") if p.strip()]
    if not patterns:
        return True
    return any(p == "*" or (p.endswith("*") and event.startswith(p[:-1])) or event == p for p in patterns)


def inspect_signature(secret, body, headers):
    """(signature header checked, scheme, valid: None without a secret)."""
    v2, v1 = headers.get("X-Soat-Signature-V2") or "", headers.get("X-Soat-Signature") or ""
    scheme = "v2" if v2 else "v1"
    signature = v2 or v1
    if not secret:
        return signature, scheme, None
    key = secret.encode()
    if scheme == "v2":
        parts = dict(p.split("=", 1) for p in v2.split(",") if "=" in p)
        t, digest = parts.get("t", "").strip(), parts.get("v1", "")
        if not t or not digest:
            return signature, scheme, False
        expected = hmac.new(key, f"{t}.".encode() + body, hashlib.sha256).hexdigest()
        return signature, scheme, hmac.compare_digest(expected, digest)
    expected = hmac.new(key, body, hashlib.sha256).hexdigest()
    valid = hmac.compare_digest(expected, v1.removeprefix("sha256=")) and v1.startswith("sha256=")
    return signature, scheme, valid


def listen(args):
    flags, _ = parse_flags(args)
    opts = {canonical(k): v for k, v in flags}
    port = int(os.environ.get("SOAT_LISTEN_PORT") or opts.get("port", "8787"))
    path = opts.get("path", "/webhook")
    secret, filter_text, as_json = opts.get("secret"), opts.get("filter"), "json" in opts

    class Receiver(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def answer(self, status, obj):
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.answer(404, {"error": "not found"})

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != path:
                return self.answer(404, {"error": "not found"})
            event = self.headers.get("X-Soat-Event") or "unknown"
            delivery = self.headers.get("X-Soat-Delivery") or "unknown"
            if filter_text and not matches_filter(event, filter_text):
                return self.answer(200, {"ok": True, "skipped": True})
            try:
                payload = json.loads(raw)
            except ValueError:
                payload = raw.decode("utf-8", "replace")
            signature, scheme, valid = inspect_signature(secret, raw, self.headers)
            record = {
                "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z"),
                "event_type": event,
                "delivery_id": delivery,
                "signature": signature,
                "signature_scheme": scheme,
                "signature_valid": valid,
                "payload": payload,
            }
            if as_json:
                print(json.dumps(record), flush=True)
            else:
                print(f"--- webhook received ---\nevent_type: {event}\ndelivery_id: {delivery}", flush=True)
                if secret:
                    print(f"signature_valid: {valid}", flush=True)
                print("payload:", json.dumps(payload, indent=2), flush=True)
            status = 401 if secret and valid is False else 200
            self.answer(status, {"ok": status == 200, "event_type": event, "delivery_id": delivery, "signature_valid": valid})

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Receiver)
    # SIGTERM ends the process at once: a SystemExit raised from the handler can land
    # inside a weakref callback, where Python prints it and carries on serving.
    def stop(*_):
        sys.stdout.flush()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    print(f"Listening for SOAT webhooks on http://localhost:{port}{path}", flush=True)
    if filter_text:
        print(f"Filter: {filter_text}", flush=True)
    if secret:
        print("Signature verification: enabled", flush=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    return 0


def main(argv):
    if not argv:
        print("usage: soat <command> [--flag value ...] | soat listen ... | soat routes", file=sys.stderr)
        return 1
    command, args = argv[0], argv[1:]
    try:
        if command == "listen":
            return listen(args)
        if command == "routes":
            print(json.dumps(Specs(os.environ.get("SOAT_SPECS", SPECS)).routes(), indent=1, sort_keys=True))
            return 0
        if command == "configure":
            raise Usage("soat configure is interactive; the tutorial runner writes the profile itself.")
        return call(command, args)
    except Usage as e:
        print(str(e), file=sys.stderr)
        return 1
    except urllib.error.URLError as e:
        print(json.dumps({"error": {"name": "FetchError", "message": str(e.reason)}}, indent=2), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
