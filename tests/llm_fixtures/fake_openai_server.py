"""A local OpenAI-compatible chat-completions server for tests (real HTTP, scripted replies).

    with FakeOpenAI([reply("text"), status(429), slow("text", 2.0)]) as srv:
        client = OpenAIBackend("m", base_url=srv.base_url, api_key="k")

Each request to POST /v1/chat/completions consumes the next step of the script; the requests
(headers and JSON body) are recorded in ``srv.requests``. Bound to 127.0.0.1 on a free port.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def reply(content: str, prompt_tokens: int = 100, completion_tokens: int = 50) -> dict:
    return {"status": 200, "content": content, "usage": (prompt_tokens, completion_tokens)}


def status(code: int, retry_after: float | None = None, message: str = "scripted error") -> dict:
    return {"status": code, "retry_after": retry_after, "message": message}


def slow(content: str, seconds: float) -> dict:
    return {"status": 200, "content": content, "sleep": seconds, "usage": (100, 50)}


class FakeOpenAI:
    def __init__(self, script: list[dict]):
        self.script = list(script)
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                with outer._lock:
                    outer.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                    step = outer.script.pop(0) if outer.script else status(500, message="script exhausted")
                if not self.path.endswith("/chat/completions"):
                    step = status(404, message=f"no route {self.path}")
                if step.get("sleep"):
                    outer._stop.wait(step["sleep"])
                code = step["status"]
                if code != 200:
                    payload = {"error": {"message": step.get("message", "error"), "type": "scripted", "code": code}}
                    self._send(code, payload, step.get("retry_after"))
                    return
                pt, ct = step.get("usage", (100, 50))
                payload = {
                    "id": f"chatcmpl-{len(outer.requests)}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "fake"), "system_fingerprint": "fp_fake",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": step["content"]}}],
                    "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
                }
                self._send(200, payload)

            def _send(self, code, payload, retry_after=None):
                data = json.dumps(payload).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    if retry_after is not None:
                        self.send_header("Retry-After", str(retry_after))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def start(self) -> "FakeOpenAI":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
