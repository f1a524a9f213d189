#!/usr/bin/env python3
"""A tiny LSP client (standard library only) for the walk-through in
scripts/example.sh: what an editor shows while a patch config is edited.

usage: lsp-demo.py PATCHGEN CONFIG TARGET FIXED
  Starts `PATCHGEN server` in the current directory, opens CONFIG (as it is on
  disk), prints the diagnostics published for it, replaces the string TARGET
  by FIXED in the (unsaved) buffer, prints the diagnostics again and hovers on
  FIXED; then shuts the server down. Exit 1 on a protocol error or
  when the server does not answer within 30 s; the server's exit code is checked.
"""

import os
import queue
import subprocess
import sys
import time

from lsp_wire import Wire

patchgen, config, target, fixed = sys.argv[1:5]
proc = subprocess.Popen([patchgen, "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
wire = Wire(proc)
next_id = 0
send = wire.send


def wait(accept):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            item = wire.get(max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if item is None:
            sys.exit("lsp-demo: the server closed its output")
        m = item[1]
        if accept(m):
            return m
    sys.exit("lsp-demo: no answer from the server within 30 s")


def request(method, params):
    global next_id
    next_id += 1
    send({"id": next_id, "method": method, "params": params})
    m = wait(lambda m: m.get("id") == next_id and "method" not in m)
    if "error" in m:
        sys.exit(f"lsp-demo: {method}: {m['error']}")
    return m["result"]


uri = "file://" + os.path.abspath(config)
text = open(config, encoding="utf-8").read()


def diagnostics(version):
    m = wait(
        lambda m: m.get("method") == "textDocument/publishDiagnostics"
        and m["params"]["uri"] == uri
        and m["params"].get("version", version) == version
    )
    found = m["params"]["diagnostics"]
    print(f"  {len(found)} diagnostic(s)")
    for d in found:
        start = d["range"]["start"]
        print(f"  {config}:{start['line'] + 1}:{start['character'] + 1}: {d.get('code')} {d['message'].splitlines()[0]}")


request("initialize", {"processId": os.getpid(), "rootUri": "file://" + os.getcwd(), "capabilities": {}})
send({"method": "initialized", "params": {}})
print(f"open {config}")
send({"method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}})
diagnostics(1)

print(f"edit (unsaved): \"{target}\" -> \"{fixed}\"")
text = text.replace(f'"{target}"', f'"{fixed}"')
send({"method": "textDocument/didChange", "params": {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": text}]}})
diagnostics(2)

at = text.index(f'"{fixed}"') + 2
line = text.count("\n", 0, at)
character = at - (text.rfind("\n", 0, at) + 1)
print(f"hover on \"{fixed}\" ({config}:{line + 1}:{character + 1})")
hover = request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
contents = hover["contents"] if hover else {"value": "(nothing)"}
value = contents["value"] if isinstance(contents, dict) else str(contents)
for shown in value.strip().splitlines()[:6]:
    print(f"  | {shown}")

request("shutdown", None)
send({"method": "exit"})
code = proc.wait(timeout=30)
print(f"server exited with {code}")
sys.exit(0 if code == 0 else 1)
