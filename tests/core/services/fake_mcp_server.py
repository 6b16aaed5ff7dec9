#!/usr/bin/env python3
"""A scripted tool server for mcp_client_test.cpp: speaks MCP's stdio transport (one JSON-RPC
message a line) and tells the lie its first argument names before, or instead of, each answer."""
import json
import os
import sys
import time

mode = sys.argv[1]
out = sys.stdout


def send(text):
    out.write(text + "\n")
    out.flush()


def answer(request, **fields):
    send(json.dumps({"jsonrpc": "2.0", "id": request["id"], **fields}))


if mode == "no_read":
    time.sleep(60)
    sys.exit(0)

for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue  # a notification
    if mode == "close":
        sys.exit(0)
    if mode == "close_stdin":
        answer(request, result={})
        os.close(0)
        time.sleep(60)
    if mode == "flood":
        while True:
            out.write("not json\n" * 1000)
    if mode == "stream":
        while True:
            out.write("x" * 65536)
    if mode == "silent":
        continue
    if mode == "not_json":
        send("Secure server running on stdio")
    elif mode == "not_jsonrpc":
        send("[1, 2]")
        send(json.dumps({"jsonrpc": "1.0", "id": request["id"], "result": {}}))
    elif mode == "unknown_id":
        send(json.dumps({"jsonrpc": "2.0", "id": 999, "result": {"lie": True}}))
        send(json.dumps({"jsonrpc": "2.0", "id": str(request["id"]), "result": {"lie": True}}))
        send(json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}))
    elif mode == "huge":
        out.write("x" * (8 << 20) + "\n")
    elif mode == "huge_unterminated":
        out.write("x" * (8 << 20))
        out.flush()
        sys.exit(0)
    elif mode == "deep":
        send("[" * 100000 + "]" * 100000)
    elif mode == "ping":
        send(json.dumps({"jsonrpc": "2.0", "id": "s1", "method": "ping"}))
        reply = json.loads(sys.stdin.readline())
        answer(request, result={"pingReply": reply})
        continue
    elif mode == "unterminated_answer":
        out.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"last": True}}))
        out.flush()
        sys.exit(0)
    if mode == "error":
        answer(request, error={"code": -32602, "message": "unknown tool"})
    elif mode == "big_answer":
        answer(request, result={"text": "\u00e9" * (200 << 10)})
    else:
        answer(request, result={"method": request["method"], "params": request.get("params")})
