"""What the schemathesis scripts' seeding shares: a JSON call to the server under test."""

import json
import urllib.request


def call(base, method, path, body, key=None):
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = "Bearer " + key
    req = urllib.request.Request(base + path, json.dumps(body).encode(), headers, method=method)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def account(email):
    """For a script's seeding heredoc (argv: the server's base URL): `call(method,
    path, body, key=None)` bound to the server, and the key of a new account `email`."""
    import sys

    base = sys.argv[1]

    def bound(method, path, body, key=None):
        return call(base, method, path, body, key)

    return bound, bound("POST", "/v1/signup", {"email": email})["api_key"]


def upstream():
    """The base URL of a loopback OpenAI-compatible upstream answering every chat
    completion with "seeded answer" (whole, or as SSE chunks when the request streams):
    the one common.sh keeps running for the whole run (ST_UPSTREAM), so a fuzzed
    generate on a seeded provider reaches it as the seeded ones did; else one on a
    daemon thread that serves until this process ends."""
    import os

    return os.environ.get("ST_UPSTREAM") or serve()


def serve():
    """Starts the upstream `upstream` describes on a daemon thread; its base URL."""
    import http.server
    import threading

    text = "seeded answer"

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
            model = body.get("model") or "seeded"
            usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
            if body.get("stream"):
                chunks = [
                    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
                    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage},
                ]
                out = b"".join(b"data: " + json.dumps(dict(c, id="chatcmpl-seed", object="chat.completion.chunk", model=model)).encode() + b"\n\n" for c in chunks)
                out += b"data: [DONE]\n\n"
                kind = "text/event-stream"
            else:
                out = json.dumps({
                    "id": "chatcmpl-seed", "object": "chat.completion", "model": model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": usage,
                }).encode()
                kind = "application/json"
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


if __name__ == "__main__":
    # `python seed.py`: common.sh's upstream for a whole run; prints its base URL and
    # serves until it is killed.
    import sys
    import time

    print(serve(), flush=True)
    sys.stdout.close()
    while True:
        time.sleep(3600)
