// patchgen for VS Code: starts `patchgen server` (LSP over stdio) for patch
// configs (`*_patch_gen_config.py`) and the files they generate
// (`generated/patched_modeling_*.py` and `.diff`). Everything the editor
// shows comes from the server; this file only starts it with the user's
// settings and restarts it when they change.
"use strict";
const path = require("path");
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

/** The server's command and environment, from the `patchgen.*` settings. */
function serverOptions() {
  const cfg = vscode.workspace.getConfiguration("patchgen");
  const command = cfg.get("path") || "patchgen";
  const env = Object.assign({}, process.env, cfg.get("env") || {});
  const extra = cfg.get("pythonPath") || [];
  if (extra.length > 0) {
    env.PYTHONPATH = extra.concat(env.PYTHONPATH ? [env.PYTHONPATH] : []).join(path.delimiter);
  }
  const venv = cfg.get("virtualEnv");
  if (venv) {
    env.VIRTUAL_ENV = venv;
  }
  return { command, args: ["server"], transport: TransportKind.stdio, options: { env } };
}

function clientOptions() {
  const cfg = vscode.workspace.getConfiguration("patchgen");
  const docsUrl = cfg.get("docsUrl");
  return {
    documentSelector: [
      { scheme: "file", language: "python", pattern: "**/*_patch_gen_config.py" },
      { scheme: "file", language: "python", pattern: "**/generated/patched_modeling_*.py" },
      { scheme: "file", pattern: "**/generated/patched_modeling_*.diff" },
    ],
    initializationOptions: docsUrl ? { docsUrl } : {},
    outputChannelName: "patchgen",
  };
}

async function start() {
  client = new LanguageClient("patchgen", "patchgen", serverOptions(), clientOptions());
  await client.start();
}

async function restart() {
  if (client) {
    await client.stop();
    client = undefined;
  }
  await start();
}

exports.activate = async (context) => {
  context.subscriptions.push(vscode.commands.registerCommand("patchgen.restart", restart));
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("patchgen")) {
        restart();
      }
    })
  );
  await start();
};

exports.deactivate = () => (client ? client.stop() : undefined);
