//! `patchgen server`: a Language Server Protocol server for patch configs
//! (`*_patch_gen_config.py`), over stdio, on `lsp-server` + `lsp-types`.
//!
//! - `transport`: framed JSON-RPC on stdin/stdout; a malformed message is
//!   skipped and logged, never the end of the server.
//! - `server`: the main loop (open buffers, debounced checks on worker
//!   threads, latest wins; requests answered from the buffers).
//! - `check`: one config evaluated from the unsaved buffers
//!   (`patchgen_lint::lint_buffers` over a `patchgen_config::Overlay`),
//!   linted and generated, as LSP diagnostics with code, severity, range
//!   (UTF-16 columns, `text`) and a link to the code's docs (`docs`).
//! - `site`: what the cursor is on (a patch target, an `add_import`
//!   module or name, a `# noqa` code, a patch function), read from the
//!   syntax tree ruff's parser recovers.
//! - `upstream`: the `source_module` on the project's search path, and
//!   what a target names there (hover, definition, completion).
//! - `actions`: PG301's fix and `# noqa` as workspace edits.
//!
//! Nothing is executed: configs are evaluated statically, upstream modules
//! are parsed, never imported; the only process started is ruff, as
//! `patchgen check` starts it. The library never prints: the protocol
//! is its only output (`window/logMessage` for the log).

// Libraries return what they have to say; the binary prints it.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod actions;
pub mod check;
pub mod docs;
pub mod generated;
mod server;
pub mod site;
pub mod text;
pub mod transport;
pub mod upstream;

use std::path::PathBuf;
use std::time::Duration;

use lsp_server::{Message, Response};
use lsp_types::{
    CodeActionKind, CodeActionOptions, CodeActionProviderCapability, CompletionOptions, HoverProviderCapability,
    InitializeParams, InitializeResult, OneOf, SaveOptions, ServerCapabilities, ServerInfo, TextDocumentSyncCapability,
    TextDocumentSyncKind, TextDocumentSyncOptions, TextDocumentSyncSaveOptions,
};

/// How the server runs.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// How long after a change its check starts (changes in between restart the wait).
    pub debounce: Duration,
    /// Run ruff on the generated text, for its rejections (as `check` does).
    pub with_ruff: bool,
    /// A directory for what the server writes for the editor to open:
    /// wheel members (go to definition) and the rule docs (links).
    pub scratch: PathBuf,
    /// The environment checks run in (settings, the upstream search path,
    /// ruff's): the binary's snapshot; the default is empty.
    pub env: patchgen_core::settings::Env,
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions {
            debounce: Duration::from_millis(50),
            with_ruff: true,
            scratch: std::env::temp_dir().join(format!("patchgen-server-{}", env!("CARGO_PKG_VERSION"))),
            env: patchgen_core::settings::Env::default(),
        }
    }
}

/// How the server ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// `shutdown`, then `exit`: exit code 0.
    Clean,
    /// `exit` without `shutdown` (the protocol's exit code 1).
    WithoutShutdown,
    /// The input ended without `exit`.
    InputClosed,
}

impl Exit {
    /// The process exit code the protocol asks for.
    pub fn code(self) -> i32 {
        match self {
            Exit::Clean => 0,
            Exit::WithoutShutdown | Exit::InputClosed => 1,
        }
    }
}

/// The command of the \"Regenerate from the config\" code action (argument: the generated file's URI).
pub const COMMAND_REGENERATE: &str = "patchgen.regenerate";
/// The command of a patch's code lens (arguments: the generated file's URI, a 0-based line).
pub const COMMAND_OPEN_GENERATED: &str = "patchgen.openGenerated";

/// The server's capabilities.
pub fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(TextDocumentSyncKind::INCREMENTAL),
            save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions { include_text: Some(false) })),
            ..TextDocumentSyncOptions::default()
        })),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec!["\"".into(), "'".into(), ".".into()]),
            ..CompletionOptions::default()
        }),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![CodeActionKind::QUICKFIX]),
            ..CodeActionOptions::default()
        })),
        code_lens_provider: Some(lsp_types::CodeLensOptions { resolve_provider: Some(false) }),
        // "Go to generated": from a patch in a config to what it produced.
        implementation_provider: Some(lsp_types::ImplementationProviderCapability::Simple(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        execute_command_provider: Some(lsp_types::ExecuteCommandOptions {
            commands: vec![COMMAND_REGENERATE.to_string(), COMMAND_OPEN_GENERATED.to_string()],
            ..lsp_types::ExecuteCommandOptions::default()
        }),
        ..ServerCapabilities::default()
    }
}

/// Serve over stdio until `exit` or the end of stdin.
pub fn run_stdio(options: ServerOptions) -> Exit {
    let (out, input, writer) = transport::stdio();
    // The loop parses buffers too (code actions): on the command line's
    // stack, so deep nesting is a finding, never a stack overflow.
    let looped = {
        let out = out.clone();
        std::thread::Builder::new()
            .name("patchgen-server".into())
            .stack_size(patchgen_core::workers::STACK_SIZE)
            .spawn(move || serve(&out, &input, options))
    };
    let exit = match looped {
        Ok(handle) => handle.join().unwrap_or(Exit::InputClosed),
        Err(_) => Exit::InputClosed,
    };
    drop(out);
    writer.join();
    exit
}

/// Serve over a pair of channels: the initialize handshake, then the loop.
pub fn serve(
    out: &crossbeam_channel::Sender<Message>,
    input: &crossbeam_channel::Receiver<Message>,
    options: ServerOptions,
) -> Exit {
    use lsp_types::notification::Notification as _;
    use lsp_types::request::Request as _;
    // Before `initialize`, requests are refused and notifications dropped (but `exit`).
    let init = loop {
        let Ok(msg) = input.recv() else { return Exit::InputClosed };
        match msg {
            Message::Request(req) if req.method == lsp_types::request::Initialize::METHOD => {
                match serde_json::from_value::<InitializeParams>(req.params) {
                    Ok(params) => {
                        let result = InitializeResult {
                            capabilities: capabilities(),
                            server_info: Some(ServerInfo {
                                name: "patchgen".into(),
                                version: Some(env!("CARGO_PKG_VERSION").into()),
                            }),
                        };
                        let _ = out.send(Response::new_ok(req.id, result).into());
                        break params;
                    }
                    Err(e) => {
                        let code = lsp_server::ErrorCode::InvalidParams as i32;
                        let _ = out.send(Response::new_err(req.id, code, format!("invalid params: {e}")).into());
                    }
                }
            }
            Message::Request(req) => {
                let code = lsp_server::ErrorCode::ServerNotInitialized as i32;
                let _ = out.send(Response::new_err(req.id, code, "the server is not initialized yet".into()).into());
            }
            Message::Notification(n) if n.method == lsp_types::notification::Exit::METHOD => {
                return Exit::WithoutShutdown;
            }
            Message::Notification(n) if n.method == transport::MALFORMED => {
                let parse_error = lsp_server::Notification::new(transport::PARSE_ERROR.to_string(), n.params);
                let _ = out.send(parse_error.into());
            }
            Message::Notification(_) | Message::Response(_) => {}
        }
    };
    let mut server = server::Server::new(out.clone(), options, &init);
    server.run(input)
}
