#!/usr/bin/env python3
"""HTTP/1.1 keep-alive test server for the HTTPClient tests (standard library only).

Binds 127.0.0.1 on a free port and prints `listening on http://127.0.0.1:PORT` as its first stdout line
(`https://` with --tls, followed by a `certificate PATH` line naming the self-signed certificate to trust).

Endpoints (any method):
  /echo                         method, path, query, request headers and body as JSON; answers with
                                `X-Echo-Method` and two `X-Multi` fields
  /status/N                     status N with a small JSON body (none for 204 and 304)
  /stream?lines=N&delay_ms=D    chunked JSON lines `{"index": i, "sent_at": t}`, D ms apart; lines=0 never
                                ends (until the client goes away, bounded at 10 minutes); split=1 sends each
                                line in two chunks
  /stall?lines=N&stall_ms=D     chunked: N lines, then silence for D ms, then the end
  /slow?delay_ms=D              waits D ms, then answers JSON with the query
  /upload                       reads the body, answers {"length": n, "sha256": hex}
  /connections                  {"accepted": TCP connections accepted, "streams_started", "stream_aborts"}

The server exits when its stdin closes (the test process went away), on SIGTERM, or after 15 minutes.
"""

import argparse
import hashlib
import json
import os
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

MAX_LIFETIME_SECONDS = 15 * 60
MAX_STREAM_SECONDS = 10 * 60
MAX_DELAY_MS = 60_000


class Stats:
    """Counters the tests read through /connections."""

    def __init__(self):
        self.lock = threading.Lock()
        self.accepted = 0
        self.streams_started = 0
        self.stream_aborts = 0

    def bump(self, name):
        with self.lock:
            setattr(self, name, getattr(self, name) + 1)

    def snapshot(self):
        with self.lock:
            return {
                "accepted": self.accepted,
                "streams_started": self.streams_started,
                "stream_aborts": self.stream_aborts,
            }


STATS = Stats()


class ClientGone(Exception):
    """The client closed the connection."""


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # the default backlog of 5 drops SYNs when many clients connect at once
    tls_context = None

    def get_request(self):
        sock, address = self.socket.accept()
        if self.tls_context is not None:
            # The handshake happens in the handler thread, so a bad client cannot block accepting.
            sock = self.tls_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def process_request(self, request, client_address):
        STATS.bump("accepted")
        super().process_request(request, client_address)

    def finish_request(self, request, client_address):
        if self.tls_context is not None:
            try:
                request.settimeout(10)
                request.do_handshake()
                request.settimeout(None)
            except (OSError, ssl.SSLError):
                return
        super().finish_request(request, client_address)

    def handle_error(self, request, client_address):
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, ssl.SSLError, TimeoutError, ClientGone)):
            return
        super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "SwitchboardTestServer/1"
    # Headers and body go out in separate writes: without TCP_NODELAY each response waits for a delayed ACK.
    disable_nagle_algorithm = True

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        self.route()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    # -- helpers --

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def send_json(self, status, payload, extra_headers=()):
        data = json.dumps(payload).encode()
        self.send_response(status)
        for name, value in extra_headers:
            self.send_header(name, value)
        if status in (204, 304):
            self.end_headers()
            return
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def client_gone(self):
        """Whether the client closed its side (readable with no data)."""
        if isinstance(self.connection, ssl.SSLSocket):
            return False  # peeking is not possible through TLS; writes still notice
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def write_chunk(self, data):
        if self.client_gone():
            raise ClientGone()
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        except (ConnectionError, OSError) as error:
            raise ClientGone() from error

    def start_chunked(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def end_chunked(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def sleep_watching(self, seconds):
        """Sleeps, raising ClientGone as soon as the client disconnects."""
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self.client_gone():
                raise ClientGone()
            time.sleep(min(0.02, remaining))

    @staticmethod
    def line(index):
        return json.dumps({"index": index, "sent_at": time.time()}).encode() + b"\n"

    # -- routes --

    def route(self):
        url = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        body = self.read_body()
        path = url.path

        def number(name, default):
            try:
                return int(query.get(name, default))
            except ValueError:
                return default

        if path == "/echo":
            self.send_json(200, {
                "method": self.command,
                "path": path,
                "query": query,
                "headers": [[name, value] for name, value in self.headers.items()],
                "body": body.decode("utf-8", "replace"),
                "body_length": len(body),
            }, extra_headers=[("X-Echo-Method", self.command), ("X-Multi", "one"), ("X-Multi", "two")])
        elif path.startswith("/status/"):
            try:
                status = int(path[len("/status/"):])
            except ValueError:
                status = 400
            self.send_json(status, {"status": status})
        elif path == "/slow":
            time.sleep(min(max(number("delay_ms", 1000), 0), MAX_DELAY_MS) / 1000)
            self.send_json(200, {"query": query})
        elif path == "/upload":
            self.send_json(200, {"length": len(body), "sha256": hashlib.sha256(body).hexdigest()})
        elif path == "/connections":
            self.send_json(200, STATS.snapshot())
        elif path == "/stream":
            self.stream(number("lines", 10), min(max(number("delay_ms", 0), 0), MAX_DELAY_MS),
                        number("split", 0) == 1)
        elif path == "/stall":
            self.stall(number("lines", 1), min(max(number("stall_ms", 5000), 0), MAX_DELAY_MS))
        else:
            self.send_json(404, {"error": "no such endpoint", "path": path})

    def stream(self, count, delay_ms, split):
        STATS.bump("streams_started")
        self.start_chunked()
        started = time.monotonic()
        index = 0
        try:
            while (count == 0 or index < count) and time.monotonic() - started < MAX_STREAM_SECONDS:
                if index > 0 and delay_ms > 0:
                    self.sleep_watching(delay_ms / 1000)
                data = self.line(index)
                if split:
                    half = len(data) // 2
                    self.write_chunk(data[:half])
                    self.sleep_watching(0.01)
                    self.write_chunk(data[half:])
                else:
                    self.write_chunk(data)
                index += 1
            self.end_chunked()
        except ClientGone:
            STATS.bump("stream_aborts")
            self.close_connection = True

    def stall(self, count, stall_ms):
        self.start_chunked()
        try:
            for index in range(count):
                self.write_chunk(self.line(index))
            self.sleep_watching(stall_ms / 1000)
            self.end_chunked()
        except ClientGone:
            self.close_connection = True


def make_certificate(directory):
    """A self-signed certificate for 127.0.0.1 made with the openssl command; returns (cert, key) paths."""
    cert = os.path.join(directory, "cert.pem")
    key = os.path.join(directory, "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tls", action="store_true", help="serve HTTPS with a fresh self-signed certificate")
    arguments = parser.parse_args()

    # A parent that spawned us from a thread with signals blocked (libdispatch workers do) passes its mask on:
    # unblock everything, or SIGTERM would never arrive.
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    directory = tempfile.mkdtemp(prefix="switchboard-http-test-")

    def exit_now(*_):
        shutil.rmtree(directory, ignore_errors=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, exit_now)
    signal.signal(signal.SIGINT, exit_now)

    server = Server(("127.0.0.1", 0), Handler)
    scheme = "http"
    certificate = None
    if arguments.tls:
        certificate, key = make_certificate(directory)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        server.tls_context = context
        scheme = "https"

    port = server.server_address[1]
    print(f"listening on {scheme}://127.0.0.1:{port}", flush=True)
    if certificate:
        print(f"certificate {certificate}", flush=True)

    def watch_stdin():
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except OSError:
            pass
        exit_now()

    threading.Thread(target=watch_stdin, daemon=True).start()
    timer = threading.Timer(MAX_LIFETIME_SECONDS, exit_now)
    timer.daemon = True
    timer.start()
    server.serve_forever(poll_interval=0.2)


if __name__ == "__main__":
    main()
