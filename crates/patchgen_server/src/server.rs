//! The main loop: one thread owns the open buffers and answers every
//! request from them; checks run on worker threads. A change to a buffer
//! with no check running or pending is checked at once (an edit's
//! diagnostics cost only the check); while one is running or pending, the
//! change schedules its check after the debounce delay, so a burst of
//! keystrokes costs one check in flight and one at the end. The open
//! configs whose last result read the changed file are scheduled the same
//! way. A buffer whose check is still running is checked again when it
//! ends and the stale result is dropped (latest wins), so a slow config
//! never holds up another.
//! Requests never wait for a check: hover, definition and completion read
//! the buffer and the upstream module; definition into the generated file
//! and code actions use the last published result.

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, select};
use lsp_server::{ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::Notification as _;
use lsp_types::{
    CodeActionOrCommand, CodeActionParams, CompletionItem, CompletionItemKind, CompletionParams, CompletionResponse,
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams, DidSaveTextDocumentParams,
    GotoDefinitionParams, GotoDefinitionResponse, Hover, HoverContents, HoverParams, InitializeParams, Location,
    LogMessageParams, MarkupContent, MarkupKind, MessageType, Position, PublishDiagnosticsParams, Range, TextEdit, Url,
};
use patchgen_config::Overlay;
use patchgen_core::project::{Project, resolve};
use patchgen_core::upstream::SearchPath;

use crate::actions;
use crate::check::{self, Checked};
use crate::docs::{self, DocLinks};
use crate::generated::{self, GenMap};
use crate::site::{Site, site_at};
use crate::text::{apply_change, offset_of, position_of};
use crate::transport::MALFORMED;
use crate::upstream::{Upstreams, source_module_of};
use crate::{COMMAND_OPEN_GENERATED, COMMAND_REGENERATE, Exit, ServerOptions};

/// An open buffer.
struct Doc {
    text: String,
    version: i32,
    path: Option<PathBuf>,
}

/// What a worker sends back.
enum Event {
    Checked {
        uri: Url,
        version: i32,
        result: Option<Checked>,
    },
    /// A config or generated file mapped to its origins (`None`: it cannot be).
    Mapped {
        uri: Url,
        map: Option<Arc<GenMap>>,
    },
}

/// The last result published for a buffer.
struct Published {
    checked: Checked,
}

pub struct Server {
    out: Sender<Message>,
    options: ServerOptions,
    docs: HashMap<Url, Doc>,
    published: HashMap<Url, Published>,
    /// Checks due, by buffer.
    due: HashMap<Url, Instant>,
    running: HashSet<Url>,
    /// Buffers changed while their check ran: checked again when it ends.
    rerun: HashSet<Url>,
    /// When the first change since the last publication arrived (the latency log).
    changed_at: HashMap<Url, Instant>,
    events: (Sender<Event>, Receiver<Event>),
    upstreams: HashMap<PathBuf, Arc<Upstreams>>,
    links: Arc<DocLinks>,
    /// Configs and generated files mapped to their origins (from the saved files).
    maps: HashMap<Url, Arc<GenMap>>,
    /// Requests this server sent (their ids).
    next_request: i32,
    shutdown: bool,
}

impl Server {
    pub fn new(out: Sender<Message>, options: ServerOptions, init: &InitializeParams) -> Server {
        let docs_url = init
            .initialization_options
            .as_ref()
            .and_then(|o| o.get("docsUrl"))
            .and_then(|u| u.as_str())
            .and_then(|u| Url::parse(u).ok());
        let links = Arc::new(DocLinks::new(docs_url, options.scratch.join("docs")));
        Server {
            out,
            options,
            docs: HashMap::new(),
            published: HashMap::new(),
            due: HashMap::new(),
            running: HashSet::new(),
            rerun: HashSet::new(),
            changed_at: HashMap::new(),
            events: crossbeam_channel::unbounded(),
            upstreams: HashMap::new(),
            links,
            maps: HashMap::new(),
            next_request: 0,
            shutdown: false,
        }
    }

    /// Serve until `exit` (or the end of the input).
    pub fn run(&mut self, input: &Receiver<Message>) -> Exit {
        let events = self.events.1.clone();
        loop {
            let now = Instant::now();
            let wait =
                self.due.values().min().map(|d| d.saturating_duration_since(now)).unwrap_or(Duration::from_secs(3600));
            select! {
                recv(input) -> msg => match msg {
                    Ok(msg) => {
                        if let Some(exit) = self.message(msg) {
                            return exit;
                        }
                    }
                    Err(_) => return Exit::InputClosed,
                },
                recv(events) -> ev => {
                    if let Ok(ev) = ev {
                        self.event(ev);
                    }
                }
                default(wait) => {}
            }
            self.start_due();
        }
    }

    fn send(&self, msg: impl Into<Message>) {
        let _ = self.out.send(msg.into());
    }

    fn log(&self, typ: MessageType, message: String) {
        let params = LogMessageParams { typ, message };
        self.send(Notification::new(lsp_types::notification::LogMessage::METHOD.to_string(), params));
    }

    fn message(&mut self, msg: Message) -> Option<Exit> {
        match msg {
            Message::Request(req) => {
                let id = req.id.clone();
                let method = req.method.clone();
                let response = std::panic::catch_unwind(AssertUnwindSafe(|| self.request(req))).unwrap_or_else(|_| {
                    Response::new_err(
                        id,
                        ErrorCode::InternalError as i32,
                        format!("patchgen server: internal error in {method}"),
                    )
                });
                self.send(response);
                None
            }
            Message::Notification(n) => {
                if n.method == lsp_types::notification::Exit::METHOD {
                    return Some(if self.shutdown { Exit::Clean } else { Exit::WithoutShutdown });
                }
                let method = n.method.clone();
                if std::panic::catch_unwind(AssertUnwindSafe(|| self.notification(n))).is_err() {
                    self.log(MessageType::ERROR, format!("patchgen server: internal error handling {method}"));
                }
                None
            }
            Message::Response(_) => None,
        }
    }

    fn request(&mut self, req: Request) -> Response {
        use lsp_types::request::*;
        let id = req.id.clone();
        if self.shutdown {
            return Response::new_err(id, ErrorCode::InvalidRequest as i32, "the server is shutting down".into());
        }
        match req.method.as_str() {
            Shutdown::METHOD => {
                self.shutdown = true;
                Response::new_ok(id, ())
            }
            HoverRequest::METHOD => respond(id, req.params, |p: HoverParams| self.hover(p)),
            GotoDefinition::METHOD => respond(id, req.params, |p: GotoDefinitionParams| self.definition(p)),
            Completion::METHOD => respond(id, req.params, |p: CompletionParams| self.completion(p)),
            CodeActionRequest::METHOD => respond(id, req.params, |p: CodeActionParams| self.code_actions(p)),
            CodeLensRequest::METHOD => respond(id, req.params, |p: lsp_types::CodeLensParams| self.code_lenses(p)),
            GotoImplementation::METHOD => respond(id, req.params, |p: GotoDefinitionParams| self.go_to_generated(p)),
            DocumentSymbolRequest::METHOD => {
                respond(id, req.params, |p: lsp_types::DocumentSymbolParams| self.document_symbols(p))
            }
            ExecuteCommand::METHOD => {
                respond(id, req.params, |p: lsp_types::ExecuteCommandParams| self.execute_command(p))
            }
            Initialize::METHOD => {
                Response::new_err(id, ErrorCode::InvalidRequest as i32, "the server is already initialized".into())
            }
            other => Response::new_err(id, ErrorCode::MethodNotFound as i32, format!("unknown method `{other}`")),
        }
    }

    fn notification(&mut self, n: Notification) {
        use lsp_types::notification::*;
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                if let Ok(p) = serde_json::from_value::<DidOpenTextDocumentParams>(n.params) {
                    let uri = p.text_document.uri;
                    let path = uri.to_file_path().ok();
                    self.docs.insert(
                        uri.clone(),
                        Doc { text: p.text_document.text, version: p.text_document.version, path },
                    );
                    self.changed(&uri, Duration::ZERO);
                    self.spawn_map(uri);
                }
            }
            DidChangeTextDocument::METHOD => {
                if let Ok(p) = serde_json::from_value::<DidChangeTextDocumentParams>(n.params) {
                    let uri = p.text_document.uri;
                    let Some(doc) = self.docs.get_mut(&uri) else { return };
                    for change in p.content_changes {
                        apply_change(&mut doc.text, change.range, &change.text);
                    }
                    doc.version = p.text_document.version;
                    self.changed_at.entry(uri.clone()).or_insert_with(Instant::now);
                    self.changed(&uri, self.options.debounce);
                    self.publish_generated(&uri);
                }
            }
            DidSaveTextDocument::METHOD => {
                if let Ok(p) = serde_json::from_value::<DidSaveTextDocumentParams>(n.params) {
                    self.changed(&p.text_document.uri, Duration::ZERO);
                    self.saved(&p.text_document.uri);
                }
            }
            DidCloseTextDocument::METHOD => {
                if let Ok(p) = serde_json::from_value::<DidCloseTextDocumentParams>(n.params) {
                    let uri = p.text_document.uri;
                    self.docs.remove(&uri);
                    self.maps.remove(&uri);
                    self.due.remove(&uri);
                    self.published.remove(&uri);
                    self.publish(uri.clone(), Vec::new(), None);
                    // What imported it reads the file on disk again.
                    self.dependents_changed(&uri, Duration::ZERO);
                }
            }
            MALFORMED => {
                let reason = n.params.get("reason").and_then(|r| r.as_str()).unwrap_or("malformed").to_string();
                self.log(MessageType::WARNING, format!("patchgen server: skipped a message: {reason}"));
                // The client hears of it as JSON-RPC says: a parse error, `id: null`.
                self.send(lsp_server::Notification::new(crate::transport::PARSE_ERROR.to_string(), n.params));
            }
            _ => {}
        }
    }

    /// `uri` changed: check it, and the configs that read it, at once when
    /// idle, else after `delay` ([`Server::schedule`]).
    fn changed(&mut self, uri: &Url, delay: Duration) {
        if self.docs.get(uri).and_then(|d| d.path.as_deref()).is_some_and(check::is_config) {
            self.schedule(uri.clone(), delay);
        }
        self.dependents_changed(uri, delay);
    }

    /// Schedule a check of `uri`: now when none is running or pending for
    /// it, else `delay` from now (a burst of changes coalesces into the
    /// check that runs after it).
    fn schedule(&mut self, uri: Url, delay: Duration) {
        let busy = self.running.contains(&uri) || self.due.contains_key(&uri);
        let at = if busy { Instant::now() + delay } else { Instant::now() };
        self.due.insert(uri, at);
    }

    fn dependents_changed(&mut self, uri: &Url, delay: Duration) {
        let Ok(path) = uri.to_file_path() else { return };
        let path = resolve(&path);
        let dependents: Vec<Url> = self
            .published
            .iter()
            .filter(|(u, p)| *u != uri && self.docs.contains_key(u) && p.checked.files.contains(&path))
            .map(|(u, _)| u.clone())
            .collect();
        for u in dependents {
            self.schedule(u, delay);
        }
    }

    /// Start the checks that are due (one at a time per buffer).
    fn start_due(&mut self) {
        let now = Instant::now();
        let ready: Vec<Url> = self.due.iter().filter(|(_, t)| **t <= now).map(|(u, _)| u.clone()).collect();
        for uri in ready {
            self.due.remove(&uri);
            if self.running.contains(&uri) {
                self.rerun.insert(uri);
                continue;
            }
            self.spawn_check(uri);
        }
    }

    fn spawn_check(&mut self, uri: Url) {
        let Some(doc) = self.docs.get(&uri) else { return };
        let Some(path) = doc.path.clone() else { return };
        let version = doc.version;
        let mut overlay = Overlay::default();
        for d in self.docs.values() {
            if let Some(p) = &d.path {
                overlay.insert(p.clone(), d.text.as_str());
            }
        }
        let links = self.links.clone();
        let with_ruff = self.options.with_ruff;
        let env = self.options.env.clone();
        let tx = self.events.0.clone();
        self.running.insert(uri.clone());
        // The command line's stack: the parser and the evaluator recurse on
        // nested input, and their limits are set for this stack.
        let spawned = std::thread::Builder::new()
            .name("patchgen-check".into())
            .stack_size(patchgen_core::workers::STACK_SIZE)
            .spawn(move || {
                let result =
                    std::panic::catch_unwind(AssertUnwindSafe(|| check::check(&path, overlay, &links, with_ruff, env)))
                        .unwrap_or_else(|_| Some(check::internal_error()));
                let _ = tx.send(Event::Checked { uri, version, result });
            });
        if spawned.is_err() {
            self.log(MessageType::ERROR, "patchgen server: cannot start a check thread".into());
        }
    }

    fn event(&mut self, ev: Event) {
        let (uri, version, result) = match ev {
            Event::Checked { uri, version, result } => (uri, version, result),
            Event::Mapped { uri, map } => return self.mapped(uri, map),
        };
        self.running.remove(&uri);
        let current = self.docs.get(&uri).map(|d| d.version);
        if self.rerun.remove(&uri) || current != Some(version) {
            // Stale: the buffer changed meanwhile; its newer check decides.
            if current.is_some() {
                self.due.entry(uri).or_insert_with(Instant::now);
            }
            return;
        }
        let Some(checked) = result else {
            self.publish(uri.clone(), Vec::new(), Some(version));
            self.published.remove(&uri);
            return;
        };
        if let Some(at) = self.changed_at.remove(&uri) {
            self.log(
                MessageType::LOG,
                format!(
                    "patchgen: diagnostics for {} published {} ms after the change (check {} ms)",
                    uri.path(),
                    at.elapsed().as_millis(),
                    checked.took.as_millis()
                ),
            );
        }
        self.publish(uri.clone(), checked.diagnostics.clone(), Some(version));
        self.published.insert(uri, Published { checked });
    }

    fn publish(&self, uri: Url, diagnostics: Vec<lsp_types::Diagnostic>, version: Option<i32>) {
        let params = PublishDiagnosticsParams { uri, diagnostics, version };
        self.send(Notification::new(lsp_types::notification::PublishDiagnostics::METHOD.to_string(), params));
    }

    /// The upstream modules of the project `path` is in.
    fn upstreams_for(&mut self, path: &Path) -> Option<Arc<Upstreams>> {
        let project = Project::find(path.parent()?).ok()?;
        if let Some(u) = self.upstreams.get(&project.root) {
            return Some(u.clone());
        }
        let search = SearchPath::from_env(&self.options.env, &project.root, &project.root, &project.package_root());
        let u = Arc::new(Upstreams::new(search, self.options.scratch.join("upstream")));
        self.upstreams.insert(project.root.clone(), u.clone());
        Some(u)
    }

    /// The buffer at `uri`, the site at `pos`, and the module a target string refers to.
    fn site(&self, uri: &Url, pos: Position) -> Option<(&Doc, Site, usize)> {
        let doc = self.docs.get(uri)?;
        let offset = offset_of(&doc.text, pos);
        let site = site_at(&doc.text, offset)?;
        Some((doc, site, offset))
    }

    fn hover(&mut self, p: HoverParams) -> Option<Hover> {
        let uri = p.text_document_position_params.text_document.uri;
        if let Some((map, doc, is_py)) = self.generated_doc(&uri) {
            let line = p.text_document_position_params.position.line as usize;
            let value = map.hover(&doc.text, line, is_py)?;
            return Some(Hover {
                contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value }),
                range: None,
            });
        }
        let (doc, site, _) = self.site(&uri, p.text_document_position_params.position)?;
        let (path, text) = (doc.path.clone()?, doc.text.clone());
        let value = match site {
            Site::NoqaCode { code } => {
                let mut s = docs::summary(&code)?;
                if let Some(url) = self.links.url(&code) {
                    s.push_str(&format!("\n\n[documentation]({url})"));
                }
                s
            }
            Site::Target { text: target, .. } => {
                let module = self.upstreams_for(&path)?.module(&source_module_of(&text)?)?;
                module.find(&target)?.hover()
            }
            Site::ImportName { module, name } => self.upstreams_for(&path)?.module(&module)?.find(&name)?.hover(),
            Site::ImportModule { module } => {
                let m = self.upstreams_for(&path)?.module(&module)?;
                format!("module `{module}`\n\n`{}`\n", m.origin.display())
            }
            Site::Definition { .. } => return None,
        };
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value }),
            range: None,
        })
    }

    fn definition(&mut self, p: GotoDefinitionParams) -> Option<GotoDefinitionResponse> {
        let uri = p.text_document_position_params.text_document.uri;
        if let Some((map, doc, is_py)) = self.generated_doc(&uri) {
            let line = p.text_document_position_params.position.line as usize;
            let mut location = map.definition(&doc.text, line, is_py)?;
            if location.uri.to_file_path().is_ok_and(|f| !f.is_file()) {
                // An upstream line inside a wheel: its read-only copy.
                let py = map.py.clone();
                let module = self.upstreams_for(&py)?.module(&map.mapped.plan.source_module)?;
                location.uri = Url::from_file_path(module.on_disk.as_ref()?).ok()?;
            }
            return Some(GotoDefinitionResponse::Scalar(location));
        }
        let (doc, site, _) = self.site(&uri, p.text_document_position_params.position)?;
        let (path, text) = (doc.path.clone()?, doc.text.clone());
        let at_name = |found: crate::upstream::Found| -> Option<Location> {
            let file = found.file.on_disk.as_ref()?;
            let (line, column) = found.name_position();
            let text =
                patchgen_cache::bounded::read_to_string(file, patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE).ok()?;
            let loc = patchgen_diagnostics::Location::point(file.clone(), line, column);
            let start = crate::text::range_of(&text, &loc).start;
            Some(Location { uri: Url::from_file_path(file).ok()?, range: Range::new(start, start) })
        };
        let location = match site {
            Site::Target { text: target, .. } => {
                let module = self.upstreams_for(&path)?.module(&source_module_of(&text)?)?;
                at_name(module.find(&target)?)?
            }
            Site::ImportName { module, name } => at_name(self.upstreams_for(&path)?.module(&module)?.find(&name)?)?,
            Site::ImportModule { module } => {
                let m = self.upstreams_for(&path)?.module(&module)?;
                Location { uri: Url::from_file_path(m.on_disk.as_ref()?).ok()?, range: Range::default() }
            }
            Site::Definition { line } => {
                let published = self.published.get(&uri)?;
                let def = published
                    .checked
                    .generated
                    .iter()
                    .find(|g| g.config.line == line && resolve(&g.config.path) == resolve(&path))?;
                let target = &def.generated;
                let start = Position::new(target.line.saturating_sub(1) as u32, 0);
                Location { uri: Url::from_file_path(&target.path).ok()?, range: Range::new(start, start) }
            }
            Site::NoqaCode { code } => Location { uri: self.links.url(&code)?, range: Range::default() },
        };
        Some(GotoDefinitionResponse::Scalar(location))
    }

    fn completion(&mut self, p: CompletionParams) -> Option<CompletionResponse> {
        let uri = p.text_document_position.text_document.uri;
        let (doc, site, offset) = self.site(&uri, p.text_document_position.position)?;
        let (path, text) = (doc.path.clone()?, doc.text.clone());
        let (module, prefix, start) = match site {
            Site::Target { prefix, range, .. } => (source_module_of(&text)?, prefix, range.0),
            Site::ImportName { module, name } => {
                let start = offset.saturating_sub(name.len().min(offset));
                let prefix = text.get(start..offset).unwrap_or_default().to_string();
                (module, prefix, start)
            }
            _ => return None,
        };
        let module = self.upstreams_for(&path)?.module(&module)?;
        let edit_range = Range::new(position_of(&text, start), position_of(&text, offset));
        let items = module
            .completions(&prefix)
            .into_iter()
            .map(|(label, detail, is_class)| CompletionItem {
                kind: Some(if is_class {
                    CompletionItemKind::CLASS
                } else if label.contains('.') {
                    CompletionItemKind::METHOD
                } else {
                    CompletionItemKind::FUNCTION
                }),
                detail: Some(detail),
                text_edit: Some(lsp_types::CompletionTextEdit::Edit(TextEdit {
                    range: edit_range,
                    new_text: label.clone(),
                })),
                filter_text: Some(label.clone()),
                label,
                ..CompletionItem::default()
            })
            .collect();
        Some(CompletionResponse::Array(items))
    }

    fn code_actions(&mut self, p: CodeActionParams) -> Option<Vec<CodeActionOrCommand>> {
        let uri = p.text_document.uri;
        if let Some((map, doc, true)) = self.generated_doc(&uri) {
            let drifted = map.diagnostics(&doc.text, true).len() > 1;
            let on_disk = std::fs::read_to_string(&map.py).ok();
            if !drifted && on_disk.as_deref().is_some_and(|t| t == map.mapped.text) {
                return Some(Vec::new());
            }
            let command = lsp_types::Command {
                title: "Regenerate from the config".into(),
                command: COMMAND_REGENERATE.into(),
                arguments: Some(vec![serde_json::json!(uri)]),
            };
            return Some(vec![CodeActionOrCommand::CodeAction(lsp_types::CodeAction {
                title: format!("Regenerate from the config ({})", map.module),
                kind: Some(lsp_types::CodeActionKind::QUICKFIX),
                command: Some(command),
                is_preferred: Some(true),
                ..lsp_types::CodeAction::default()
            })]);
        }
        let doc = self.docs.get(&uri)?;
        let published = self.published.get(&uri)?;
        let diagnostics: Vec<&lsp_types::Diagnostic> = published
            .checked
            .diagnostics
            .iter()
            .filter(|d| d.range.start <= p.range.end && p.range.start <= d.range.end)
            .collect();
        Some(actions::for_diagnostics(&uri, &doc.text, &diagnostics))
    }

    /// The map and buffer of `uri` when it is a generated `.py` (`true`) or `.diff` (`false`) with a map.
    fn generated_doc(&self, uri: &Url) -> Option<(Arc<GenMap>, &Doc, bool)> {
        let doc = self.docs.get(uri)?;
        let path = doc.path.as_deref()?;
        if !generated::is_generated(path) {
            return None;
        }
        let map = self.maps.get(uri)?.clone();
        let is_py = map.is_py(path);
        Some((map, doc, is_py))
    }

    /// Map `uri` (a config or a generated file) on a worker thread.
    fn spawn_map(&mut self, uri: Url) {
        let Some(path) = self.docs.get(&uri).and_then(|d| d.path.clone()) else { return };
        if !check::is_config(&path) && !generated::is_generated(&path) {
            return;
        }
        let tx = self.events.0.clone();
        let env = self.options.env.clone();
        let spawned = std::thread::Builder::new().name("patchgen-map".into()).spawn(move || {
            let map = std::panic::catch_unwind(AssertUnwindSafe(|| generated::map(&path, &env)))
                .ok()
                .and_then(Result::ok)
                .map(Arc::new);
            let _ = tx.send(Event::Mapped { uri, map });
        });
        if spawned.is_err() {
            self.log(MessageType::ERROR, "patchgen server: cannot start a mapping thread".into());
        }
    }

    /// A map arrived: keep it, and show a generated buffer's provenance.
    fn mapped(&mut self, uri: Url, map: Option<Arc<GenMap>>) {
        if !self.docs.contains_key(&uri) {
            return;
        }
        match map {
            Some(m) => {
                self.maps.insert(uri.clone(), m);
            }
            None => {
                self.maps.remove(&uri);
            }
        }
        self.publish_generated(&uri);
        if self.docs.get(&uri).and_then(|d| d.path.as_deref()).is_some_and(check::is_config) {
            self.request_client("workspace/codeLens/refresh", serde_json::Value::Null);
        }
    }

    /// Publish a generated buffer's provenance diagnostics (from its map, if any).
    fn publish_generated(&self, uri: &Url) {
        if let Some((map, doc, is_py)) = self.generated_doc(uri) {
            self.publish(uri.clone(), map.diagnostics(&doc.text, is_py), Some(doc.version));
        }
    }

    /// A file was saved: map it again, and every open file whose map reads it.
    fn saved(&mut self, uri: &Url) {
        let Ok(path) = uri.to_file_path() else { return };
        let path = resolve(&path);
        let mut again: Vec<Url> = vec![uri.clone()];
        for (u, m) in &self.maps {
            if u != uri && (resolve(&m.config) == path || m.is_py(&path)) {
                again.push(u.clone());
            }
        }
        for u in again {
            self.spawn_map(u);
        }
    }

    /// Send a request to the client (its answer is not awaited).
    fn request_client(&mut self, method: &str, params: serde_json::Value) {
        self.next_request += 1;
        let id = RequestId::from(format!("patchgen-{}", self.next_request));
        self.send(Request::new(id, method.to_string(), params));
    }

    /// "Go to generated" (`textDocument/implementation` in a config): from
    /// a patch — its registration or any line of its code, up to the next
    /// registration — to every region of the generated file it produced
    /// (the first changed line of each of its hunks).
    fn go_to_generated(&mut self, p: GotoDefinitionParams) -> Option<GotoDefinitionResponse> {
        let uri = p.text_document_position_params.text_document.uri;
        let line = p.text_document_position_params.position.line as usize;
        let map = self.maps.get(&uri)?.clone();
        let path = self.docs.get(&uri)?.path.clone()?;
        if !check::is_config(&path) {
            return None;
        }
        let py_uri = Url::from_file_path(resolve(&map.py)).ok()?;
        let lenses = map.lenses();
        let lens = lenses.iter().filter(|l| l.line <= line).max_by_key(|l| l.line)?;
        let locations: Vec<Location> = lens
            .hunks
            .iter()
            .map(|&first| {
                let at = Position::new(first.saturating_sub(1) as u32, 0);
                Location::new(py_uri.clone(), Range::new(at, at))
            })
            .collect();
        (!locations.is_empty()).then_some(GotoDefinitionResponse::Array(locations))
    }

    /// A code lens above each patch registration: the hunks it makes in the `.diff`.
    fn code_lenses(&mut self, p: lsp_types::CodeLensParams) -> Option<Vec<lsp_types::CodeLens>> {
        let uri = p.text_document.uri;
        let map = self.maps.get(&uri)?.clone();
        let path = self.docs.get(&uri)?.path.clone()?;
        if !check::is_config(&path) {
            return None;
        }
        let diff_name = map.diff.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let py_uri = Url::from_file_path(resolve(&map.py)).ok()?;
        let lenses = map
            .lenses()
            .into_iter()
            .map(|l| {
                let range = Range::new(Position::new(l.line as u32, 0), Position::new(l.line as u32, 0));
                let command = match l.hunks.first() {
                    Some(first) => lsp_types::Command {
                        title: format!(
                            "{} hunk{} in {diff_name}",
                            l.hunks.len(),
                            if l.hunks.len() == 1 { "" } else { "s" }
                        ),
                        command: COMMAND_OPEN_GENERATED.into(),
                        arguments: Some(vec![serde_json::json!(py_uri), serde_json::json!(first.saturating_sub(1))]),
                    },
                    None => lsp_types::Command { title: "no effect".into(), command: String::new(), arguments: None },
                };
                lsp_types::CodeLens { range, command: Some(command), data: None }
            })
            .collect();
        Some(lenses)
    }

    /// The config's patches, with their targets, as the outline.
    fn document_symbols(&mut self, p: lsp_types::DocumentSymbolParams) -> Option<lsp_types::DocumentSymbolResponse> {
        let uri = p.text_document.uri;
        let map = self.maps.get(&uri)?.clone();
        let doc = self.docs.get(&uri)?;
        let lines: Vec<&str> = doc.text.lines().collect();
        #[allow(deprecated)] // `deprecated` is a required field of the struct
        let symbols = map
            .lenses()
            .into_iter()
            .map(|l| {
                let width = lines.get(l.line).map_or(0, |s| s.encode_utf16().count()) as u32;
                let range = Range::new(Position::new(l.line as u32, 0), Position::new(l.line as u32, width));
                lsp_types::DocumentSymbol {
                    name: l.target.clone(),
                    detail: Some(format!("{:?} · {} hunk(s)", l.patch_type, l.hunks.len())),
                    kind: match l.patch_type {
                        patchgen_config::plan::PatchType::ClassReplacement => lsp_types::SymbolKind::CLASS,
                        patchgen_config::plan::PatchType::FunctionReplacement => lsp_types::SymbolKind::FUNCTION,
                        _ => lsp_types::SymbolKind::METHOD,
                    },
                    tags: None,
                    deprecated: None,
                    range,
                    selection_range: range,
                    children: None,
                }
            })
            .collect();
        Some(lsp_types::DocumentSymbolResponse::Nested(symbols))
    }

    /// `patchgen.regenerate` (write the generated file and its `.diff` as
    /// `check --fix` would) and `patchgen.openGenerated` (show a line).
    fn execute_command(&mut self, p: lsp_types::ExecuteCommandParams) -> Option<serde_json::Value> {
        let uri: Url = serde_json::from_value(p.arguments.first()?.clone()).ok()?;
        match p.command.as_str() {
            COMMAND_OPEN_GENERATED => {
                let line = p.arguments.get(1).and_then(|l| l.as_u64()).unwrap_or(0) as u32;
                let at = Position::new(line, 0);
                let params = lsp_types::ShowDocumentParams {
                    uri,
                    external: Some(false),
                    take_focus: Some(true),
                    selection: Some(Range::new(at, at)),
                };
                self.request_client("window/showDocument", serde_json::to_value(params).ok()?);
            }
            COMMAND_REGENERATE => {
                let map = self.maps.get(&uri)?.clone();
                let project = Project::find(map.config.parent()?).ok()?;
                let root = project.root.clone();
                let ctx = patchgen_core::pipeline::Context::new(project, &root, None, &self.options.env);
                let written = ctx
                    .generate(&map.module, "config", None)
                    .map_err(|e| e.to_string())
                    .and_then(|g| patchgen_core::check::check_generated(&g, true).map_err(|e| e.to_string()));
                match written {
                    Ok(_) => {
                        let text = std::fs::read_to_string(&map.py).ok()?;
                        if let Some(doc) = self.docs.get(&uri).filter(|d| d.text != text) {
                            let end = position_of(&doc.text, doc.text.len());
                            let edit = lsp_types::WorkspaceEdit {
                                changes: Some(
                                    [(
                                        uri.clone(),
                                        vec![TextEdit { range: Range::new(Position::new(0, 0), end), new_text: text }],
                                    )]
                                    .into_iter()
                                    .collect(),
                                ),
                                ..lsp_types::WorkspaceEdit::default()
                            };
                            let params = lsp_types::ApplyWorkspaceEditParams {
                                label: Some("Regenerate from the config".into()),
                                edit,
                            };
                            self.request_client("workspace/applyEdit", serde_json::to_value(params).ok()?);
                        }
                        self.spawn_map(uri);
                    }
                    Err(e) => self.log(MessageType::ERROR, format!("patchgen: cannot regenerate {}: {e}", map.module)),
                }
            }
            _ => return None,
        }
        Some(serde_json::Value::Null)
    }
}

/// A request's response: its params decoded (else `InvalidParams`), the
/// handler's answer (`null` when it has none).
fn respond<P: serde::de::DeserializeOwned, R: serde::Serialize>(
    id: RequestId,
    params: serde_json::Value,
    handler: impl FnOnce(P) -> Option<R>,
) -> Response {
    match serde_json::from_value::<P>(params) {
        Ok(p) => Response::new_ok(id, handler(p)),
        Err(e) => Response::new_err(id, ErrorCode::InvalidParams as i32, format!("invalid params: {e}")),
    }
}
