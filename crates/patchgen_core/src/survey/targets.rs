//! One config against two upstream versions: every `override_method`,
//! `replace_class` and `replace_function` target looked up in both, its
//! contract compared, and the names and `self.<attr>` the config's code
//! relies on checked against what the new version still provides.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;

use super::attrs;
use super::body::{self, PatchText, TargetText};
use super::compare;
use super::modules::{self, ModuleError, Version};
use super::report::{Details, Finding, Kind, MissingAttr, MissingName, PatchKind, Site};
use super::signature::{self, FunctionInfo};
use crate::codegen::imports::{collect_imports, transform_imports};
use crate::codegen::text::{apply_name_map, strip_patch_decorators};
use patchgen_config::plan::{Patch, PatchPlan, PatchType, SourceObject};
use patchgen_python::pysource::ParsedFile;
use patchgen_python::pysource::names;
use patchgen_python::pytext;

/// A target as found in one version.
struct Found {
    site: Site,
    /// The function, the method, or the class's `__init__` (`None` when the
    /// class inherits it from outside the upstream).
    function: Option<FunctionInfo>,
    /// A class's own decorators and bases (classes only).
    class: Option<(Vec<signature::DecoratorInfo>, Vec<String>)>,
    /// Its source and definition (what `body` compares).
    source: (TargetText, Stmt),
}

/// A definition's text in its file, decorators included.
fn target_text(file: &ParsedFile, stmt: &Stmt, name: &str) -> TargetText {
    let (first, last) = (file.line_of(stmt.start()), file.line_of(stmt.end()));
    TargetText { text: file.line_range(first, last).to_string(), first_line: first, name: name.to_string() }
}

/// The upstream module of a config in one version (`None`: not there).
type Upstream = Option<Arc<ParsedFile>>;

/// Why a config's targets cannot be surveyed.
#[derive(Debug, thiserror::Error)]
pub enum SurveyError {
    /// The upstream module exists but cannot be read (the message names it).
    #[error("{0}")]
    Broken(String),
    #[error("upstream module `{module}` is in neither version ({} nor {})", from.display(), to.display())]
    InNeither { module: String, from: std::path::PathBuf, to: std::path::PathBuf },
}

fn load(version: &Version, module: &str) -> Result<Upstream, SurveyError> {
    match version.module(module) {
        Ok(f) => Ok(Some(f)),
        Err(ModuleError::NotFound) => Ok(None),
        Err(ModuleError::Broken(message)) => Err(SurveyError::Broken(message)),
    }
}

fn site(file: &ParsedFile, line: usize, owner: Option<String>) -> Site {
    Site { origin: file.path.to_string_lossy().into_owned(), line, owner }
}

fn find(version: &Version, module: &str, file: &Upstream, patch_type: PatchType, target: &str) -> Option<Found> {
    let file = file.as_ref()?;
    match patch_type {
        PatchType::FunctionReplacement => {
            let f = modules::function(file, target)?;
            let info = FunctionInfo::of(f, file);
            let stmt = Stmt::FunctionDef(f.clone());
            let source = (target_text(file, &stmt, target), stmt);
            Some(Found { site: site(file, info.line, None), function: Some(info), class: None, source })
        }
        PatchType::ClassReplacement => {
            let class = version.class(module, target).filter(|c| c.module == module)?;
            let def = class.def();
            let init = version.lineage(&class).method("__init__").map(|(_, f)| FunctionInfo::of(f, &class.file));
            let stmt = Stmt::ClassDef(def.clone());
            let source = (target_text(file, &stmt, target), stmt);
            Some(Found {
                source,
                site: site(file, file.line_of(def.start()), None),
                function: init,
                class: Some((
                    signature::decorators(&def.decorator_list, &file.text),
                    signature::bases(def, &file.text),
                )),
            })
        }
        PatchType::MethodOverride => {
            let (class_name, method) = target.split_once('.')?;
            let class = version.class(module, class_name).filter(|c| c.module == module)?;
            let lineage = version.lineage(&class);
            let (owner, f) = lineage.method(method)?;
            let info = FunctionInfo::of(f, &owner.file);
            let inherited =
                (owner.module != class.module || owner.name() != class.name()).then(|| owner.name().to_string());
            let stmt = Stmt::FunctionDef(f.clone());
            let source = (target_text(&owner.file, &stmt, method), stmt);
            Some(Found { site: site(&owner.file, info.line, inherited), function: Some(info), class: None, source })
        }
        _ => None,
    }
}

/// A patch target's source in one version (`None`: not there), found as
/// the survey finds it: what `bump` merges against.
pub fn locate(
    version: &Version,
    module: &str,
    patch_type: PatchType,
    target: &str,
) -> Result<Option<TargetText>, SurveyError> {
    let file = load(version, module)?;
    Ok(find(version, module, &file, patch_type, target).map(|f| f.source.0))
}

/// A replacement's text as the generator emits it (dedent, `name_map`,
/// DSL decorators stripped), parsed.
struct Prepared {
    text: String,
    parsed: ruff_python_parser::Parsed<ruff_python_ast::ModModule>,
}

impl Prepared {
    fn of(patch: &Patch, object: &SourceObject) -> Option<Prepared> {
        let src = pytext::dedent(&object.source);
        let text = strip_patch_decorators(&apply_name_map(&src, patch.name_map.as_deref()));
        let parsed = ruff_python_parser::parse_module(&text).ok()?;
        Some(Prepared { text, parsed })
    }

    fn body(&self) -> &[Stmt] {
        &self.parsed.syntax().body
    }
}

/// Where a module-level name of the generated file comes from: a line of
/// the upstream module, or the config (`None`).
type ModuleNames = BTreeMap<String, Option<usize>>;

/// The names the generated module binds at module level when generated
/// against `upstream`: its imports (after `drop_import_names`), the config's
/// additional imports and post-import blocks, the upstream's top-level
/// classes, functions and plain assignments that are kept, and helpers.
fn module_names(plan: &PatchPlan, upstream: &ParsedFile) -> ModuleNames {
    let mut import_lines: BTreeMap<String, usize> = BTreeMap::new();
    struct Imports<'m>(&'m mut BTreeMap<String, usize>, &'m ParsedFile);
    impl<'a> ruff_python_ast::statement_visitor::StatementVisitor<'a> for Imports<'_> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            if matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_)) {
                for b in names::bindings(std::slice::from_ref(stmt)) {
                    self.0.entry(b.name.to_string()).or_insert_with(|| self.1.line_of(stmt.start()));
                }
            }
            ruff_python_ast::statement_visitor::walk_stmt(self, stmt);
        }
    }
    ruff_python_ast::statement_visitor::StatementVisitor::visit_body(
        &mut Imports(&mut import_lines, upstream),
        upstream.body(),
    );

    let mut out = ModuleNames::new();
    let block = transform_imports(plan, &collect_imports(upstream.body()));
    if let Ok(parsed) = ruff_python_parser::parse_module(&block) {
        for b in names::bindings(&parsed.syntax().body) {
            let line = import_lines.get(b.name).copied();
            out.entry(b.name.to_string()).or_insert(line);
        }
    }
    for stmt in upstream.body() {
        let keep = match stmt {
            Stmt::ClassDef(c) => !plan.exclude.iter().any(|e| e == c.name.id.as_str()),
            Stmt::FunctionDef(f) => !plan.exclude.iter().any(|e| e == f.name.id.as_str()),
            Stmt::Assign(_) => true,
            _ => false,
        };
        if keep {
            for b in names::bindings(std::slice::from_ref(stmt)) {
                out.entry(b.name.to_string()).or_insert(Some(upstream.line_of(b.node.start())));
            }
        }
    }
    for helper in plan.helpers.iter().chain(plan.positioned_helpers.iter().map(|h| &h.helper)) {
        if let Some(body) = helper.object.as_ref().and_then(helper_body) {
            for b in names::bindings(&body.syntax().body) {
                out.entry(b.name.to_string()).or_insert(None);
            }
        }
    }
    out
}

fn helper_body(object: &SourceObject) -> Option<ruff_python_parser::Parsed<ruff_python_ast::ModModule>> {
    ruff_python_parser::parse_module(&strip_patch_decorators(&pytext::dedent(&object.source))).ok()
}

/// Names the new module no longer binds: bound by the old one, used by `body`.
struct NameCheck {
    old: ModuleNames,
    new: ModuleNames,
    old_origin: Option<String>,
}

impl NameCheck {
    fn missing(&self, body: &[Stmt]) -> Vec<MissingName> {
        names::free_names(body)
            .into_keys()
            .filter(|n| !self.new.contains_key(n))
            .filter_map(|n| {
                let line = self.old.get(&n)?;
                let from = line
                    .and_then(|l| self.old_origin.as_ref().map(|o| Site { origin: o.clone(), line: l, owner: None }));
                Some(MissingName { name: n, from })
            })
            .collect()
    }
}

/// The patches the generator applies, one per target (the last
/// registration wins, placed where the first one was).
pub fn targets(plan: &PatchPlan) -> Vec<&Patch> {
    let mut out: Vec<&Patch> = Vec::new();
    for p in &plan.patches {
        if !matches!(
            p.patch_type,
            PatchType::MethodOverride | PatchType::ClassReplacement | PatchType::FunctionReplacement
        ) {
            continue;
        }
        match out.iter_mut().find(|q| q.patch_type == p.patch_type && q.target == p.target) {
            Some(slot) => *slot = p,
            None => out.push(p),
        }
    }
    out
}

/// Attributes a config's own methods give a class: the ones its overrides
/// assign, and the overridden or injected methods themselves.
fn config_attributes(plan: &PatchPlan, class: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for p in targets(plan) {
        let Some((c, method)) = p.target.split_once('.') else {
            continue;
        };
        if p.patch_type != PatchType::MethodOverride || c != class {
            continue;
        }
        out.insert(method.to_string());
        if let Some(prepared) = p.replacement.as_ref().and_then(|r| Prepared::of(p, r)) {
            out.extend(attrs::of_replacement(prepared.body()).writes.into_keys());
        }
    }
    out
}

/// Every finding for one config. `Err` when its upstream module cannot be
/// read in either version.
pub fn survey(plan: &PatchPlan, from: &Version, to: &Version) -> Result<Vec<Finding>, SurveyError> {
    let module = plan.source_module.as_str();
    let (old, new) = (load(from, module)?, load(to, module)?);
    if old.is_none() && new.is_none() {
        return Err(SurveyError::InNeither {
            module: module.to_string(),
            from: from.upstream.location.clone(),
            to: to.upstream.location.clone(),
        });
    }
    let names = NameCheck {
        old: old.as_ref().map(|f| module_names(plan, f)).unwrap_or_default(),
        new: new.as_ref().map(|f| module_names(plan, f)).unwrap_or_default(),
        old_origin: old.as_ref().map(|f| f.path.to_string_lossy().into_owned()),
    };
    let mut findings = Vec::new();
    for patch in targets(plan) {
        findings.push(target_finding(plan, patch, from, to, &old, &new, &names));
    }
    findings.extend(config_code_findings(plan, &names));
    Ok(findings)
}

fn target_finding(
    plan: &PatchPlan,
    patch: &Patch,
    from: &Version,
    to: &Version,
    old: &Upstream,
    new: &Upstream,
    names: &NameCheck,
) -> Finding {
    let module = plan.source_module.as_str();
    let a = find(from, module, old, patch.patch_type, &patch.target);
    let b = find(to, module, new, patch.patch_type, &patch.target);
    let replacement = patch.replacement.as_ref().and_then(|r| Prepared::of(patch, r));
    let body = replacement.as_ref().map(Prepared::body).unwrap_or(&[]);
    let mut details = Details::default();
    let kind = match (&a, &b) {
        (None, None) => Kind::AddedByConfig,
        (Some(_), None) => Kind::Removed,
        (None, Some(_)) => Kind::NewUpstream,
        (Some(a), Some(b)) => {
            let is_class = patch.patch_type == PatchType::ClassReplacement;
            let replacement_sig =
                replacement.as_ref().and_then(|r| signature::of_replacement(r.body(), &r.text, is_class));
            let sig = |f: &Found| f.function.as_ref().map(|f| f.signature.clone()).unwrap_or_default();
            if a.function.is_some() || b.function.is_some() {
                details.signature = compare::signatures(&sig(a), &sig(b), replacement_sig.as_ref());
            }
            let decorators = |f: &Found| match &f.class {
                Some((d, _)) => d.clone(),
                None => f.function.as_ref().map(|f| f.decorators.clone()).unwrap_or_default(),
            };
            details.decorators = compare::decorators(&decorators(a), &decorators(b));
            if let (Some((_, x)), Some((_, y))) = (&a.class, &b.class) {
                details.bases = compare::bases(x, y);
            }
            if patch.patch_type == PatchType::MethodOverride {
                details.missing_attributes = missing_attributes(plan, patch, from, to, body);
            }
            details.body = body_diff(patch, a, b);
            if details.signature.is_some() || details.bases.is_some() {
                Kind::SignatureChanged
            } else if details.decorators.is_some() {
                Kind::DecoratorsChanged
            } else {
                match details.body.as_ref().map(|d| d.change) {
                    Some(body::BodyChange::Code) => Kind::BodyChanged,
                    Some(body::BodyChange::Docstring) => Kind::DocstringChanged,
                    None => Kind::Unchanged,
                }
            }
        }
    };
    details.from = a.map(|f| f.site);
    details.to = b.map(|f| f.site);
    details.missing_names = names.missing(body);
    Finding {
        config: plan.config_module.clone(),
        target: patch.target.clone(),
        patch: match patch.patch_type {
            PatchType::ClassReplacement => PatchKind::ReplaceClass,
            PatchType::FunctionReplacement => PatchKind::ReplaceFunction,
            _ => PatchKind::OverrideMethod,
        },
        kind,
        registered_at: patch.registered_at.clone(),
        details,
    }
}

/// The body comparison of a target found in both versions, its hunks
/// placed in the patch's config lines (`name_map` applied as generation
/// applies it: plain replacement keeps the lines where they are).
fn body_diff(patch: &Patch, a: &Found, b: &Found) -> Option<body::BodyDiff> {
    let object = patch.replacement.as_ref().filter(|o| !o.source.is_empty());
    let mapped = object.map(|o| apply_name_map(&o.source, patch.name_map.as_deref()));
    let name = object.map(|o| apply_name_map(&o.name, patch.name_map.as_deref())).unwrap_or_default();
    let line_of = |i: usize| object.map_or(0, |o| o.line_of(i));
    let text = match (object, &mapped) {
        (Some(o), Some(text)) if text.lines().count() == o.source.lines().count() => {
            Some(PatchText { text, name: &name, line_of: &line_of })
        }
        _ => None,
    };
    body::compare(&a.source.0, &b.source.0, &a.source.1, &b.source.1, text)
}

/// `self.<attr>` the override reads that the old class provided and the new
/// one (with the config's own methods) no longer does.
fn missing_attributes(
    plan: &PatchPlan,
    patch: &Patch,
    from: &Version,
    to: &Version,
    body: &[Stmt],
) -> Vec<MissingAttr> {
    let Some((class, _)) = patch.target.split_once('.') else {
        return Vec::new();
    };
    let module = plan.source_module.as_str();
    let provided = |v: &Version| v.class(module, class).map(|c| attrs::provided(&v.lineage(&c)));
    let (Some(old), Some(new)) = (provided(from), provided(to)) else {
        return Vec::new();
    };
    let own = config_attributes(plan, class);
    attrs::of_replacement(body)
        .reads
        .into_keys()
        .filter(|n| !new.contains_key(n) && !own.contains(n))
        .filter_map(|n| {
            old.get(&n).map(|(owner, line)| MissingAttr { name: n.clone(), owner: owner.clone(), line: *line })
        })
        .collect()
}

/// Helpers and post-import blocks that use names the new module no longer has.
fn config_code_findings(plan: &PatchPlan, names: &NameCheck) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut push = |patch: PatchKind, target: String, body: &[Stmt], at: patchgen_config::plan::Loc| {
        let missing = names.missing(body);
        if !missing.is_empty() {
            out.push(Finding {
                config: plan.config_module.clone(),
                target,
                patch,
                kind: Kind::AddedByConfig,
                registered_at: at,
                details: Details { missing_names: missing, ..Default::default() },
            });
        }
    };
    let config_file = patchgen_config::plan::Loc::line(plan.config_path.clone(), 0);
    for (i, block) in plan.post_import_blocks.iter().enumerate() {
        if let Ok(parsed) = ruff_python_parser::parse_module(pytext::strip(&pytext::dedent(block))) {
            push(
                PatchKind::AddPostImportBlock,
                format!("post-import block {}", i + 1),
                &parsed.syntax().body,
                config_file.clone(),
            );
        }
    }
    let helpers = plan
        .helpers
        .iter()
        .map(|h| (PatchKind::AddHelper, h))
        .chain(plan.positioned_helpers.iter().map(|h| (PatchKind::AddHelperAfter, &h.helper)));
    for (kind, helper) in helpers {
        let Some(object) = &helper.object else {
            continue;
        };
        if let Some(parsed) = helper_body(object) {
            push(kind, object.name.clone(), &parsed.syntax().body, object.defined_at.clone());
        }
    }
    out
}
