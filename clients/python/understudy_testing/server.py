"""`understudy serve` as a child process on loopback ports chosen by the OS.

    server = Server.start()                      # temp DB, 127.0.0.1:0 for gRPC and HTTP
    client = server.client()
    ...
    server.stop()

The binary is `binary`, else $UNDERSTUDY_BIN, else `understudy` on PATH.
Every wait is bounded: the first stdout line (start_timeout) and the exit
after SIGTERM (stop_timeout, then SIGKILL).
"""

import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time

__all__ = ["Server", "find_binary"]

READY = re.compile(r"^understudy serving grpc=(\S+) http=(\S+) db=(.+)$")


def find_binary(binary=None):
    """The understudy binary: `binary`, else $UNDERSTUDY_BIN, else PATH."""
    found = binary or os.environ.get("UNDERSTUDY_BIN") or shutil.which("understudy")
    if not found:
        raise FileNotFoundError(
            "the understudy binary: pass binary=, set UNDERSTUDY_BIN, or put it on PATH")
    return os.fspath(found)


def _serve_env():
    """This environment without UNDERSTUDY_* settings, which would change what
    serve does (mode, session, config file, ...)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("UNDERSTUDY_")}


# How _read_line ended.
LINE, CLOSED, TIMED_OUT = "line", "closed", "timed out"


def _read_line(fd, timeout):
    """One line from a pipe within `timeout` seconds: (text, how), how being
    LINE, CLOSED (the writer closed the pipe first: it exited) or TIMED_OUT."""
    deadline = time.monotonic() + timeout
    buf = b""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return buf.decode(errors="replace"), TIMED_OUT
            if not sel.select(left):
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                return buf.decode(errors="replace"), CLOSED
            buf += chunk
    return buf.split(b"\n", 1)[0].decode(errors="replace"), LINE


def _drain(stream):
    try:
        while stream.read(65536):
            pass
    except (OSError, ValueError):
        pass
    finally:
        stream.close()


class Server:
    """A running `understudy serve`.

    address: gRPC "HOST:PORT"; http: "http://HOST:PORT"; db: the SQLite
    file it reads and writes (with trace_db, that copy); recording: the
    database it serves a copy of, else None; process: the subprocess.Popen;
    stderr_path: where its log goes.
    """

    def __init__(self, process, address, http, db, stderr_path, tempdir=None, recording=None):
        self.process = process
        self.address = address
        self.http = http
        self.db = db
        self.recording = recording
        self.stderr_path = stderr_path
        self._tempdir = tempdir

    @classmethod
    def start(cls, binary=None, db=None, extra_args=(), *, trace_db=None, start_timeout=20.0,
              env=None):
        """Starts `understudy serve --listen 127.0.0.1:0 --http 127.0.0.1:0
        --db DB [--trace-db TRACE_DB] [extra_args]` and waits (at most
        start_timeout seconds) for its first stdout line. db: None for a
        fresh file in a temporary folder, removed by stop(). trace_db: serve
        a copy of `db` made in this file (True: in the temporary folder), so
        that `db`, a recording, is only read: runs, traces and recordings go
        to the copy. env: the server's environment (default: this one
        without UNDERSTUDY_* variables)."""
        binary = find_binary(binary)
        tempdir = tempfile.TemporaryDirectory(prefix="understudy-")
        try:
            db = os.fspath(db) if db is not None else os.path.join(tempdir.name, "understudy.db")
            if trace_db is True:
                trace_db = os.path.join(tempdir.name, "trace.db")
            copy = ["--trace-db", os.fspath(trace_db)] if trace_db else []
            stderr_path = os.path.join(tempdir.name, "server.stderr")
            args = [binary, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
                    "--db", db, *copy, *[os.fspath(a) for a in extra_args]]
            with open(stderr_path, "wb") as err:
                process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                           stderr=err, env=_serve_env() if env is None else env,
                                           bufsize=0)
            line, how = _read_line(process.stdout.fileno(), start_timeout)
            match = READY.match(line) if how == LINE else None
            if not match:
                exited = None
                if how == CLOSED:
                    # Its stdout closed: it is exiting, or has.
                    try:
                        exited = process.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        pass
                process.kill()
                process.wait(timeout=10)
                process.stdout.close()
                with open(stderr_path, errors="replace") as f:
                    log = f.read()
                got = f" (it printed {line!r})" if line else ""
                if how == LINE:
                    why = f"printed {line!r}, not its serving line"
                elif exited is not None:
                    why = f"exited with code {exited} before its serving line{got}"
                elif how == CLOSED:
                    why = f"closed its stdout before its serving line{got}"
                else:
                    why = f"printed no line within {start_timeout}s{got}"
                raise RuntimeError(f"understudy serve {why}; command: {' '.join(args)}\n"
                                   f"stderr:\n{log}")
        except BaseException:
            tempdir.cleanup()
            raise
        # Later output (none is expected) must never fill the pipe and stall
        # the server.
        threading.Thread(target=_drain, args=(process.stdout,), daemon=True,
                         name="understudy-stdout").start()
        address, http_address, db_path = match.groups()
        return cls(process, address, f"http://{http_address}", db_path, stderr_path, tempdir,
                   recording=db if trace_db else None)

    @property
    def http_address(self):
        """The HTTP listener as "HOST:PORT"."""
        return self.http[len("http://"):]

    def client(self, **kwargs):
        """A Client for this server."""
        from .client import Client
        return Client(self.address, **kwargs)

    def stderr(self):
        """What the server has logged so far."""
        try:
            with open(self.stderr_path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def running(self):
        return self.process.poll() is None

    def stop(self, timeout=20.0):
        """SIGTERM, then at most `timeout` seconds for the exit, then SIGKILL.
        Returns the exit code (0 after a clean drain). Idempotent."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None
        return self.process.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __repr__(self):
        recording = f", recording={self.recording!r}" if self.recording else ""
        return f"Server(address={self.address!r}, http={self.http!r}, db={self.db!r}{recording})"
