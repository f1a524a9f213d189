"""The LSP wire format for the scripts that drive `patchgen server`
(scripts/lsp-demo.py, scripts/bench-server.py): Content-Length framing over
a child's pipes. Standard library only.
"""

import json
import queue
import threading
import time


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
