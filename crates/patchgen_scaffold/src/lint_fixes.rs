//! What `patchgen new` writes for a lint error located in *unpatched
//! upstream code* of the generated module when the rule itself names the
//! fix (its "Use instead"):
//!
//! - PG306 automodel-bypass: the constructor building a sub-model with
//!   `AutoModel*.from_config(config.<x>_config)` is overridden with the
//!   upstream text verbatim, each flagged call building the generated class
//!   instead (`<Generated>._from_config(config.<x>_config)`, arguments
//!   kept), so the patches of that sub-model (kernel guards, reused
//!   replacements) are not bypassed. transformers 5.16 builds every
//!   Qwen3-VL-like composite this way; VeOmni's qwen3_5_moe config
//!   overrides `Qwen3_5MoeModel.__init__` the same way.
//! - PG305 init-weights-container: `_init_weights` is overridden verbatim,
//!   each flagged branch `isinstance(module, <Container>)` re-keyed on the
//!   classes that own the tensors it initialises (`module.gate.weight`
//!   with `self.gate = <Router>(...)` in the container's `__init__` →
//!   `isinstance(module, <Router>)`, `module.weight`; one branch per owning
//!   class), as VeOmni's qwen3_omni_moe config did after the 5.16 bump.
//!   A branch that cannot be re-keyed (the tensors of a torch layer such
//!   as `nn.Linear`: no class tells that layer from the others) gets
//!   `<PreTrained>._initialize_weights` passing `is_custom_code=False`
//!   instead: the generated module is transformers' own code, initialised
//!   as transformers initialises its own classes (the branch runs).
//!
//! The facts are the ones the rules use (`patchgen_lint::automodel`,
//! `patchgen_lint::init_weights`), read from the generated file at the
//! place the finding points to (its "in the generated module" related
//! location). Not handled here, so still reported: a finding inside a
//! reused replacement (the pruning drops the reuse), a method the scaffold
//! already overrides, a call whose class the generated module lacks, a
//! class defining `_initialize_weights` itself.

use patchgen_config::plan::PatchType;
use std::path::PathBuf;

use ruff_python_ast::{Expr, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextRange, TextSize};

use super::facts::ModelFacts;
use super::retarget::Retargeted;
use super::ruff_findings::{Site, UpstreamOverride, binding_import, signature_names, site_of, snake, with_noqa};
use patchgen_diagnostics::{Diagnostic, Severity};
use patchgen_lint::pyfacts;
use patchgen_lint::{automodel, init_weights};
use patchgen_python::pysource::ParsedFile;
use patchgen_python::semantic::walk::{self, Scope};

/// The related location lint attaches to a finding in generated code.
const GENERATED: &str = "in the generated module";

/// Overrides to add, and the findings (indices into the report's
/// diagnostics) they answer.
#[derive(Default)]
pub struct Fixes {
    pub handled: Vec<usize>,
    pub overrides: Vec<UpstreamOverride>,
}

/// One flagged place: the diagnostic, its rule, its generated line.
struct Flag {
    index: usize,
    code: &'static str,
    line: usize,
}

/// Where in the generated file (checked-in text) a finding points.
fn generated_place(d: &Diagnostic) -> Option<(PathBuf, usize)> {
    d.related.iter().find(|r| r.message == GENERATED).map(|r| (r.location.path.clone(), r.location.line))
}

/// The fixes for the PG306/PG305 errors of `diagnostics` that lie in
/// upstream methods `rt` neither reuses nor overrides.
pub fn fixes(
    diagnostics: &[Diagnostic],
    configuration: Option<&ParsedFile>,
    new: &ModelFacts,
    rt: &Retargeted,
) -> Fixes {
    let mut out = Fixes::default();
    let mut files: Vec<ParsedFile> = Vec::new();
    // (file index, site, flags), in the order found.
    let mut groups: Vec<(usize, Site, Vec<Flag>)> = Vec::new();
    for (index, d) in diagnostics.iter().enumerate() {
        let code = match d.code.as_str() {
            "PG306" => "PG306",
            "PG305" => "PG305",
            _ => continue,
        };
        if d.severity != Severity::Error {
            continue;
        }
        let Some((path, line)) = generated_place(d) else { continue };
        let fi = match files.iter().position(|f| f.path == path) {
            Some(i) => i,
            None => {
                let Some(f) = std::fs::read_to_string(&path).ok().and_then(|t| ParsedFile::parse(path, &t).ok()) else {
                    continue;
                };
                files.push(f);
                files.len() - 1
            }
        };
        let site = site_of(&files[fi].text, files[fi].body(), line);
        let Site::Method { class, .. } = &site else { continue };
        let target = site.target().unwrap_or_default();
        let reused = rt
            .carried
            .iter()
            .any(|c| c.target == target || (c.patch_type == PatchType::ClassReplacement && c.target == *class));
        if reused || rt.upstream_overrides.iter().any(|o| o.target == target) {
            continue;
        }
        let flag = Flag { index, code, line };
        match groups.iter_mut().find(|(f, s, _)| *f == fi && *s == site) {
            Some((_, _, flags)) => flags.push(flag),
            None => groups.push((fi, site, vec![flag])),
        }
    }
    for (fi, site, flags) in groups {
        let file = &files[fi];
        let mut answered = Vec::new();
        if let Some((o, handled)) = override_method(file, &site, &flags, configuration, new) {
            out.overrides.push(o);
            answered = handled;
        }
        // PG305 branches that cannot be re-keyed (a torch layer's tensor):
        // the class initialises as transformers' own classes do.
        let rest: Vec<&Flag> = flags.iter().filter(|f| f.code == "PG305" && !answered.contains(&f.index)).collect();
        out.handled.extend(answered);
        if let (Site::Method { class, .. }, false) = (&site, rest.is_empty())
            && let Some(o) = non_custom_init(file, class, rt)
        {
            out.overrides.push(o);
            out.handled.extend(rest.iter().map(|f| f.index));
        }
    }
    out
}

/// `<class>._initialize_weights` passing `is_custom_code=False` on (what
/// PG305 accepts instead of re-keyed branches): transformers skips modules
/// owning no tensors only for custom code, because remote code may write
/// loaded tensors in place; the generated module is transformers' own
/// code, initialising through `transformers.initialization` (each tensor
/// guarded by its `_is_hf_initialized`), so it is initialised as
/// transformers initialises its own classes. `None` when the class (or a
/// base in the module) defines `_initialize_weights`, or the scaffold
/// already writes one.
fn non_custom_init(file: &ParsedFile, class: &str, rt: &Retargeted) -> Option<UpstreamOverride> {
    let c = pyfacts::class(file.body(), class)?;
    if pyfacts::local_lineage(file.body(), c).iter().any(|k| pyfacts::method(k, "_initialize_weights").is_some()) {
        return None;
    }
    let target = format!("{class}._initialize_weights");
    if rt.carried.iter().any(|c| c.target == target) || rt.upstream_overrides.iter().any(|o| o.target == target) {
        return None;
    }
    let function = format!("{}_initialize_weights_patched", snake(class));
    let source = format!(
        "def {function}(self, module, is_custom_code: bool = False):\n    super()._initialize_weights(module, is_custom_code=False)\n"
    );
    Some(UpstreamOverride {
        patch_type: "override_method",
        todo: format!(
            "patchgen new: `{class}._init_weights` branches on modules owning no tensors whose tensors belong to torch layers (no class to re-key them on): transformers 5.16+ skips such modules in custom code, so `{target}` initialises as transformers does its own classes (`is_custom_code=False`; the generated code initialises through `transformers.initialization`, each tensor guarded) (lint PG305)"
        ),
        target,
        function,
        codes: Vec::new(),
        description:
            "Initialise as transformers' own code, so container branches of _init_weights run (patchgen new, PG305)"
                .into(),
        source,
        imports: Vec::new(),
    })
}

/// The 1-based row of `offset` in `text`.
fn row_of(text: &str, offset: TextSize) -> usize {
    patchgen_diagnostics::LineIndex::new(text).line_of(offset.to_usize())
}

/// The override of the upstream method at `site` answering `flags`, and
/// the flags it answers; `None` when none can be answered.
fn override_method(
    file: &ParsedFile,
    site: &Site,
    flags: &[Flag],
    configuration: Option<&ParsedFile>,
    new: &ModelFacts,
) -> Option<(UpstreamOverride, Vec<usize>)> {
    let Site::Method { class, method, def_row, end_row } = site else { return None };
    let source = with_noqa(&file.text, *def_row, *end_row, &[]);
    let parsed = ruff_python_parser::parse_module(&source).ok()?;
    let Some(Stmt::FunctionDef(def)) = parsed.syntax().body.first() else { return None };
    // Rows of the method text are the file's, shifted.
    let local = |line: usize| line + 1 - def_row;
    let mut edits: Vec<(TextRange, String)> = Vec::new();
    let mut handled = Vec::new();
    let mut what: Vec<String> = Vec::new();
    let mut codes: Vec<&str> = Vec::new();
    for flag in flags {
        let row = local(flag.line);
        let answered = match flag.code {
            "PG306" => {
                let mut hit = false;
                for (call, attr) in automodel::automodel_calls_in(&def.body) {
                    if row_of(&source, call.start()) != row || edits.iter().any(|(r, _)| *r == call.func.range()) {
                        continue;
                    }
                    let Some(model) = configuration
                        .and_then(|c| automodel::sub_config_class(c, &attr))
                        .and_then(|cc| automodel::model_class_for_call(file.body(), &cc, call))
                    else {
                        continue;
                    };
                    let with = format!("{}._from_config", model.name.id);
                    let args = &source[call.arguments.range()];
                    what.push(format!("`{}` → `{with}{args}`", &source[call.range()]));
                    edits.push((call.func.range(), with));
                    hit = true;
                }
                hit
            }
            _ => match rekey(&source, def, file.body(), row) {
                Some((range, text, said)) if !edits.iter().any(|(r, _)| *r == range) => {
                    edits.push((range, text));
                    what.push(said);
                    true
                }
                _ => false,
            },
        };
        if answered {
            handled.push(flag.index);
            if !codes.contains(&flag.code) {
                codes.push(flag.code);
            }
        }
    }
    if edits.is_empty() {
        return None;
    }
    edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start()));
    let mut text = source.clone();
    for (r, with) in &edits {
        text.replace_range(r.start().to_usize()..r.end().to_usize(), with);
    }
    let function = format!("{}_{}_patched", snake(class), method.trim_matches('_'));
    text = patchgen_core::codegen::text::py_replace(
        &text,
        &format!("def {method}("),
        &format!("def {function}("),
        Some(1),
    );
    let target = format!("{class}.{method}");
    let why = codes
        .iter()
        .map(|c| match *c {
            "PG306" => "AutoModel builds transformers' own class, bypassing the generated one and its patches (lint PG306)",
            _ => "a module owning no tensors is skipped by transformers 5.16+ in custom code, so its branch never ran (lint PG305)",
        })
        .collect::<Vec<_>>()
        .join("; ");
    let todo = format!("patchgen new: upstream `{target}` verbatim but for {}: {why}", what.join(", "));
    let description = match codes.as_slice() {
        ["PG306"] => "Build the sub-models from the generated classes, not AutoModel (patchgen new, PG306)",
        ["PG305"] => "Key _init_weights branches on the classes owning the tensors (patchgen new, PG305)",
        _ => "Upstream with the lint fixes of patchgen new (PG305, PG306)",
    };
    let imports: Vec<String> = signature_names(def).iter().filter_map(|n| binding_import(new, n)).collect();
    let o = UpstreamOverride {
        patch_type: "override_method",
        target,
        function,
        codes: Vec::new(),
        todo,
        description: description.to_string(),
        source: text,
        imports,
    };
    Some((o, handled))
}

/// The `if`/`elif` clauses of a body, nested ones included: (test, body,
/// where the clause's keyword starts).
fn clauses(body: &[Stmt]) -> Vec<(&Expr, &[Stmt], TextSize)> {
    let mut out = Vec::new();
    walk::for_each_statement(body, Scope::Own, |s| {
        if let Stmt::If(i) = s {
            out.push((&*i.test, &i.body[..], i.start()));
            for c in &i.elif_else_clauses {
                if let Some(t) = &c.test {
                    out.push((t, &c.body[..], c.start()));
                }
            }
        }
    });
    out
}

/// The class `self.<attr> = <Class>(...)` assigns in the `__init__` of
/// `container` (or a base of it in the module), when that class is of the
/// module and owns tensors.
fn owner_of(module: &[Stmt], container: &str, attr: &str) -> Option<String> {
    let class = pyfacts::class(module, container)?;
    let mut found = None;
    for c in pyfacts::local_lineage(module, class) {
        let Some(init) = pyfacts::method(c, "__init__") else { continue };
        walk::for_each_statement(&init.body, Scope::Own, |s| {
            if found.is_some() {
                return;
            }
            let Stmt::Assign(a) = s else { return };
            let [Expr::Attribute(t)] = &a.targets[..] else { return };
            if t.attr.id.as_str() != attr || !matches!(&*t.value, Expr::Name(n) if n.id.as_str() == "self") {
                return;
            }
            if let Expr::Call(call) = &*a.value
                && let Expr::Name(n) = &*call.func
            {
                found = Some(n.id.to_string());
            }
        });
        if found.is_some() {
            break;
        }
    }
    found.filter(|d| init_weights::is_param_less(module, d) == Some(false))
}

/// The column text (indentation) before `at` on its line.
fn indent_at(text: &str, at: TextSize) -> Option<&str> {
    let at = at.to_usize();
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[start..at];
    indent.chars().all(char::is_whitespace).then_some(indent)
}

/// The flagged branch at `row` of `def` (method text `source`) re-keyed on
/// the classes owning what it initialises: the edit and what it did.
fn rekey(source: &str, def: &StmtFunctionDef, module: &[Stmt], row: usize) -> Option<(TextRange, String, String)> {
    let (test, body, kw) = clauses(&def.body).into_iter().find(|(t, _, _)| row_of(source, t.start()) == row)?;
    let Expr::Call(call) = test else { return None };
    if !matches!(&*call.func, Expr::Name(n) if n.id.as_str() == "isinstance") {
        return None;
    }
    let [Expr::Name(m), Expr::Name(container)] = &call.arguments.args[..] else { return None };
    let (m, container) = (m.id.as_str(), container.id.as_str());
    if init_weights::is_param_less(module, container) != Some(true) {
        return None;
    }
    // Classes the method tests already (and what they derive from): an
    // owning class among them would be caught, or shadowed, elsewhere.
    let tested: Vec<&str> = init_weights::isinstance_checks(&def.body).into_iter().flat_map(|(_, n)| n).collect();
    // Each statement: the one owning class whose tensors it touches.
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    let mut attrs_done: Vec<String> = Vec::new();
    for stmt in body {
        let exprs = walk::expressions(std::slice::from_ref(stmt), Scope::All);
        let names = exprs.iter().filter(|e| matches!(e, Expr::Name(n) if n.id.as_str() == m)).count();
        let subs: Vec<(TextRange, &str)> = exprs
            .iter()
            .filter_map(|e| match e {
                Expr::Attribute(a) if matches!(&*a.value, Expr::Name(n) if n.id.as_str() == m) => {
                    Some((a.range(), a.attr.id.as_str()))
                }
                _ => None,
            })
            .collect();
        if subs.is_empty() || subs.len() != names {
            return None;
        }
        let mut owner: Option<String> = None;
        for (_, attr) in &subs {
            let d = owner_of(module, container, attr)?;
            if owner.as_ref().is_some_and(|o| *o != d) {
                return None;
            }
            if !attrs_done.iter().any(|a| a == attr) {
                attrs_done.push(attr.to_string());
            }
            owner = Some(d);
        }
        let owner = owner?;
        let lineage: Vec<String> = pyfacts::class(module, &owner)
            .map(|c| {
                pyfacts::local_lineage(module, c)
                    .iter()
                    .flat_map(|k| {
                        std::iter::once(k.name.id.to_string()).chain(
                            pyfacts::base_names(k).into_iter().map(|b| b.rsplit('.').next().unwrap_or(&b).to_string()),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if lineage.iter().any(|n| tested.contains(&n.as_str())) {
            return None;
        }
        let start = stmt.start();
        let mut text = source[stmt.range()].to_string();
        let mut subs = subs;
        subs.sort_by_key(|(r, _)| std::cmp::Reverse(r.start()));
        for (r, _) in subs {
            text.replace_range((r.start() - start).to_usize()..(r.end() - start).to_usize(), m);
        }
        match groups.iter_mut().find(|(o, _)| *o == owner) {
            Some((_, v)) => v.push(text),
            None => groups.push((owner, vec![text])),
        }
    }
    let kw_indent = indent_at(source, kw)?;
    let body_indent = indent_at(source, body.first()?.start())?;
    let mut text = String::new();
    for (k, (owner, stmts)) in groups.iter().enumerate() {
        if k == 0 {
            text.push_str(&format!("isinstance({m}, {owner}):"));
        } else {
            text.push_str(&format!("\n{kw_indent}elif isinstance({m}, {owner}):"));
        }
        for s in stmts {
            text.push_str(&format!("\n{body_indent}{s}"));
        }
    }
    let owners: Vec<String> = groups.iter().map(|(o, _)| format!("`{o}`")).collect();
    let moved: Vec<String> = attrs_done.iter().map(|a| format!("`{m}.{a}.` → `{m}.`")).collect();
    let said = format!("the branch on `{container}` keyed on {} ({})", owners.join(", "), moved.join(", "));
    Some((TextRange::new(test.start(), body.last()?.end()), text, said))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(src: &str) -> ParsedFile {
        ParsedFile::parse(PathBuf::from("t.py"), src).unwrap()
    }

    const MODULE: &str = "class Router(nn.Module):\n    def __init__(self):\n        self.weight = nn.Parameter(torch.zeros(2))\n\
class Experts(nn.Module):\n    def __init__(self):\n        self.gate_up_proj = nn.Parameter(torch.empty(2))\n\
class Block(nn.Module):\n    def __init__(self):\n        self.gate = Router()\n        self.experts = Experts()\n        self.lin = nn.Linear(2, 2)\n";

    fn rekeyed(method: &str) -> Option<String> {
        let m = module(MODULE);
        let parsed = ruff_python_parser::parse_module(method).unwrap();
        let Some(Stmt::FunctionDef(def)) = parsed.syntax().body.first() else { panic!() };
        let row = method.lines().position(|l| l.contains("Block)")).unwrap() + 1;
        let (r, text, _) = rekey(method, def, m.body(), row)?;
        let mut out = method.to_string();
        out.replace_range(r.start().to_usize()..r.end().to_usize(), &text);
        Some(out)
    }

    #[test]
    fn container_branches_move_to_their_owners() {
        let src = "def _init_weights(self, module):\n    super()._init_weights(module)\n    if isinstance(module, Other):\n        pass\n    elif isinstance(module, Block):\n        init.normal_(module.gate.weight, std=1)\n        init.normal_(module.experts.gate_up_proj, std=2)\n    x = 1\n";
        assert_eq!(
            rekeyed(src).unwrap(),
            "def _init_weights(self, module):\n    super()._init_weights(module)\n    if isinstance(module, Other):\n        pass\n    elif isinstance(module, Router):\n        init.normal_(module.weight, std=1)\n    elif isinstance(module, Experts):\n        init.normal_(module.gate_up_proj, std=2)\n    x = 1\n"
        );
    }

    #[test]
    fn what_cannot_be_rekeyed_is_left() {
        // A torch layer's tensor: no class of the module owns it.
        let lin = "def f(self, module):\n    if isinstance(module, Block):\n        init.normal_(module.lin.weight)\n";
        assert_eq!(rekeyed(lin), None);
        // The module itself used whole.
        let whole = "def f(self, module):\n    if isinstance(module, Block):\n        g(module)\n";
        assert_eq!(rekeyed(whole), None);
        // The owner is tested already.
        let tested = "def f(self, module):\n    if isinstance(module, Router):\n        pass\n    elif isinstance(module, Block):\n        init.normal_(module.gate.weight)\n";
        assert_eq!(rekeyed(tested), None);
    }
}
