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


def upstream(text="seeded answer"):
    """A loopback OpenAI-compatible upstream answering every chat completion with
    `text` (whole, or as SSE chunks when the request streams), for seeding
    generations; serves on a daemon thread until the process ends. Its base URL."""
    import http.server
    import threading

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
