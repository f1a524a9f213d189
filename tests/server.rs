//! `patchgen server` end to end: the real binary over stdio, driven by an
//! LSP client (`lsp-server`'s message framing + `lsp-types`) on a
//! VeOmni-shaped Qwen3 config against the transformers 5.9.0 wheel (on
//! `PYTHONPATH`, no Python anywhere on `PATH`). Expected places come from
//! the wheel's text and the buffer's text, read here independently.

mod common;

use std::collections::VecDeque;
use std::io::{BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{TestEnv, copy_tree, read_upstream, wheel, write_files};
use lsp_server::{Message, Notification, Request, RequestId, Response};
use lsp_types::notification::Notification as _;
use lsp_types::request::Request as _;
use lsp_types::{
    CodeActionOrCommand, CompletionResponse, GotoDefinitionResponse, HoverContents, Position, PublishDiagnosticsParams,
    Range, TextEdit, Url,
};
use serde_json::{Value, json};

const PYPROJECT: &str = "[tool.patchgen]\nsearch_root = \"pkg\"\npackage_prefix = \"pkg\"\n\n[tool.ruff]\nline-length = 119\n\n[tool.ruff.lint]\nselect = [\"E\", \"F\", \"I\", \"W\"]\nignore = [\"E501\", \"F821\", \"E402\", \"F401\"]\n";

/// A VeOmni-shaped config: a fused-loss `Qwen3ForCausalLM.forward` that
/// feeds the loss before slicing with `logits_to_keep` (PG301), non-ASCII
/// text before the finding and before a target (UTF-16 columns).
const CONFIG: &str = r#""""Qwen3 GPU patches (VeOmni-shaped)."""

import torch

from patchgen import PatchConfig
from transformers.modeling_outputs import CausalLMOutputWithPast


config = PatchConfig(
    source_module="transformers.models.qwen3.modeling_qwen3",
    target_file="patched_modeling_qwen3_gpu.py",
    description="Qwen3 GPU patches",
)

config.add_post_import_block(
    """
    from veomni.ops.dispatch import OpSlot
    veomni_causal_lm_loss = OpSlot("cross_entropy_loss", "causal")
    """
)


# Patch: Qwen3ForCausalLM.forward — fused loss (données 𝔘)
@config.override_method(description="fused loss 𝔘", target_method="Qwen3ForCausalLM.forward")  # noqa: PG203
def qwen3_forward_patched(
    self,
    input_ids: torch.LongTensor | None = None,
    labels: torch.LongTensor | None = None,
    logits_to_keep: int | torch.Tensor = 0,
    **kwargs,
):
    out = self.model(input_ids=input_ids, **kwargs)
    h = out.last_hidden_state
    keep = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
    loss = None
    logits = None
    if labels is not None:
        loss, logits = veomni_causal_lm_loss(hidden_states=h, weights=self.lm_head.weight, labels=labels)  # é𝔘
    else:
        logits = self.lm_head(h[:, keep, :])
    return CausalLMOutputWithPast(
        loss=loss,
        logits=logits,
        past_key_values=out.past_key_values,
        hidden_states=out.hidden_states,
        attentions=out.attentions,
    )
"#;

/// A test on the diagnostics published for one document.
type Wanted = dyn Fn(&[lsp_types::Diagnostic]) -> bool;

/// An LSP client over the server's pipes.
struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: mpsc::Receiver<Message>,
    /// Notifications received while waiting for something else.
    queue: VecDeque<Notification>,
    next_id: i32,
}

impl Client {
    fn start(dir: &Path, pythonpath: &Path) -> Client {
        let env = TestEnv::get();
        let mut child = Command::new(&env.bin)
            .args(["server", "--debounce-ms", "20"])
            .current_dir(dir)
            .env_clear()
            .env("PATH", &env.ruff_dir)
            .env("PYTHONPATH", pythonpath)
            .env("HOME", dir)
            .env("TMPDIR", dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start patchgen server");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, incoming) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(body) = read_frame(&mut reader) {
                let msg = match serde_json::from_slice::<Message>(&body) {
                    Ok(msg) => msg,
                    // The answer to a skipped frame: a parse error with `id: null`
                    // (JSON-RPC's form, which `lsp_server::Message` cannot hold).
                    Err(_) => {
                        let v: Value = serde_json::from_slice(&body).expect("JSON from the server");
                        assert!(v["id"].is_null() && v["error"]["code"] == -32700, "unexpected message {v}");
                        continue;
                    }
                };
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        Client { child, stdin, incoming, queue: VecDeque::new(), next_id: 0 }
    }

    fn send(&mut self, msg: Message) {
        msg.write(&mut self.stdin).expect("write to the server");
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(Message::Notification(Notification::new(method.to_string(), params)));
    }

    fn request(&mut self, method: &str, params: Value) -> Response {
        self.next_id += 1;
        let id = RequestId::from(self.next_id);
        self.send(Message::Request(Request::new(id.clone(), method.to_string(), params)));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match self.next(deadline) {
                Message::Response(r) if r.id == id => return r,
                Message::Notification(n) => self.queue.push_back(n),
                _ => {}
            }
        }
    }

    fn result<T: serde::de::DeserializeOwned>(&mut self, method: &str, params: Value) -> T {
        let r = self.request(method, params);
        assert!(r.error.is_none(), "{method}: {:?}", r.error);
        serde_json::from_value(r.result.unwrap_or(Value::Null)).expect("a result of the method's type")
    }

    fn next(&mut self, deadline: Instant) -> Message {
        let left = deadline.saturating_duration_since(Instant::now());
        self.incoming.recv_timeout(left).expect("the server answers in time")
    }

    /// The next diagnostics published for `uri` that satisfy `wanted`.
    fn diagnostics(
        &mut self,
        uri: &Url,
        wanted: impl Fn(&[lsp_types::Diagnostic]) -> bool,
    ) -> Vec<lsp_types::Diagnostic> {
        let mut found = Vec::new();
        self.publications_until(|p| {
            let hit = &p.uri == uri && wanted(&p.diagnostics);
            if hit {
                found = p.diagnostics.clone();
            }
            hit
        });
        found
    }

    /// Diagnostics for several documents, in whatever order the server
    /// publishes them: waits until each `(uri, wanted)` has been satisfied.
    fn diagnostics_of_each(&mut self, wanted: &[(&Url, &Wanted)]) {
        let mut seen = vec![false; wanted.len()];
        self.publications_until(|p| {
            for (i, (uri, ok)) in wanted.iter().enumerate() {
                if &p.uri == *uri && ok(&p.diagnostics) {
                    seen[i] = true;
                }
            }
            seen.iter().all(|s| *s)
        });
    }

    /// Every diagnostics publication, in order, until `done` says so.
    fn publications_until(&mut self, mut done: impl FnMut(&PublishDiagnosticsParams) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let n = match self.queue.pop_front() {
                Some(n) => n,
                None => match self.next(deadline) {
                    Message::Notification(n) => n,
                    _ => continue,
                },
            };
            if n.method == lsp_types::notification::LogMessage::METHOD {
                eprintln!("server log: {}", n.params["message"].as_str().unwrap_or_default());
            }
            if n.method != lsp_types::notification::PublishDiagnostics::METHOD {
                continue;
            }
            let p: PublishDiagnosticsParams = serde_json::from_value(n.params).unwrap();
            if done(&p) {
                return;
            }
        }
    }

    /// `shutdown`, then `exit`.
    fn shutdown(&mut self) {
        let r = self.request(lsp_types::request::Shutdown::METHOD, Value::Null);
        assert!(r.error.is_none());
        self.notify(lsp_types::notification::Exit::METHOD, Value::Null);
    }

    fn change(&mut self, uri: &Url, version: i32, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
    }
}

/// The 0-based LSP position (UTF-16 columns) of byte `offset` in `text`.
fn pos(text: &str, offset: usize) -> Position {
    let before = &text[..offset];
    let line = before.matches('\n').count() as u32;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    Position::new(line, before[start..].encode_utf16().count() as u32)
}

/// The byte offset of an LSP position in `text`.
fn offset(text: &str, p: Position) -> usize {
    let start: usize = text.split_inclusive('\n').take(p.line as usize).map(str::len).sum();
    let line = text[start..].split('\n').next().unwrap();
    let mut units = 0;
    for (i, c) in line.char_indices() {
        if units == p.character as usize {
            return start + i;
        }
        units += c.len_utf16();
    }
    start + line.len()
}

/// `text` with non-overlapping LSP edits applied.
fn apply(text: &str, edits: &[TextEdit]) -> String {
    let mut spans: Vec<(usize, usize, &str)> =
        edits.iter().map(|e| (offset(text, e.range.start), offset(text, e.range.end), e.new_text.as_str())).collect();
    spans.sort();
    let mut out = String::new();
    let mut at = 0;
    for (s, e, t) in spans {
        out.push_str(&text[at..s]);
        out.push_str(t);
        at = e;
    }
    out.push_str(&text[at..]);
    out
}

fn pg301(ds: &[lsp_types::Diagnostic]) -> Option<&lsp_types::Diagnostic> {
    ds.iter().find(|d| d.code == Some(lsp_types::NumberOrString::String("PG301".into())))
}

#[test]
fn the_server_over_stdio() {
    let Some(wheel) = wheel("5.9.0") else { return };
    let upstream = read_upstream(&wheel, "transformers/models/qwen3/modeling_qwen3.py");
    let up_lines: Vec<&str> = upstream.lines().collect();
    let class_at = up_lines.iter().position(|l| l.starts_with("class Qwen3ForCausalLM(")).unwrap();
    let forward_def = class_at + up_lines[class_at..].iter().position(|l| l.starts_with("    def forward(")).unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let config_rel = "pkg/models/qwen3/qwen3_gpu_patch_gen_config.py";
    write_files(
        &dir,
        &[
            ("pyproject.toml", PYPROJECT),
            ("pkg/__init__.py", ""),
            ("pkg/models/__init__.py", ""),
            ("pkg/models/qwen3/__init__.py", ""),
            (config_rel, CONFIG),
        ],
    );
    let uri = Url::from_file_path(dir.join(config_rel)).unwrap();
    let mut client = Client::start(&dir, &wheel);

    // Requests before `initialize` are refused; garbage is skipped.
    let early = client.request("textDocument/hover", json!({}));
    assert_eq!(early.error.unwrap().code, lsp_server::ErrorCode::ServerNotInitialized as i32);
    let init: lsp_types::InitializeResult = client.result(
        "initialize",
        json!({"processId": null, "rootUri": Url::from_file_path(&dir).unwrap(), "capabilities": {}}),
    );
    assert!(init.capabilities.hover_provider.is_some() && init.capabilities.completion_provider.is_some());
    client.notify("initialized", json!({}));
    client.stdin.write_all(b"Content-Length: 9\r\n\r\n{garbage}").unwrap();

    // Open: PG301 at the line of the loss call, from its first character
    // to the line's end in UTF-16 units (`é𝔘` are 3 of them).
    let started = Instant::now();
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": CONFIG}}),
    );
    let ds = client.diagnostics(&uri, |ds| pg301(ds).is_some());
    eprintln!("latency: PG301 published {} ms after didOpen", started.elapsed().as_millis());
    let d = pg301(&ds).unwrap();
    let loss_line = CONFIG.lines().position(|l| l.contains("= veomni_causal_lm_loss(")).unwrap();
    let line_text = CONFIG.lines().nth(loss_line).unwrap();
    let indent = line_text.len() - line_text.trim_start().len();
    assert_eq!(
        d.range,
        Range::new(
            Position::new(loss_line as u32, indent as u32),
            Position::new(loss_line as u32, line_text.encode_utf16().count() as u32)
        )
    );
    assert_eq!(d.severity, Some(lsp_types::DiagnosticSeverity::ERROR));
    let href = d.code_description.as_ref().expect("a link to the rule's docs").href.clone();
    assert!(href.as_str().ends_with("/PG301.md"), "{href}");
    let doc = std::fs::read_to_string(href.to_file_path().unwrap()).unwrap();
    assert!(doc.starts_with("# PG301 logits-to-keep-order"), "{doc}");

    // Hover on the target (after non-ASCII on its line): the upstream signature and place.
    let target_at = CONFIG.find("Qwen3ForCausalLM.forward\")").unwrap() + 5;
    let hover: lsp_types::Hover =
        client.result("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": pos(CONFIG, target_at)}));
    let HoverContents::Markup(md) = hover.contents else { panic!("markdown hover") };
    assert!(md.value.contains("def forward(") && md.value.contains("logits_to_keep"), "{}", md.value);
    assert!(md.value.contains(&format!("modeling_qwen3.py:{}`", forward_def + 1)), "{}", md.value);

    // Definition: the upstream `def forward` line, in a file holding the wheel's text.
    let def: GotoDefinitionResponse = client
        .result("textDocument/definition", json!({"textDocument": {"uri": uri}, "position": pos(CONFIG, target_at)}));
    let GotoDefinitionResponse::Scalar(loc) = def else { panic!("one location") };
    assert_eq!(loc.range.start.line as usize, forward_def);
    assert_eq!(std::fs::read_to_string(loc.uri.to_file_path().unwrap()).unwrap(), upstream);

    // Hover on a code in `# noqa`.
    let noqa_at = CONFIG.find("PG203").unwrap() + 2;
    let hover: lsp_types::Hover =
        client.result("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": pos(CONFIG, noqa_at)}));
    let HoverContents::Markup(md) = hover.contents else { panic!("markdown hover") };
    assert!(md.value.starts_with("**PG203** `dropped-parameters`"), "{}", md.value);

    // A syntax error while typing a new target: located, and completion still works.
    let typing = format!("{CONFIG}\n\n@config.replace_class(\"Qwen3M");
    let changed = Instant::now();
    client.change(&uri, 2, &typing);
    let ds = client.diagnostics(&uri, |ds| ds.iter().any(|d| d.message.contains("syntax error")));
    eprintln!("latency: syntax error published {} ms after didChange", changed.elapsed().as_millis());
    let syntax = ds.iter().find(|d| d.message.contains("syntax error")).unwrap();
    assert_eq!(syntax.range.start.line as usize, typing.lines().count() - 1);
    let items: CompletionResponse = client.result(
        "textDocument/completion",
        json!({"textDocument": {"uri": uri}, "position": pos(&typing, typing.len())}),
    );
    let CompletionResponse::Array(items) = items else { panic!("a list") };
    let mlp = items.iter().find(|i| i.label == "Qwen3MLP").expect("Qwen3MLP offered");
    assert_eq!(mlp.detail.as_deref(), Some("class Qwen3MLP(nn.Module)"));
    // Back to the config: PG301 again; its code action fixes it.
    client.change(&uri, 3, CONFIG);
    let ds = client.diagnostics(&uri, |ds| pg301(ds).is_some());
    let d = pg301(&ds).unwrap().clone();
    let actions: Vec<CodeActionOrCommand> = client.result(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": d.range, "context": {"diagnostics": [d]}}),
    );
    let titles: Vec<String> = actions
        .iter()
        .map(|a| match a {
            CodeActionOrCommand::CodeAction(a) => a.title.clone(),
            CodeActionOrCommand::Command(c) => c.title.clone(),
        })
        .collect();
    assert!(titles.iter().any(|t| t.contains("# noqa: PG301")), "{titles:?}");
    let fix = actions
        .into_iter()
        .find_map(|a| match a {
            CodeActionOrCommand::CodeAction(a) if a.is_preferred == Some(true) => Some(a),
            _ => None,
        })
        .expect("PG301's fix");
    let edits = &fix.edit.unwrap().changes.unwrap()[&uri];
    let fixed = apply(CONFIG, edits);
    // The rule's documented fix: slice right after `keep = ...`, then use `h`.
    let keep_line = CONFIG.lines().find(|l| l.trim_start().starts_with("keep = ")).unwrap();
    assert!(fixed.contains(&format!("{keep_line}\n    h = h[:, keep, :]\n")), "{fixed}");
    assert!(fixed.contains("logits = self.lm_head(h)\n"), "{fixed}");
    let changed = Instant::now();
    client.change(&uri, 4, &fixed);
    let ds = client.diagnostics(&uri, |ds| pg301(ds).is_none());
    eprintln!("latency: fixed diagnostics published {} ms after didChange", changed.elapsed().as_millis());
    assert!(ds.iter().all(|d| d.severity != Some(lsp_types::DiagnosticSeverity::ERROR)), "{ds:?}");

    // Unknown methods and bad params are errors, not crashes.
    let r = client.request("patchgen/nothing", json!({}));
    assert_eq!(r.error.unwrap().code, lsp_server::ErrorCode::MethodNotFound as i32);
    let r = client.request("textDocument/hover", json!({"nonsense": true}));
    assert_eq!(r.error.unwrap().code, lsp_server::ErrorCode::InvalidParams as i32);
    // A file outside the project: nothing to say, no error.
    let outside = Url::from_file_path(dir.join("elsewhere.py")).unwrap();
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": outside, "languageId": "python", "version": 1, "text": "x = (\n"}}),
    );
    let hover = client.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": outside}, "position": {"line": 0, "character": 1}}),
    );
    assert!(hover.error.is_none() && hover.result.unwrap_or(Value::Null).is_null());

    // Shutdown, exit: code 0.
    client.shutdown();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = client.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the server exits after `exit`");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}

/// An NPU config that extends the demo's GPU config (cross-config import).
const NPU_CONFIG: &str = r#""""NPU patches: the GPU ones."""

from patchgen import PatchConfig
from demo.toy.toy_gpu_patch_gen_config import config as gpu_config


config = PatchConfig(
    source_module="toylib.modeling_toy",
    target_file="patched_modeling_toy_npu.py",
    description="Toy patches reused from the GPU config",
)

config.additional_imports.extend(gpu_config.additional_imports)
config.helpers.extend(gpu_config.helpers)
config.patches.extend(gpu_config.patches)
"#;

/// The demo project copied to a temporary directory with an NPU config
/// (`npu_text`) beside its GPU config, and a server started on it.
struct DemoPair {
    _tmp: tempfile::TempDir,
    dir: std::path::PathBuf,
    pythonpath: String,
    gpu_text: String,
    npu_text: String,
    gpu: Url,
    npu: Url,
}

impl DemoPair {
    fn new(wheel: &Path, npu_text: &str) -> DemoPair {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo"), &dir);
        let gpu_rel = "demo/toy/toy_gpu_patch_gen_config.py";
        let npu_rel = "demo/toy/toy_npu_patch_gen_config.py";
        write_files(&dir, &[(npu_rel, npu_text)]);
        // The demo's PYTHONPATH: the wheel (llama) and its own `upstream` (the toy).
        let pythonpath = format!("{}:{}", wheel.display(), dir.join("upstream").display());
        let gpu_text = std::fs::read_to_string(dir.join(gpu_rel)).unwrap();
        let (gpu, npu) =
            (Url::from_file_path(dir.join(gpu_rel)).unwrap(), Url::from_file_path(dir.join(npu_rel)).unwrap());
        DemoPair { _tmp: tmp, dir, pythonpath, gpu_text, npu_text: npu_text.to_string(), gpu, npu }
    }

    /// A server on the project, initialized, with both configs open.
    fn serve(&self) -> Client {
        let mut client = Client::start(&self.dir, Path::new(&self.pythonpath));
        let _: lsp_types::InitializeResult = client.result(
            "initialize",
            json!({"processId": null, "rootUri": Url::from_file_path(&self.dir).unwrap(), "capabilities": {}}),
        );
        client.notify("initialized", json!({}));
        for (uri, text) in [(&self.gpu, &self.gpu_text), (&self.npu, &self.npu_text)] {
            client.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
            );
        }
        client
    }
}

/// On the demo project with its generated files checked in: go to
/// definition from a patch function lands on the line of the generated
/// file it became (found here in the generated text), and an unsaved edit
/// to a config re-checks the open config that imports it.
#[test]
fn definition_into_the_generated_file_and_importers_rechecked() {
    let Some(wheel) = wheel("5.9.0") else { return };
    let env = TestEnv::get();
    let pair = DemoPair::new(&wheel, NPU_CONFIG);
    let (dir, gpu, npu, gpu_text) = (&pair.dir, &pair.gpu, &pair.npu, &pair.gpu_text);
    let out = env.patchgen(dir, &pair.pythonpath, &["--all", "--diff"]);
    assert_eq!(out.code, 0, "generate: {} {}", out.stdout, out.stderr);
    let generated = dir.join("demo/toy/generated/patched_modeling_toy.py");
    let gen_text = std::fs::read_to_string(&generated).unwrap();
    // The override of ToyRMSNorm.forward, as it reads in the generated file.
    let body_line =
        gen_text.lines().position(|l| l.contains("return rms_norm_fp32(hidden_states, self.weight")).unwrap();
    let def_line = (0..body_line)
        .rev()
        .find(|&i| gen_text.lines().nth(i).unwrap().trim_start().starts_with("def forward("))
        .unwrap();

    let mut client = pair.serve();
    let mentions = |ds: &[lsp_types::Diagnostic], what: &str| ds.iter().any(|d| d.message.contains(what));
    let clean = move |ds: &[lsp_types::Diagnostic]| !mentions(ds, "forwrad");
    let flagged = move |ds: &[lsp_types::Diagnostic]| mentions(ds, "forwrad");
    client.diagnostics_of_each(&[(gpu, &clean), (npu, &clean)]);

    // Definition from the patch function's name.
    let at = gpu_text.find("def toy_rms_norm_forward(").unwrap() + "def ".len() + 2;
    let def: GotoDefinitionResponse =
        client.result("textDocument/definition", json!({"textDocument": {"uri": gpu}, "position": pos(gpu_text, at)}));
    let GotoDefinitionResponse::Scalar(loc) = def else { panic!("one location: {def:?}") };
    assert_eq!(loc.uri.to_file_path().unwrap().canonicalize().unwrap(), generated.canonicalize().unwrap());
    assert_eq!(
        loc.range.start.line as usize,
        def_line,
        "{}",
        gen_text.lines().nth(loc.range.start.line as usize).unwrap_or("")
    );

    // An unsaved edit to the GPU config: the NPU config, which imports it, is checked again on the buffer.
    let edited = gpu_text.replace("\"ToyRMSNorm.forward\"", "\"ToyRMSNorm.forwrad\"");
    assert_ne!(&edited, gpu_text);
    client.change(gpu, 2, &edited);
    client.diagnostics_of_each(&[(gpu, &flagged), (npu, &flagged)]);
    // And back.
    client.change(gpu, 3, gpu_text);
    client.diagnostics_of_each(&[(gpu, &clean), (npu, &clean)]);

    client.shutdown();
}

/// An NPU sibling of the demo's GPU config with its own RMSNorm override
/// (same parameters as the GPU one to start with).
const NPU_SIBLING: &str = r#""""NPU patches for the toy model."""

from patchgen import PatchConfig


config = PatchConfig(
    source_module="toylib.modeling_toy",
    target_file="patched_modeling_toy_npu.py",
    description="Toy model, NPU",
)


@config.override_method("ToyRMSNorm.forward", description="NPU RMSNorm")
def toy_rms_norm_forward_npu(self, hidden_states):
    return hidden_states * self.weight
"#;

/// Project-level rules run on buffers: PG202 compares a config with its
/// sibling, so an unsaved edit that adds a parameter to the GPU override
/// makes the open NPU config's override drift (reported there, at its
/// replacement, not in the GPU buffer), and undoing it clears the finding.
#[test]
fn sibling_rules_on_unsaved_buffers() {
    let Some(wheel) = wheel("5.9.0") else { return };
    let pair = DemoPair::new(&wheel, NPU_SIBLING);
    let (gpu, npu, gpu_text) = (&pair.gpu, &pair.npu, &pair.gpu_text);
    let mut client = pair.serve();
    let code = |ds: &[lsp_types::Diagnostic], c: &str| {
        ds.iter().filter(|d| d.code == Some(lsp_types::NumberOrString::String(c.into()))).cloned().collect::<Vec<_>>()
    };
    let no_pg202 = move |ds: &[lsp_types::Diagnostic]| code(ds, "PG202").is_empty();
    let pg202 = move |ds: &[lsp_types::Diagnostic]| !code(ds, "PG202").is_empty();
    client.diagnostics_of_each(&[(gpu, &no_pg202), (npu, &no_pg202)]);

    let edited = gpu_text.replace(
        "def toy_rms_norm_forward(self, hidden_states):",
        "def toy_rms_norm_forward(self, hidden_states, residual=None):",
    );
    assert_ne!(&edited, gpu_text);
    client.change(gpu, 2, &edited);
    // Both: the NPU buffer flagged, and the GPU buffer's check of version 2
    // (which does not carry its sibling's finding).
    let (mut npu_flagged, mut gpu_v2) = (None, None);
    client.publications_until(|p| {
        if p.uri == *npu && pg202(&p.diagnostics) {
            npu_flagged = Some(p.diagnostics.clone());
        }
        if p.uri == *gpu && p.version == Some(2) {
            gpu_v2 = Some(p.diagnostics.clone());
        }
        npu_flagged.is_some() && gpu_v2.is_some()
    });
    let ds = npu_flagged.unwrap();
    let d = &code(&ds, "PG202")[0];
    // At the NPU replacement's `def` line (or its decorator), naming the missing parameter.
    let def_line = NPU_SIBLING.lines().position(|l| l.starts_with("def toy_rms_norm_forward_npu(")).unwrap() as u32;
    assert!(d.range.start.line == def_line || d.range.start.line + 1 == def_line, "{d:?}");
    assert!(d.message.contains("residual"), "{}", d.message);
    assert!(no_pg202(&gpu_v2.unwrap()));

    client.change(gpu, 3, gpu_text);
    client.diagnostics_of_each(&[(npu, &no_pg202)]);

    client.shutdown();
}

/// The next message the server sends that `pick` accepts (notifications
/// passed over are queued for later waits).
fn next_matching<T>(client: &mut Client, mut pick: impl FnMut(&Message) -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let msg = client.next(deadline);
        if let Some(t) = pick(&msg) {
            return t;
        }
        if let Message::Notification(n) = msg {
            client.queue.push_back(n);
        }
    }
}

/// Issue 37: a generated file in the editor — the "generated by" note,
/// hover and definition agreeing with `patchgen explain FILE:LINE` (the
/// command line, run here separately), a hand edit flagged at its line and
/// regenerated byte-identically; in the config, code lenses counting the
/// hunks `patchgen explain --format json` attributes to each patch, and
/// the patches as document symbols; `.diff` hover naming the hunk.
#[test]
fn provenance_of_generated_files() {
    let Some(wheel) = wheel("5.9.0") else { return };
    let env = TestEnv::get();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let config_rel = "pkg/models/qwen3/qwen3_gpu_patch_gen_config.py";
    write_files(
        &dir,
        &[
            ("pyproject.toml", PYPROJECT),
            ("pkg/__init__.py", ""),
            ("pkg/models/__init__.py", ""),
            ("pkg/models/qwen3/__init__.py", ""),
            (config_rel, CONFIG),
        ],
    );
    let pythonpath = wheel.display().to_string();
    let generated = env.patchgen(&dir, &pythonpath, &["generate", "--all", "--diff"]);
    assert_eq!(generated.code, 0, "{}{}", generated.stdout, generated.stderr);
    let py_rel = "pkg/models/qwen3/generated/patched_modeling_qwen3_gpu.py";
    let diff_rel = "pkg/models/qwen3/generated/patched_modeling_qwen3_gpu.diff";
    let original = std::fs::read_to_string(dir.join(py_rel)).unwrap();
    let py_uri = Url::from_file_path(dir.join(py_rel)).unwrap();
    let config_uri = Url::from_file_path(dir.join(config_rel)).unwrap();

    let mut client = Client::start(&dir, &wheel);
    let init: lsp_types::InitializeResult = client.result(
        "initialize",
        json!({"processId": null, "rootUri": Url::from_file_path(&dir).unwrap(), "capabilities": {}}),
    );
    assert!(init.capabilities.code_lens_provider.is_some() && init.capabilities.document_symbol_provider.is_some());
    client.notify("initialized", json!({}));
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": py_uri, "languageId": "python", "version": 1, "text": original}}),
    );
    let module = "pkg.models.qwen3.qwen3_gpu_patch_gen_config";
    let ds = client.diagnostics(&py_uri, |ds| !ds.is_empty());
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0].severity, Some(lsp_types::DiagnosticSeverity::INFORMATION));
    assert_eq!((ds[0].range.start.line, ds[0].message.starts_with(&format!("generated by {module}"))), (0, true));

    // Hover and definition on every 17th line agree with `explain FILE:LINE`.
    let total = original.lines().count();
    let mut compared = 0;
    for line in (1..=total).step_by(17) {
        let out = env.patchgen(&dir, &pythonpath, &["explain", &format!("{py_rel}:{line}"), "--format", "json"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let doc: Value = serde_json::from_str(&out.stdout).unwrap();
        let origin = &doc["origin"];
        let at = json!({"textDocument": {"uri": py_uri}, "position": {"line": line - 1, "character": 0}});
        let hover: Option<lsp_types::Hover> = client.result("textDocument/hover", at.clone());
        let definition: Option<GotoDefinitionResponse> = client.result("textDocument/definition", at);
        match (origin["path"].as_str(), origin["line"].as_u64()) {
            (Some(path), Some(n)) => {
                let name = Path::new(path).file_name().unwrap().to_string_lossy().into_owned();
                let HoverContents::Markup(m) = hover.expect("a hover").contents else { panic!("markup") };
                assert!(m.value.contains(&format!("[{name}:{n}]")), "line {line}: {origin} vs {}", m.value);
                let Some(GotoDefinitionResponse::Scalar(loc)) = definition else { panic!("line {line}: a location") };
                let opened = loc.uri.to_file_path().unwrap();
                assert!(opened.is_file(), "line {line}: {opened:?} is a file to open");
                match dir.join(path).canonicalize() {
                    Ok(real) => assert_eq!(opened, real, "line {line}"),
                    // Inside the wheel: its read-only copy, the same member.
                    Err(_) => {
                        assert!(opened.ends_with(path.rsplit('!').next().unwrap()), "line {line}: {opened:?} vs {path}")
                    }
                }
                assert_eq!(loc.range.start.line as u64, n - 1, "line {line}");
            }
            _ => assert!(definition.is_none(), "line {line}: no place in {origin}, yet a definition"),
        }
        compared += 1;
    }
    assert!(compared >= 10, "{compared} lines compared");

    // A hand edit, saved: a warning at its line naming the config; "Regenerate" restores the file.
    let edited_line = original.lines().position(|l| l.contains("veomni_causal_lm_loss(")).expect("the patched line");
    let edited: String = original
        .lines()
        .enumerate()
        .map(|(i, l)| if i == edited_line { format!("{l}  # hand edit\n") } else { format!("{l}\n") })
        .collect();
    std::fs::write(dir.join(py_rel), &edited).unwrap();
    client.change(&py_uri, 2, &edited);
    let ds =
        client.diagnostics(&py_uri, |ds| ds.iter().any(|d| d.severity == Some(lsp_types::DiagnosticSeverity::WARNING)));
    let warning = ds.iter().find(|d| d.severity == Some(lsp_types::DiagnosticSeverity::WARNING)).unwrap();
    assert_eq!(warning.range.start.line as usize, edited_line, "{warning:?}");
    assert!(warning.message.contains(module) && warning.message.contains("hand edit"), "{}", warning.message);
    let from = warning.related_information.as_ref().expect("the responsible place");
    assert!(from[0].location.uri.path().ends_with(config_rel), "{from:?}");
    let actions: Vec<CodeActionOrCommand> = client.result(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": py_uri}, "range": warning.range, "context": {"diagnostics": []}}),
    );
    let CodeActionOrCommand::CodeAction(regenerate) = &actions[0] else { panic!("{actions:?}") };
    let command = regenerate.command.clone().expect("a command");
    client.next_id += 1;
    let id = RequestId::from(client.next_id);
    let params = json!({"command": command.command, "arguments": command.arguments.unwrap_or_default()});
    client.send(Message::Request(Request::new(id.clone(), "workspace/executeCommand".into(), params)));
    let (mut answered, mut applied) = (false, None);
    while !answered || applied.is_none() {
        next_matching(&mut client, |m| match m {
            Message::Response(r) if r.id == id => {
                assert!(r.error.is_none(), "{:?}", r.error);
                answered = true;
                Some(())
            }
            Message::Request(req) if req.method == "workspace/applyEdit" => {
                applied = Some(req.params.clone());
                Some(())
            }
            _ => None,
        });
    }
    assert_eq!(std::fs::read_to_string(dir.join(py_rel)).unwrap(), original, "regenerated byte-identically");
    let applied = applied.unwrap();
    let edits: Vec<TextEdit> = serde_json::from_value(applied["edit"]["changes"][py_uri.as_str()].clone()).unwrap();
    assert_eq!(apply(&edited, &edits), original);

    // The `.diff`: hover on a hunk line names the hunk.
    let diff_text = std::fs::read_to_string(dir.join(diff_rel)).unwrap();
    let diff_uri = Url::from_file_path(dir.join(diff_rel)).unwrap();
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": diff_uri, "languageId": "diff", "version": 1, "text": diff_text}}),
    );
    client.diagnostics(&diff_uri, |ds| !ds.is_empty());
    let hunk_line = diff_text.lines().position(|l| l.starts_with("@@ ")).unwrap();
    let hover: Option<lsp_types::Hover> = client.result(
        "textDocument/hover",
        json!({"textDocument": {"uri": diff_uri}, "position": {"line": hunk_line + 1, "character": 0}}),
    );
    let HoverContents::Markup(m) = hover.expect("a hover on the hunk").contents else { panic!("markup") };
    assert!(m.value.contains(diff_text.lines().nth(hunk_line).unwrap()), "{}", m.value);

    // The config: lenses count what `explain --format json` attributes to each patch.
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": config_uri, "languageId": "python", "version": 1, "text": CONFIG}}),
    );
    next_matching(&mut client, |m| match m {
        Message::Request(req) if req.method == "workspace/codeLens/refresh" => Some(()),
        _ => None,
    });
    let () = ();
    let lenses: Vec<lsp_types::CodeLens> =
        client.result("textDocument/codeLens", json!({"textDocument": {"uri": config_uri}}));
    let out = env.patchgen(&dir, &pythonpath, &["explain", module, "--format", "json"]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let hunks = doc["files"][0]["hunks"].as_array().unwrap();
    let by_patch = hunks
        .iter()
        .filter(|h| {
            h["causes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["kind"] == "patch" && c["target"] == "Qwen3ForCausalLM.forward")
        })
        .count();
    assert!(by_patch > 0);
    assert_eq!(lenses.len(), 1, "{lenses:?}");
    let title = lenses[0].command.as_ref().unwrap().title.clone();
    assert_eq!(
        title,
        format!("{by_patch} hunk{} in patched_modeling_qwen3_gpu.diff", if by_patch == 1 { "" } else { "s" })
    );
    let registration = CONFIG.lines().position(|l| l.starts_with("@config.override_method(")).unwrap();
    assert_eq!(lenses[0].range.start.line as usize, registration);
    // "Go to generated" from a line of the patch's code: every region it made.
    let inside = registration + 3;
    let generated: Option<GotoDefinitionResponse> = client.result(
        "textDocument/implementation",
        json!({"textDocument": {"uri": config_uri}, "position": {"line": inside, "character": 4}}),
    );
    let Some(GotoDefinitionResponse::Array(regions)) = generated else { panic!("go to generated: {generated:?}") };
    assert_eq!(regions.len(), by_patch);
    assert!(regions.iter().all(|l| l.uri == py_uri), "{regions:?}");
    let lens_target = lenses[0].command.as_ref().unwrap().arguments.as_ref().unwrap()[1].as_u64().unwrap();
    assert_eq!(u64::from(regions[0].range.start.line), lens_target);
    let symbols: lsp_types::DocumentSymbolResponse =
        client.result("textDocument/documentSymbol", json!({"textDocument": {"uri": config_uri}}));
    let lsp_types::DocumentSymbolResponse::Nested(symbols) = symbols else { panic!("nested symbols") };
    assert_eq!(symbols.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["Qwen3ForCausalLM.forward"]);
    client.shutdown();
    let _ = client.child.wait();
}

/// Hover, definition and completion on a top-level name that ends the
/// buffer (`class Foo`, nothing after it) answer `null`, not an internal
/// error: the name was once sliced past the line's end, a panic the
/// server caught and reported (issue #33). Needs no wheel: the site is
/// decided before any upstream module is read.
#[test]
fn requests_at_a_name_that_ends_the_buffer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let config_rel = "pkg/models/foo/foo_gpu_patch_gen_config.py";
    write_files(&dir, &[("pyproject.toml", PYPROJECT), ("pkg/__init__.py", ""), (config_rel, "")]);
    let uri = Url::from_file_path(dir.join(config_rel)).unwrap();
    let mut client = Client::start(&dir, &dir);
    let _: lsp_types::InitializeResult = client.result(
        "initialize",
        json!({"processId": null, "rootUri": Url::from_file_path(&dir).unwrap(), "capabilities": {}}),
    );
    client.notify("initialized", json!({}));
    for (version, text) in [(1, "import os\n\nclass Foo"), (2, "import os\n\nasync def foo")] {
        if version == 1 {
            client.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
            );
        } else {
            client.change(&uri, version, text);
        }
        let last = text.lines().last().unwrap();
        for character in [last.len() - 1, last.len()] {
            let at = json!({"textDocument": {"uri": uri}, "position": {"line": 2, "character": character}});
            for method in ["textDocument/hover", "textDocument/definition", "textDocument/completion"] {
                let r = client.request(method, at.clone());
                assert!(r.error.is_none(), "{method} at {character} of {last:?}: {:?}", r.error);
                assert_eq!(r.result.unwrap_or(Value::Null), Value::Null, "{method} at {character} of {last:?}");
            }
        }
    }
    client.shutdown();
}

/// One `Content-Length` framed body from the server, `None` at the end.
fn read_frame(reader: &mut impl std::io::BufRead) -> Option<Vec<u8>> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            length = n.parse::<usize>().ok();
        }
    }
    let mut body = vec![0u8; length?];
    std::io::Read::read_exact(reader, &mut body).ok()?;
    Some(body)
}

/// A target registered twice: the generated code is the second
/// registration's, so its lens counts the hunk and the first one's says
/// "no effect" (the lens once matched hunks by target alone and gave both
/// the count).
#[test]
fn a_target_registered_twice_credits_the_registration_that_wins() {
    let Some(wheel) = wheel("5.9.0") else { return };
    let env = TestEnv::get();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let config_rel = "pkg/models/qwen3/qwen3_gpu_patch_gen_config.py";
    let config = r#"from patchgen import PatchConfig

config = PatchConfig(
    source_module="transformers.models.qwen3.modeling_qwen3",
    target_file="patched_modeling_qwen3_gpu.py",
)


@config.override_method("Qwen3MLP.forward")
def mlp_first(self, x):
    return self.down_proj(x)


@config.override_method("Qwen3MLP.forward")
def mlp_second(self, x):
    return self.down_proj(self.up_proj(x) * 2)
"#;
    write_files(
        &dir,
        &[
            ("pyproject.toml", PYPROJECT),
            ("pkg/__init__.py", ""),
            ("pkg/models/__init__.py", ""),
            ("pkg/models/qwen3/__init__.py", ""),
            (config_rel, config),
        ],
    );
    let pythonpath = wheel.display().to_string();
    let generated = env.patchgen(&dir, &pythonpath, &["generate", "--all", "--diff"]);
    assert_eq!(generated.code, 0, "{}{}", generated.stdout, generated.stderr);
    let config_uri = Url::from_file_path(dir.join(config_rel)).unwrap();
    let mut client = Client::start(&dir, &wheel);
    let _: lsp_types::InitializeResult = client.result(
        "initialize",
        json!({"processId": null, "rootUri": Url::from_file_path(&dir).unwrap(), "capabilities": {}}),
    );
    client.notify("initialized", json!({}));
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": config_uri, "languageId": "python", "version": 1, "text": config}}),
    );
    next_matching(&mut client, |m| match m {
        Message::Request(req) if req.method == "workspace/codeLens/refresh" => Some(()),
        _ => None,
    });
    let lenses: Vec<lsp_types::CodeLens> =
        client.result("textDocument/codeLens", json!({"textDocument": {"uri": config_uri}}));
    let titles: Vec<(u32, String)> =
        lenses.iter().map(|l| (l.range.start.line, l.command.as_ref().unwrap().title.clone())).collect();
    let at = |needle: &str| config.lines().position(|l| l.starts_with(needle)).unwrap() as u32;
    let second = config.lines().enumerate().filter(|(_, l)| l.starts_with("@config.")).nth(1).unwrap().0 as u32;
    // What `explain` attributes to the target: every hunk, from the second registration's lines.
    let module = "pkg.models.qwen3.qwen3_gpu_patch_gen_config";
    let out = env.patchgen(&dir, &pythonpath, &["explain", module, "--format", "json"]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let causes: Vec<&Value> = doc["files"][0]["hunks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["causes"].as_array().unwrap().iter().find(|c| c["target"] == "Qwen3MLP.forward"))
        .collect();
    assert!(!causes.is_empty() && causes.iter().all(|c| c["line"].as_u64().unwrap() > u64::from(second)));
    let n = causes.len();
    assert_eq!(
        titles,
        [
            (at("@config.override_method"), "no effect".to_string()),
            (second, format!("{n} hunk{} in patched_modeling_qwen3_gpu.diff", if n == 1 { "" } else { "s" }))
        ]
    );
    client.shutdown();
    let _ = client.child.wait();
}
