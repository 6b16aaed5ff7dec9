# A local stand-in for the Anthropic Messages API that scripts an agent's turns, for the tests of a
# real agent client (tests/clients/README.md).
#
#   messages_api_mock.py --host HOST --script SCRIPT --log LOG --cert CERT --key KEY --ports FILE
#
# Two listeners on 127.0.0.1, on ports the system gives:
#   api    HTTPS with CERT/KEY: POST /v1/messages, streamed (SSE) when the body asks "stream": true
#   proxy  plain HTTP, CONNECT only: a tunnel to the api listener for HOST:<api port>, 403 for any
#          other host or port. A client pointed at https://HOST:<api port> through it reaches the
#          mock under a made-up name, with no resolver or /etc/hosts involved; and every host it
#          asks for is recorded, so a client that phones home elsewhere shows in the log.
# Once both listen, FILE gets {"api": PORT, "proxy": PORT} (whole, by a rename).
#
# SCRIPT is {"turns": [[BLOCK, ...], ...], "plainTurns": [[BLOCK, ...], ...]}. A request that
# offers tools is answered with the turn of "turns" whose index is the number of assistant messages
# in its conversation (0 for the prompt, 1 once the client sends back the first turn's tool
# results, ...); a request that offers none (an agent run with no tools, as a judge is, or a side
# request of the client's own) with the turn of "plainTurns" (optional, default []) chosen the same
# way; past the last turn, with a short text. A BLOCK is
# {"type": "text", "text": T} or {"type": "tool_use", "name": N, "input": {...}}. In a text,
# {{authorization}} and {{x-api-key}} become the values of those request headers ("" when absent),
# so a turn can show what credential the client sent, and {{last-user-text}} the text of the
# conversation's last user message (its text blocks joined), so a turn can answer what it was told. A block {"type": "wait", "path": P} is no
# part of the answer: the turn is held until P exists (at most 30 s), so a test can change
# something on the host while the client is between two requests of one session.
# "acceptedCredentials" (optional): a list of header values ("Bearer T" or an API key); when
# present, a Messages request whose Authorization and x-api-key are both absent from it is answered
# 401 with an authentication_error, as the real API answers a token it rejects.
#
# LOG gets one JSON object per line: {"kind": "request", "method", "path", "headers", "body",
# "turn"} for each request to the api listener (body parsed when it is JSON), {"kind": "connect",
# "target", "allowed"} for each CONNECT, {"kind": "error", "error"} for a request the mock failed.
import argparse
import http.server
import json
import os
import select
import socket
import ssl
import threading
import time
import traceback

parser = argparse.ArgumentParser()
for name in ("host", "script", "log", "cert", "key", "ports"):
    parser.add_argument("--" + name, required=True)
args = parser.parse_args()

with open(args.script) as f:
    script = json.load(f)
turns = script["turns"]
plain_turns = script.get("plainTurns", [])
accepted_credentials = script.get("acceptedCredentials")
log_lock = threading.Lock()
log_file = open(args.log, "a")


def record(entry):
    with log_lock:
        log_file.write(json.dumps(entry) + "\n")
        log_file.flush()


def last_user_text(body):
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    if not users:
        return ""
    content = users[-1].get("content", "")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict) and
                   b.get("type") == "text")


def fill(text, headers, body):
    for name in ("authorization", "x-api-key"):
        text = text.replace("{{" + name + "}}", headers.get(name, ""))
    return text.replace("{{last-user-text}}", last_user_text(body))


def wait_for(path, seconds=30):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def answer_blocks(body, headers):
    """The content blocks of the answer to a Messages request, and its turn (None: no turn)."""
    script_turns = turns if body.get("tools") else plain_turns
    turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    if not body.get("tools") and not plain_turns:
        return [{"type": "text", "text": "mock: no turn for a request without tools"}], None
    if turn >= len(script_turns):
        return [{"type": "text", "text": "mock: the script has ended"}], turn
    blocks = []
    for i, block in enumerate(script_turns[turn]):
        if block["type"] == "wait":
            if not wait_for(block["path"]):
                blocks.append({"type": "text", "text": "mock: %s never appeared" % block["path"]})
        elif block["type"] == "text":
            blocks.append({"type": "text", "text": fill(block["text"], headers, body)})
        else:
            blocks.append({"type": "tool_use", "id": "toolu_mock_%d_%d" % (turn, i),
                           "name": block["name"], "input": block["input"]})
    return blocks, turn


def halves(text):
    """The text in two pieces, so a client must join deltas."""
    middle = len(text) // 2
    return [piece for piece in (text[:middle], text[middle:]) if piece]


def stream_events(message, blocks):
    start = dict(message, content=[], stop_reason=None)
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in halves(block["text"])]
        else:
            opened = dict(block, input={})
            deltas = [{"type": "input_json_delta", "partial_json": piece}
                      for piece in halves(json.dumps(block["input"]))]
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": opened}
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": message["usage"]["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


class Api(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, content_type, data):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def handle_request(self):
        try:
            self.answer()
        except Exception:
            # A mistake of the mock shows in the log, not only as a connection the client lost.
            record({"kind": "error", "error": traceback.format_exc()})
            raise

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {name.lower(): value for name, value in self.headers.items()}
        entry = {"kind": "request", "method": self.command, "path": self.path, "headers": headers,
                 "body": body, "turn": None}
        if self.command != "POST" or self.path.split("?")[0] != "/v1/messages" or \
                not isinstance(body, dict):
            record(entry)
            error = {"type": "error", "error": {"type": "not_found_error",
                                                "message": "mock: not scripted: " + self.path}}
            self.reply(404, "application/json", json.dumps(error).encode())
            return
        if accepted_credentials is not None and \
                headers.get("authorization") not in accepted_credentials and \
                headers.get("x-api-key") not in accepted_credentials:
            record(entry)
            error = {"type": "error", "error": {"type": "authentication_error",
                                                "message": "mock: invalid bearer token"}}
            self.reply(401, "application/json", json.dumps(error).encode())
            return
        blocks, entry["turn"] = answer_blocks(body, headers)
        record(entry)
        uses_tool = any(b["type"] == "tool_use" for b in blocks)
        message = {"id": "msg_mock_%s" % entry["turn"], "type": "message", "role": "assistant",
                   "model": body.get("model", "mock"), "content": blocks,
                   "stop_reason": "tool_use" if uses_tool else "end_turn", "stop_sequence": None,
                   "usage": {"input_tokens": 1, "output_tokens": 1}}
        if not body.get("stream"):
            self.reply(200, "application/json", json.dumps(message).encode())
            return
        events = "".join("event: %s\ndata: %s\n\n" % (name, json.dumps(data))
                         for name, data in stream_events(message, blocks))
        self.reply(200, "text/event-stream", events.encode())

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_request

    def log_message(self, *args):
        pass


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_CONNECT(self):
        host, _, port = self.path.rpartition(":")
        allowed = host == args.host and port == str(api.server_address[1])
        record({"kind": "connect", "target": self.path, "allowed": allowed})
        if not allowed:
            self.send_error(403, "mock: no tunnel to " + self.path)
            return
        upstream = socket.create_connection(api.server_address)
        self.send_response(200, "Connection established")
        self.end_headers()
        self.close_connection = True
        ends = [self.connection, upstream]
        try:
            while True:
                ready, _, _ = select.select(ends, [], [], 120)
                if not ready:
                    return
                for end in ready:
                    data = end.recv(65536)
                    if not data:
                        return
                    (upstream if end is self.connection else self.connection).sendall(data)
        finally:
            upstream.close()

    def refuse(self):
        self.send_error(405, "mock: CONNECT only")

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = refuse

    def log_message(self, *args):
        pass


api = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Api)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(args.cert, args.key)
api.socket = context.wrap_socket(api.socket, server_side=True)
proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
api.daemon_threads = proxy.daemon_threads = True
threading.Thread(target=proxy.serve_forever, daemon=True).start()
with open(args.ports + ".tmp", "w") as f:
    json.dump({"api": api.server_address[1], "proxy": proxy.server_address[1]}, f)
os.rename(args.ports + ".tmp", args.ports)
api.serve_forever()
