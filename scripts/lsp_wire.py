"""The LSP wire format for the scripts that drive `patchgen server`
(scripts/lsp-demo.py, scripts/bench-server.py, scripts/server-acceptance.py):
Content-Length framing over a child's pipes (`Wire`), and a small client on
top of it (`Client`: requests, waiting for a message, the server's own
requests answered as an editor would). Standard library only.
"""

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request


class Wire:
    """A started server's pipes: `send` a message, `get` the next one with the time it arrived."""

    def __init__(self, proc):
        self.proc = proc
        self.incoming = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    self.incoming.put(None)
                    return
                line = line.decode().strip()
                if not line:
                    break
                name, _, value = line.partition(":")
                headers[name.lower()] = value.strip()
            body = out.read(int(headers["content-length"]))
            self.incoming.put((time.perf_counter(), json.loads(body)))

    def send(self, message):
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.proc.stdin.flush()

    def get(self, timeout):
        """`(arrival time, message)`, or None when the server closed its output; queue.Empty on timeout."""
        return self.incoming.get(timeout=timeout)


def uri_of(path):
    return "file://" + urllib.parse.quote(os.path.abspath(path))


def path_of(uri):
    return urllib.request.url2pathname(urllib.parse.urlparse(uri).path)


def server_env(wheel, ruff=None):
    """The server's environment: PYTHONPATH = the wheel; ruff (given, or the one on PATH) first on PATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.abspath(wheel)
    ruff = ruff or os.environ.get("PATCHGEN_RUFF") or shutil.which("ruff")
    if not ruff:
        sys.exit('no ruff: put ruff 0.13.2 on PATH (eval "$(scripts/test-env.sh)" installs it) or pass --ruff')
    env["PATH"] = os.path.dirname(os.path.abspath(ruff)) + os.pathsep + env.get("PATH", "")
    return env


class Client:
    """`patchgen server` started in a project tree (cwd = the tree, as `veomni-check` runs
    `--check`), over a `Wire`. The server's requests (workspace/applyEdit,
    window/showDocument, workspace/codeLens/refresh) are answered at once; every message
    keeps its arrival time as `m["_at"]` (time.perf_counter())."""

    def __init__(self, binary, tree, env, args=()):
        self.tree = os.path.abspath(tree)
        # The server's scratch (wheel members, rule docs) goes to TMPDIR: ours, removed at close.
        self.tmp = tempfile.mkdtemp(prefix="patchgen-lsp-")
        self.proc = subprocess.Popen(
            [binary, "server", *args],
            cwd=self.tree,
            env=dict(env, TMPDIR=self.tmp),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.wire = Wire(self.proc)
        self.lock = threading.Lock()
        self.backlog = []
        self.next_id = 0

    def _send(self, msg):
        with self.lock:
            self.wire.send(msg)

    def _next(self, timeout):
        item = self.wire.get(timeout)
        if item is None:
            sys.exit("the server closed its output (did it die?)")
        at, msg = item
        msg["_at"] = at
        if "method" in msg and "id" in msg:
            result = {"applied": True} if msg["method"] == "workspace/applyEdit" else None
            self._send({"id": msg["id"], "result": result})
        return msg

    def notify(self, method, params):
        self._send({"method": method, "params": params})

    def send_request(self, method, params):
        self.next_id += 1
        self._send({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    def wait(self, pred, timeout=60.0):
        """The first message (kept ones first, then new ones) for which `pred` holds; None on timeout."""
        for i, m in enumerate(self.backlog):
            if pred(m):
                return self.backlog.pop(i)
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                return None
            try:
                m = self._next(left)
            except queue.Empty:
                return None
            if pred(m):
                return m
            self.backlog.append(m)
            if len(self.backlog) > 2000:  # old diagnostics and log messages are of no use
                del self.backlog[:1000]

    def drop(self, pred):
        """Forget the kept messages for which `pred` holds."""
        self.backlog = [m for m in self.backlog if not pred(m)]

    def request(self, method, params, timeout=60.0):
        """(result, error, seconds) of a request, timed from send to response."""
        t0 = time.perf_counter()
        rid = self.send_request(method, params)
        m = self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout)
        if m is None:
            return None, {"message": f"no answer to {method} in {timeout}s"}, timeout
        return m.get("result"), m.get("error"), m["_at"] - t0

    def initialize(self):
        result, error, _ = self.request(
            "initialize",
            {"processId": os.getpid(), "rootUri": uri_of(self.tree), "capabilities": {}},
        )
        if error:
            sys.exit(f"initialize failed: {error}")
        self.notify("initialized", {})
        return result

    def open(self, path, text, language="python"):
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri_of(path), "languageId": language, "version": 1, "text": text}},
        )

    def diagnostics(self, uri, pred=lambda ds, version: True, timeout=60.0):
        """The next publishDiagnostics for `uri` whose (diagnostics, version) satisfy `pred`."""

        def match(m):
            if m.get("method") != "textDocument/publishDiagnostics":
                return False
            p = m["params"]
            return p["uri"] == uri and pred(p["diagnostics"], p.get("version"))

        return self.wait(match, timeout)

    def close(self):
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def apply_edits(text, edits):
    """`text` with LSP TextEdits applied (UTF-16 positions), last first."""
    # LSP lines end at \n (a \r before it is part of the line here; the generated files have none).
    lines = text.split("\n")
    lines = [x + "\n" for x in lines[:-1]] + ([lines[-1]] if lines[-1] else [])

    def offset(pos):
        line, ch = pos["line"], pos["character"]
        if line >= len(lines):
            return len(text)
        before = sum(len(x) for x in lines[:line])
        s = lines[line]
        units = 0
        for i, c in enumerate(s):
            if units >= ch:
                return before + i
            units += 2 if ord(c) > 0xFFFF else 1
        return before + len(s)

    spans = [(offset(e["range"]["start"]), offset(e["range"]["end"]), e["newText"]) for e in edits]
    spans.sort(reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def utf16_len(s):
    return sum(2 if ord(c) > 0xFFFF else 1 for c in s)
