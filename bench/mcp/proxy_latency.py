#!/usr/bin/env python3
"""bench/mcp/proxy_latency.py: what `understudy mcp-proxy` adds to a tool call.

Usage: proxy_latency.py --http HOST:PORT --name NAME --body FILE --expect TEXT
                        --count N [--warmup W] [--label L] -- PROXY_ARGV...

Starts PROXY_ARGV (`understudy mcp-proxy --http http://HOST:PORT --name NAME
-- CMD...`, against a replay server, so CMD never starts) and, one call at a
time, alternately:
  - writes the JSON-RPC request of FILE as one line on the proxy's stdin and
    times until its answer line arrives on the proxy's stdout;
  - POSTs the same request to http://HOST:PORT/mcp/NAME on one keep-alive
    connection (the bytes an MCP client sends: Content-Type
    application/json, Accept application/json, text/event-stream) and times
    until the whole response is read.
Both clients are the thinnest this language allows (a pipe; a socket and
prebuilt request bytes), so the difference of the two is the proxy's own
cost: two pipe hops, its parsing and its HTTP request to the server.

Each request gets its own JSON-RPC id (the replay rewrites the recorded id
to the caller's); an answer counts only if it carries that id and TEXT, and
any other answer, a non-200 status or a proxy that ends stops the run
(exit 1). W calls of each kind are made first and not counted.

Every wait ends after 10 s (an error). Prints one line:
  RESULT label=L count=N proxy_p50_us=… proxy_p99_us=… http_p50_us=…
         http_p99_us=… added_p50_us=… added_p99_us=…
added_* is proxy_* minus http_* (percentiles of N calls each, nearest rank).
"""
import argparse
import json
import math
import os
import select
import socket
import subprocess
import sys
import time


def percentile(values, q):
    s = sorted(values)
    return s[max(0, math.ceil(q * len(s)) - 1)]


class HttpClient:
    """One keep-alive connection; answers with a Content-Length (a JSON
    answer) or chunked (an SSE answer: the events of a recording made
    through the proxy)."""

    def __init__(self, host, port, path):
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.head = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                     "Content-Type: application/json\r\n"
                     "Accept: application/json, text/event-stream\r\n").encode()
        self.buf = b""

    def call(self, body):
        """Sends body; returns (status, whole body de-chunked) once the
        response has been read to its end."""
        self.sock.sendall(self.head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        head = self._until(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = lines[0].split(b" ")[1]
        length, chunked = None, False
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            k, v = k.strip().lower(), v.strip().lower()
            if k == b"content-length":
                length = int(v)
            elif k == b"transfer-encoding" and v == b"chunked":
                chunked = True
        if chunked:
            parts = []
            while True:
                size = int(self._until(b"\r\n").split(b";")[0], 16)
                if size == 0:
                    self._until(b"\r\n")  # No trailers: the empty line.
                    return status, b"".join(parts)
                parts.append(self._take(size))
                self._take(2)
        if length is None:
            raise RuntimeError(f"HTTP answer with neither Content-Length nor chunks: {head!r}")
        return status, self._take(length)

    def _until(self, sep):
        while sep not in self.buf:
            self._recv()
        out, _, self.buf = self.buf.partition(sep)
        return out

    def _take(self, n):
        while len(self.buf) < n:
            self._recv()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _recv(self):
        data = self.sock.recv(65536)
        if not data:
            raise RuntimeError("the server closed the connection")
        self.buf += data


class LineReader:
    """Lines from a pipe, each waited for at most `timeout` seconds (a proxy
    that stops answering fails the run instead of hanging it)."""

    def __init__(self, fd, timeout=10):
        self.fd, self.timeout, self.buf = fd, timeout, b""

    def readline(self):
        """The next line with its newline; b"" when the pipe ends."""
        while b"\n" not in self.buf:
            if not select.select([self.fd], [], [], self.timeout)[0]:
                raise RuntimeError(f"no answer from the proxy in {self.timeout} s")
            data = os.read(self.fd, 65536)
            if not data:
                return b""
            self.buf += data
        line, _, self.buf = self.buf.partition(b"\n")
        return line + b"\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--http", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--body", required=True)
    ap.add_argument("--expect", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--label", default="proxy")
    ap.add_argument("proxy", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    argv = a.proxy[1:] if a.proxy[:1] == ["--"] else a.proxy
    if not argv:
        ap.error("the proxy's command line goes after --")
    with open(a.body) as f:
        request = json.loads(f.read())
    expect = a.expect.encode()
    host, _, port = a.http.rpartition(":")
    http = HttpClient(host, int(port), f"/mcp/{a.name}")
    proxy = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    out = LineReader(proxy.stdout.fileno())

    def check(kind, i, answer):
        # A JSON body, a proxy's line, or SSE events (the last one's data
        # is the response).
        if answer.startswith(b"event:") or answer.startswith(b"data:"):
            data = [l[5:] for l in answer.split(b"\n") if l.startswith(b"data:")]
            answer = data[-1] if data else b""
        if expect not in answer or json.loads(answer).get("id") != i:
            raise RuntimeError(f"{kind} call {i}: wrong answer: {answer[:300]!r}")

    proxy_us, http_us = [], []
    try:
        for i in range(1, a.warmup + a.count + 1):
            request["id"] = i
            line = json.dumps(request, separators=(",", ":")).encode()
            t0 = time.perf_counter_ns()
            proxy.stdin.write(line + b"\n")
            answer = out.readline()
            t1 = time.perf_counter_ns()
            if not answer:
                raise RuntimeError(f"the proxy ended (exit {proxy.wait()})")
            check("proxy", i, answer)
            t2 = time.perf_counter_ns()
            status, body = http.call(line)
            t3 = time.perf_counter_ns()
            if status != b"200":
                raise RuntimeError(f"HTTP call {i}: status {status.decode()}: {body[:300]!r}")
            check("HTTP", i, body)
            if i > a.warmup:
                proxy_us.append((t1 - t0) / 1000)
                http_us.append((t3 - t2) / 1000)
    except (RuntimeError, OSError, ValueError) as e:
        print(f"proxy_latency: {e}", file=sys.stderr)
        proxy.kill()
        return 1
    proxy.stdin.close()
    try:
        code = proxy.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proxy.kill()
        code = "nothing: still running 10 s after its stdin ended"
    if code != 0:
        print(f"proxy_latency: the proxy exited {code}", file=sys.stderr)
        return 1
    p50, p99 = percentile(proxy_us, 0.5), percentile(proxy_us, 0.99)
    h50, h99 = percentile(http_us, 0.5), percentile(http_us, 0.99)
    print(f"RESULT label={a.label} count={a.count} proxy_p50_us={p50:.1f} proxy_p99_us={p99:.1f} "
          f"http_p50_us={h50:.1f} http_p99_us={h99:.1f} added_p50_us={p50 - h50:.1f} added_p99_us={p99 - h99:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
