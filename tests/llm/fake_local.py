#!/usr/bin/env python3
"""A stand-in for models/llm.py in tests: `fake_local.py serve --model M --port N ...`
serves an OpenAI-compatible chat endpoint on 127.0.0.1:N the way llama.cpp's server
does (/health 503 while "loading", then 200; /v1/chat/completions whole and SSE), so
the supervisor and the text-form tool-call parser are tested with a real process and
real HTTP, without the weights.

The answer is scripted by the last user message: "SCRIPT:<text>" answers <text>
verbatim (streamed in small pieces; "SCRIPT:PAUSE<s>:<text>" streams the first piece,
then nothing for <s> seconds, then the rest); anything else answers "ok".
FAKE_LOCAL_MODEL_DELAY (seconds, default 0.2) is how long it "loads".
"""

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STARTED = time.monotonic()
DELAY = float(os.environ.get("FAKE_LOCAL_MODEL_DELAY", "0.2"))
ARGS = dict(zip(sys.argv[2::2], sys.argv[3::2]))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            if time.monotonic() - STARTED < DELAY:
                return self.send(503, b'{"error":{"message":"Loading model","code":503}}')
            return self.send(200, b'{"status":"ok"}')
        self.send(404, b"{}")

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["content-length"])))
        last = [m for m in req["messages"] if m["role"] == "user"][-1]["content"]
        text = last[len("SCRIPT:"):] if last.startswith("SCRIPT:") else "ok"
        pause = 0.0
        if text.startswith("PAUSE"):
            head, text = text.split(":", 1)
            pause = float(head[len("PAUSE"):])
        model = ARGS.get("--alias", "fake")
        if not req.get("stream"):
            body = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}}
            return self.send(200, json.dumps(body).encode())
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

        def event(obj):
            data = b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def chunk(delta, finish=None):
            return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        event(chunk({"role": "assistant", "content": None}))
        for i in range(0, len(text), 4):
            event(chunk({"content": text[i:i + 4]}))
            if i == 0 and pause:
                time.sleep(pause)
        event(chunk({}, "stop"))
        event(b"[DONE]")
        self.wfile.write(b"0\r\n\r\n")


def main():
    if sys.argv[1:2] != ["serve"]:
        sys.exit(__doc__)
    import signal
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM, signal.SIGINT])
    server = ThreadingHTTPServer(("127.0.0.1", int(ARGS["--port"])), Handler)
    print(f"fake local model pid {os.getpid()} on {server.server_address}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    signal.sigwait([signal.SIGTERM, signal.SIGINT])


if __name__ == "__main__":
    main()
