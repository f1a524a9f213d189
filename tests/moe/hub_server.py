"""A stand-in for the Hugging Face Hub's `resolve` URLs, on 127.0.0.1, for
tests/moe_remote.rs (standard library only).

  GET|HEAD /{org}/{repo}/resolve/{rev}/{path}  -> ROOT/{org}/{repo}/{path}
  GET|HEAD /plain/{path}                       -> ROOT/{path} (a plain http(s) directory)

Honours `Range: bytes=a-b | a- | -n` (206 + Content-Range, 416 beyond the
end), sends Content-Length, ETag-free. Repositories named with --private
answer 401 unless `Authorization: Bearer TOKEN` carries --token (with no
error code: a server that does not say why).

Refusals in the Hub's words (`X-Error-Code`, `X-Error-Message`), as the
Hub answers its `resolve` URLs:
  RepoNotFound      no directory ROOT/{org}/{repo}: 401 without a token, 404 with one
  GatedRepo         a repository named with --gated: 401 without a token, 403 with
                    one that is not --grant, served with the --grant one
  RevisionNotFound  {rev} is neither `main` nor named with --revision: 404
  EntryNotFound     no such file in the repository: 404

Control (for the test, never counted):
  GET /__stats               -> {"bytes": N, "requests": M, "ranges": [...]} body bytes served
  GET /__reset               -> zero the counters and clear faults
  GET /__fault?path=P&mode=M[&times=K]  -> requests whose path ends with P get fault M:
      404        answer 404
      401        answer 401
      truncate   send the full Content-Length but only half the body, then close
      truncate-data  the same, only for reads that start past byte 0 (tensor data)
      ignore-range  answer 200 with the whole file, whatever the Range
      500        answer 500 the first K times (default 1), then serve normally
      hang       sleep 30 s before answering

usage: hub_server.py ROOT [--private ORG/REPO]... [--token T] [--gated ORG/REPO]... [--grant T]
                    [--revision REV]...
Prints "PORT n" on stdout once listening.
"""

import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = sys.argv[1]
PRIVATE = set()
TOKEN = None
GATED = set()
GRANT = None
REVISIONS = {"main"}
args = sys.argv[2:]
while args:
    if args[0] == "--private":
        PRIVATE.add(args[1])
        args = args[2:]
    elif args[0] == "--token":
        TOKEN = args[1]
        args = args[2:]
    elif args[0] == "--gated":
        GATED.add(args[1])
        args = args[2:]
    elif args[0] == "--grant":
        GRANT = args[1]
        args = args[2:]
    elif args[0] == "--revision":
        REVISIONS.add(args[1])
        args = args[2:]
    else:
        sys.exit(f"unknown argument {args[0]}")

LOCK = threading.Lock()
STATS = {"bytes": 0, "requests": 0}
FAULTS = {}  # path suffix -> [mode, times]


def count(n):
    with LOCK:
        STATS["bytes"] += n


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def control(self, url):
        q = urllib.parse.parse_qs(url.query)
        if url.path == "/__stats":
            with LOCK:
                body = json.dumps(STATS).encode()
        elif url.path == "/__reset":
            with LOCK:
                STATS.update(bytes=0, requests=0)
                FAULTS.clear()
            body = b"ok"
        elif url.path == "/__fault":
            with LOCK:
                FAULTS[q["path"][0]] = [q["mode"][0], int(q.get("times", ["1"])[0])]
            body = b"ok"
        else:
            return False
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return True

    def simple(self, code, text=b"", error=None):
        self.send_response(code)
        self.send_header("Content-Length", str(len(text)))
        if error is not None:
            self.send_header("X-Error-Code", error[0])
            self.send_header("X-Error-Message", error[1])
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(text)

    def hub_refusal(self, repo, rev, file):
        """(status, X-Error-Code, X-Error-Message) when the Hub refuses `repo`@`rev`/`file`, else None."""
        auth = self.headers.get("Authorization", "")
        if not os.path.isdir(os.path.join(ROOT, *repo.split("/"))):
            return 404 if auth else 401, "RepoNotFound", "Repository not found"
        if repo in GATED and auth != f"Bearer {GRANT}":
            if auth:
                return 403, "GatedRepo", f"Access to model {repo} is restricted and you are not in the authorized list."
            return 401, "GatedRepo", f"Access to model {repo} is restricted. You must be authenticated to access it."
        if rev not in REVISIONS:
            return 404, "RevisionNotFound", f"Invalid rev id: {rev}"
        if not os.path.isfile(file):
            return 404, "EntryNotFound", "Entry not found"
        return None

    def resolve(self, path):
        parts = path.lstrip("/").split("/")
        if parts[0] == "plain":
            return None, None, os.path.join(ROOT, *parts[1:])
        if len(parts) < 5 or parts[2] != "resolve":
            return None, None, None
        repo = f"{parts[0]}/{parts[1]}"
        return repo, parts[3], os.path.join(ROOT, parts[0], parts[1], *parts[4:])

    def serve(self):
        url = urllib.parse.urlsplit(self.path)
        if self.control(url):
            return
        with LOCK:
            STATS["requests"] += 1
        path = urllib.parse.unquote(url.path)
        repo, rev, file = self.resolve(path)
        if file is None:
            return self.simple(404, b"no such route")
        if repo in PRIVATE:
            auth = self.headers.get("Authorization", "")
            if auth != f"Bearer {TOKEN}":
                return self.simple(401, b"Invalid credentials in Authorization header")
        elif repo is not None:
            refusal = self.hub_refusal(repo, rev, file)
            if refusal is not None:
                status, code, message = refusal
                return self.simple(status, message.encode(), (code, message))
        fault = None
        with LOCK:
            for suffix, f in FAULTS.items():
                if path.endswith(suffix):
                    fault = f[0]
                    if fault == "500":
                        if f[1] > 0:
                            f[1] -= 1
                        else:
                            fault = None
        if fault == "404":
            return self.simple(404, b"Entry not found")
        if fault == "401":
            return self.simple(401, b"Invalid credentials")
        if fault == "500":
            return self.simple(500, b"Internal Error")
        if fault == "hang":
            time.sleep(30)
        if not os.path.isfile(file):
            return self.simple(404, b"Entry not found")
        size = os.path.getsize(file)
        start, end, partial = 0, size, False
        rng = self.headers.get("Range")
        if rng and fault != "ignore-range":
            spec = rng.strip().split("=", 1)[1]
            a, b = spec.split("-", 1)
            if a == "":
                start, end = max(0, size - int(b)), size
            else:
                start = int(a)
                end = size if b == "" else min(size, int(b) + 1)
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            partial = True
        if fault == "truncate-data":
            fault = "truncate" if start > 0 else None
        n = end - start
        self.send_response(206 if partial else 200)
        self.send_header("Content-Length", str(n))
        self.send_header("Accept-Ranges", "bytes")
        if partial:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        self.end_headers()
        if self.command == "HEAD":
            return
        send = n // 2 if fault == "truncate" else n
        with open(file, "rb") as f:
            if fault is None:
                # Zero-copy, so the stand-in is not the bottleneck of a benchmark.
                self.wfile.flush()
                at, left = start, send
                while left > 0:
                    k = os.sendfile(self.connection.fileno(), f.fileno(), at, min(left, 1 << 24))
                    if k == 0:
                        break
                    count(k)
                    at += k
                    left -= k
                return
            f.seek(start)
            left = send
            while left > 0:
                chunk = f.read(min(left, 1 << 20))
                if not chunk:
                    break
                self.wfile.write(chunk)
                count(len(chunk))
                left -= len(chunk)
        if fault == "truncate":
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)

    do_GET = serve
    do_HEAD = serve


class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A client that gave up (a timeout test) closes its end: not news.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


server = Server(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
