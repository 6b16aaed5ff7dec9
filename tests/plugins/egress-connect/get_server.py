# A GET server on 127.0.0.1 for the egress tests, on a port the system gives.
#
#   get_server.py tls PORT_FILE CERT KEY    HTTPS with the given certificate
#   get_server.py plain PORT_FILE           plain HTTP
#
# Every GET gets "tea-<kind>-ok\n", but GET /bytes/N, which gets N bytes (i % 251 for byte i, so a
# lost, doubled or reordered chunk shows). Once listening it prints the port on stdout and, unless
# PORT_FILE is "-", writes it to PORT_FILE (whole, by a rename).
import http.server
import os
import ssl
import sys

kind = sys.argv[1]
body = ("tea-" + kind + "-ok\n").encode()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/bytes/"):
            size = int(self.path[len("/bytes/"):])
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            chunk = bytes(i % 251 for i in range(251 * 256))
            sent = 0
            while sent < size:
                part = chunk[: min(len(chunk), size - sent)]
                self.wfile.write(part)
                sent += len(part)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
if kind == "tls":
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[3], sys.argv[4])
    server.socket = context.wrap_socket(server.socket, server_side=True)
port = str(server.server_address[1])
if sys.argv[2] != "-":
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write(port)
    os.rename(sys.argv[2] + ".tmp", sys.argv[2])
print(port, flush=True)
server.serve_forever()
