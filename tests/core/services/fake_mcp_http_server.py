#!/usr/bin/env python3
"""A scripted tool server for mcp_http_transport_test.cpp: MCP's streamable HTTP transport on
127.0.0.1 (the port written to the file TEA_PORT_FILE names), telling the lie its first argument
names. Raw sockets, one thread a connection, so every byte of each answer is the script's."""
import json
import os
import socket
import sys
import threading
import time

mode = sys.argv[1]
SESSION = "session-7f3a"
refusal_seen = threading.Event()


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None, None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    headers = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return headers, json.loads(body or b"null")


def respond(conn, status, body=b"", content_type="application/json", extra=""):
    if isinstance(body, str):
        body = body.encode()
    conn.sendall((f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n{extra}"
                  f"Content-Length: {len(body)}\r\n\r\n").encode() + body)


def chunk(conn, text):
    if isinstance(text, str):
        text = text.encode()
    conn.sendall(b"%x\r\n%s\r\n" % (len(text), text))


def stream_head(conn, extra=""):
    conn.sendall(("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                  f"{extra}Transfer-Encoding: chunked\r\n\r\n").encode())


def event(message):
    return "event: message\ndata: " + json.dumps(message) + "\n\n"


def answer_to(message, headers):
    # What the request carried, so the test sees the transport's headers.
    return {"jsonrpc": "2.0", "id": message["id"],
            "result": {"method": message["method"],
                       "session": headers.get("mcp-session-id"),
                       "version": headers.get("mcp-protocol-version"),
                       "accept": headers.get("accept"),
                       "type": headers.get("content-type")}}


def serve(conn):
    headers, message = read_request(conn)
    if message is None:
        return
    if "id" not in message or "method" not in message:
        if "method" not in message and "error" in message:
            refusal_seen.set()  # the client's answer to our own request
        if mode == "notification_200":
            respond(conn, "200 OK", "{}")
        else:
            conn.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
        return
    initialize = message["method"] == "initialize"
    session = ""
    if initialize:
        session = ("Mcp-Session-Id: bad id\r\n" if mode == "bad_session"
                   else f"Mcp-Session-Id: {SESSION}\r\n")
    answer = answer_to(message, headers)
    if initialize:
        answer["result"] = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                            "serverInfo": {"name": "fake", "version": "0"}}
    if mode in ("good_json", "bad_session", "notification_200") or (
            initialize and mode not in ("junk_body", "status_500", "silent")):
        respond(conn, "200 OK", json.dumps(answer), extra=session)
    elif mode == "good_sse":
        # A comment, a notification of the server's own, then the answer; the stream stays open.
        stream_head(conn, session)
        chunk(conn, ": keep-alive\n\n")
        chunk(conn, event({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "info", "data": "working"}}))
        chunk(conn, event(answer))
        time.sleep(30)
    elif mode == "sse_junk":
        stream_head(conn)
        chunk(conn, "data: not json at all\n\ngarbage without a field\n\n")
        chunk(conn, event({**answer, "id": 999}))
        chunk(conn, "data: " + json.dumps(answer) + "\r\n\r\n")
        conn.sendall(b"0\r\n\r\n")
    elif mode == "junk_body":
        respond(conn, "200 OK", "<html>surprise</html>")
    elif mode == "wrong_id":
        respond(conn, "200 OK", json.dumps({**answer, "id": 999}))
    elif mode == "status_500":
        respond(conn, "500 Internal Server Error", "it broke", "text/plain")
    elif mode == "accepted_request":
        conn.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
    elif mode == "html":
        respond(conn, "200 OK", "<p>hi</p>", "text/html")
    elif mode == "silent":
        time.sleep(30)
    elif mode == "gibibyte":
        # An event stream that never ends an event: a gibibyte of one data line.
        stream_head(conn)
        block = "data: " + "x" * (1 << 20)
        try:
            for _ in range(1024):
                chunk(conn, block)
        except OSError:
            pass
    elif mode == "server_request":
        # A request of the server's own first, the answer only once the client refused it.
        stream_head(conn)
        chunk(conn, event({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"}))
        refused = refusal_seen.wait(10)
        chunk(conn, event({**answer, "result": {"refused": refused}}))
        conn.sendall(b"0\r\n\r\n")


def main():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port_file = os.environ["TEA_PORT_FILE"]
    with open(port_file + ".partial", "w") as f:
        f.write(f"{listener.getsockname()[1]}\n")
    os.rename(port_file + ".partial", port_file)
    while True:
        conn, _ = listener.accept()

        def run(conn=conn):
            try:
                serve(conn)
            except OSError:
                pass
            finally:
                conn.close()

        threading.Thread(target=run, daemon=True).start()


main()
