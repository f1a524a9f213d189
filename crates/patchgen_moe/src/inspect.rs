//! `patchgen moe inspect`: from headers and `config.json` only, per expert
//! module: the layout family, completeness against the config's dims,
//! ambiguity, the upstream recipe for the model type, and (inside a patchgen
//! project) whether the project's generated class has fused experts and the
//! model package registers a checkpoint converter. Returns a report; the
//! printer is `report`.

use std::path::{Path, PathBuf};

use ruff_python_ast::{Expr, Stmt};
use serde::Serialize;

use super::checkpoint::Checkpoint;
use super::config::MoeDims;
use super::layout::{Family, Group, groups, ranges};
use super::modeling::{FusedExperts, fused_expert_classes};
use super::recipes::{ExpertNaming, RecipeKind, Recipes};

/// Where the upstream recipes come from.
pub enum UpstreamArg {
    /// `--upstream DIR|WHEEL|VERSION`, resolved by the caller.
    Given(patchgen_core::survey::source::Upstream),
    /// Look for `transformers` on PYTHONPATH / the virtualenv of this environment.
    FromEnv(patchgen_core::settings::Env),
}

#[derive(Serialize)]
pub struct RecipeFact {
    pub version: String,
    pub origin: PathBuf,
    pub model_type: String,
    pub kind: RecipeKind,
    pub label: String,
    pub alias_of: Option<String>,
}

#[derive(Serialize)]
pub struct GeneratedFile {
    pub path: PathBuf,
    pub fused: Vec<FusedExperts>,
}

#[derive(Serialize)]
pub struct ProjectFacts {
    pub package_dir: PathBuf,
    pub generated: Vec<GeneratedFile>,
    /// `__init__.py` assigns `_create_checkpoint_tensor_converter`.
    pub converter: Option<PathBuf>,
}

/// Expert modules of one stack with one family, summarised.
#[derive(Serialize)]
pub struct StackSummary {
    /// `model.layers.*.mlp.experts`.
    pub pattern: String,
    pub family: String,
    pub family_letter: String,
    pub layers: String,
    pub experts: Vec<u64>,
    pub dtypes: Vec<String>,
    pub quantised: Vec<String>,
}

#[derive(Serialize)]
pub struct InspectReport {
    pub checkpoint: PathBuf,
    pub shards: usize,
    pub tensors: usize,
    pub total_bytes: u64,
    pub config: Option<MoeDims>,
    pub stacks: Vec<StackSummary>,
    pub groups: Vec<Group>,
    /// Layers the config expects experts in but that have none, and the reverse.
    pub layer_problems: Vec<String>,
    pub recipe: Option<RecipeFact>,
    /// Why there is no recipe fact.
    pub recipe_note: Option<String>,
    pub project: Option<ProjectFacts>,
    /// What loads this checkpoint, in sentences.
    pub verdict: Vec<Verdict>,
    /// Bytes fetched from a remote checkpoint (headers, index, config.json).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_read: Option<u64>,
    /// A line on the transfer, printed by the text form (`-v`).
    #[serde(skip)]
    pub transfer_note: Option<String>,
    /// The findings as diagnostics (printed by the printer's JSON/github forms).
    #[serde(skip)]
    pub diagnostics: Vec<patchgen_diagnostics::Diagnostic>,
}

impl InspectReport {
    pub fn has_problems(&self) -> bool {
        !self.layer_problems.is_empty() || self.groups.iter().any(|g| !g.problems.is_empty())
    }
}

pub fn inspect(
    checkpoint: &Path,
    config: Option<&Path>,
    upstream: UpstreamArg,
    cwd: &Path,
) -> Result<InspectReport, crate::error::MoeError> {
    let ck = Checkpoint::open(checkpoint)?;
    let config_path = match config {
        Some(c) => Some(c.to_path_buf()),
        None => Some(ck.dir.join("config.json")).filter(|p| p.is_file()),
    };
    let dims = config_path.as_deref().map(MoeDims::load).transpose()?;
    let report = report(checkpoint.to_path_buf(), &ck, dims, upstream, cwd);
    // Freeing 100k tensors' strings takes as long as grouping them: done
    // off the path to the printer (a command exits without waiting for it).
    std::thread::spawn(move || drop(ck));
    Ok(report)
}

/// The report on an opened checkpoint (local or remote), named `checkpoint`.
pub fn report(
    checkpoint: PathBuf,
    ck: &Checkpoint,
    dims: Option<MoeDims>,
    upstream: UpstreamArg,
    cwd: &Path,
) -> InspectReport {
    let groups = groups(ck, dims.as_ref());

    // Layers vs config.
    let mut layer_problems = Vec::new();
    if let Some(moe) = dims.as_ref().and_then(MoeDims::moe_layers) {
        let mut stacks: Vec<(&str, &str)> = groups.iter().map(|g| (g.stack.as_str(), g.module.as_str())).collect();
        stacks.dedup();
        for (stack, module) in stacks {
            let have: Vec<u64> =
                groups.iter().filter(|g| g.stack == stack && g.module == module).filter_map(|g| g.layer).collect();
            let missing: Vec<u64> = moe.iter().copied().filter(|l| !have.contains(l)).collect();
            let extra: Vec<u64> = have.iter().copied().filter(|l| !moe.contains(l)).collect();
            let rule = dims.as_ref().and_then(|d| d.dense_rule.clone()).unwrap_or_else(|| "num_hidden_layers".into());
            if !missing.is_empty() {
                layer_problems.push(format!(
                    "{stack}.*.{module}.experts: no experts in layer(s) {} that config.json makes MoE layers ({rule})",
                    ranges(&missing)
                ));
            }
            if !extra.is_empty() {
                layer_problems.push(format!(
                    "{stack}.*.{module}.experts: experts in layer(s) {} that config.json makes dense ({rule})",
                    ranges(&extra)
                ));
            }
        }
    }

    let stacks = summarise(&groups);
    let model_type = dims.as_ref().and_then(|d| d.recipe_model_type().map(str::to_string));

    // The recipe.
    let (recipe, recipe_note) = match (&model_type, upstream) {
        (None, _) => (None, Some("no model_type (no config.json): pass --config".to_string())),
        (Some(mt), UpstreamArg::Given(u)) => match Recipes::load(&u.search) {
            Ok(r) => (Some(fact(&r, mt, &u.version)), None),
            Err(e) => (None, Some(e.to_string())),
        },
        (Some(mt), UpstreamArg::FromEnv(env)) => {
            let root = patchgen_core::project::Project::find(cwd).map(|p| p.root).unwrap_or_else(|_| cwd.to_path_buf());
            let search = patchgen_core::upstream::SearchPath::from_env(&env, &root, cwd, cwd);
            match Recipes::load(&search) {
                Ok(r) => (Some(fact(&r, mt, &search.transformers_version())), None),
                Err(_) => (
                    None,
                    Some(
                        "no transformers on PYTHONPATH or in the virtualenv: pass --upstream DIR|WHEEL|VERSION".into(),
                    ),
                ),
            }
        }
    };

    let project = model_type.as_deref().and_then(|mt| project_facts(cwd, mt, dims.as_ref()));
    let verdict = verdict(&groups, recipe.as_ref(), project.as_ref());
    let at = ck.index.clone().unwrap_or_else(|| ck.shards[0].path.clone());
    let mut report = InspectReport {
        checkpoint,
        shards: ck.shards.len(),
        tensors: ck.tensor_count(),
        total_bytes: ck.total_bytes(),
        config: dims,
        stacks,
        groups,
        layer_problems,
        recipe,
        recipe_note,
        project,
        verdict,
        bytes_read: None,
        transfer_note: None,
        diagnostics: Vec::new(),
    };
    report.diagnostics = super::diagnostics_of(&report, &at);
    report
}

fn fact(r: &Recipes, model_type: &str, version: &str) -> RecipeFact {
    let kind = r.checkpoint_layout_need(model_type);
    RecipeFact {
        version: version.to_string(),
        origin: r.origin.clone(),
        model_type: model_type.to_string(),
        label: kind.label(),
        kind,
        alias_of: r.recipe(model_type).and_then(|x| x.alias_of.clone()),
    }
}

fn summarise(groups: &[Group]) -> Vec<StackSummary> {
    let mut out: Vec<StackSummary> = Vec::new();
    let mut i = 0;
    while i < groups.len() {
        let g = &groups[i];
        let mut j = i;
        while j < groups.len()
            && groups[j].stack == g.stack
            && groups[j].module == g.module
            && groups[j].family == g.family
        {
            j += 1;
        }
        let run = &groups[i..j];
        let layers: Vec<u64> = run.iter().filter_map(|g| g.layer).collect();
        let mut experts: Vec<u64> = run.iter().map(|g| g.experts).collect();
        experts.sort();
        experts.dedup();
        let mut dtypes: Vec<String> = run.iter().flat_map(|g| g.dtypes.clone()).collect();
        dtypes.sort();
        dtypes.dedup();
        let mut quantised: Vec<String> = run.iter().flat_map(|g| g.quantised.clone()).collect();
        quantised.sort();
        quantised.dedup();
        let pattern = if g.layer.is_some() {
            format!("{}.*.{}.experts", g.stack, g.module).replace("..", ".")
        } else {
            format!("{}.experts", g.prefix)
        };
        out.push(StackSummary {
            pattern,
            family: g.family.describe().to_string(),
            family_letter: g.family.letter().to_string(),
            layers: ranges(&layers),
            experts,
            dtypes,
            quantised,
        });
        i = j;
    }
    out
}

/// The model package of `model_type` in the project around `cwd`: a
/// directory named for it under `search_root` holding `generated/`.
fn project_facts(cwd: &Path, model_type: &str, dims: Option<&MoeDims>) -> Option<ProjectFacts> {
    let project = patchgen_core::project::Project::find(cwd).ok()?;
    let mut names = vec![model_type.to_string()];
    if let Some(t) = dims.and_then(|d| d.text_model_type.clone()) {
        names.push(t);
    }
    let dir = find_dir(&project.settings.search_root, &names, 6)?;
    let mut generated = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir.join("generated")) {
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|e| e == "py")
                    && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("patched_modeling_"))
            })
            .collect();
        files.sort();
        // Bounded as every file patchgen reads (a FIFO or a 1 GB file is skipped).
        let limit = patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE;
        for f in files {
            let text = patchgen_cache::bounded::read_to_string(&f, limit).unwrap_or_default();
            generated.push(GeneratedFile { fused: fused_expert_classes(&text).unwrap_or_default(), path: f });
        }
    }
    let init = dir.join("__init__.py");
    let converter = patchgen_cache::bounded::read_to_string(&init, patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE)
        .ok()
        .filter(|t| assigns_converter(t))
        .map(|_| init);
    Some(ProjectFacts { package_dir: dir, generated, converter })
}

fn find_dir(root: &Path, names: &[String], depth: usize) -> Option<PathBuf> {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(root).ok()?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
    entries.sort();
    for e in &entries {
        if e.file_name().is_some_and(|n| names.iter().any(|m| n == m.as_str())) && e.join("generated").is_dir() {
            return Some(e.clone());
        }
    }
    if depth == 0 {
        return None;
    }
    entries.iter().find_map(|e| find_dir(e, names, depth - 1))
}

/// `_create_checkpoint_tensor_converter` is assigned or defined at module level.
pub fn assigns_converter(text: &str) -> bool {
    const NAME: &str = "_create_checkpoint_tensor_converter";
    let Ok(parsed) = ruff_python_parser::parse_module(text) else { return false };
    let names = |e: &Expr| match e {
        Expr::Name(n) => n.id.as_str() == NAME,
        Expr::Attribute(a) => a.attr.as_str() == NAME,
        _ => false,
    };
    parsed.syntax().body.iter().any(|s| match s {
        Stmt::Assign(a) => a.targets.iter().any(names),
        Stmt::AnnAssign(a) => names(&a.target),
        Stmt::FunctionDef(f) => f.name.as_str() == NAME,
        Stmt::ImportFrom(i) => i.names.iter().any(|a| a.asname.as_ref().unwrap_or(&a.name).as_str() == NAME),
        _ => false,
    })
}

/// One sentence of the verdict, and whether it says expert keys would
/// not load (random experts: `PGM003`). Serialised as its sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub text: String,
    pub not_loaded: bool,
}

impl Verdict {
    fn info(text: impl Into<String>) -> Verdict {
        Verdict { text: text.into(), not_loaded: false }
    }

    fn not_loaded(text: impl Into<String>) -> Verdict {
        Verdict { text: text.into(), not_loaded: true }
    }
}

impl Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

fn verdict(groups: &[Group], recipe: Option<&RecipeFact>, project: Option<&ProjectFacts>) -> Vec<Verdict> {
    let mut out = Vec::new();
    if groups.is_empty() {
        out.push(Verdict::info(
            "no routed experts in this checkpoint (no `<prefix>.experts.` tensors): nothing to convert",
        ));
        return out;
    }
    let mut families: Vec<Family> = groups.iter().map(|g| g.family).collect();
    families.sort();
    families.dedup();
    let ambiguous = groups.iter().any(|g| !g.ambiguous.is_empty());
    if ambiguous {
        out.push(Verdict::info("some fused tensors are square per expert: their layout cannot be told by shape; converters must be told (`moe convert --source-layout`), never guess"));
    }
    if let Some(r) = recipe {
        for f in &families {
            let line = match (&r.kind, f) {
                (RecipeKind::PerExpert { naming }, Family::PerExpert | Family::Mixtral) => {
                    let matches = matches!(
                        (naming, f),
                        (ExpertNaming::GateUpDown, Family::PerExpert) | (ExpertNaming::W1W3W2, Family::Mixtral)
                    );
                    if matches {
                        Verdict::info(format!(
                            "transformers {} stacks these per-expert keys at load (recipe {})",
                            r.version, r.label
                        ))
                    } else {
                        Verdict::not_loaded(format!(
                            "the recipe ({}) names expert keys differently from this checkpoint ({}): they will not load",
                            r.label,
                            f.describe()
                        ))
                    }
                }
                (RecipeKind::PerExpert { .. }, Family::Fused) => Verdict::info(format!(
                    "already fused (v5): transformers {}'s per-expert recipe matches nothing and the keys load as they are",
                    r.version
                )),
                (RecipeKind::FusedTransposed, Family::FusedTransposed) => {
                    Verdict::info(format!("transformers {} transposes these at load (recipe {})", r.version, r.label))
                }
                (RecipeKind::FusedTransposed, Family::Fused) => Verdict::info(
                    "fused v5: the Transpose recipe leaves tensors that already have the parameter's shape alone",
                ),
                (RecipeKind::Direct, Family::Fused | Family::GptOss) => {
                    Verdict::info(format!("no recipe in transformers {}: the keys load as they are", r.version))
                }
                (
                    RecipeKind::Direct,
                    Family::PerExpert | Family::Mixtral | Family::LegacyStacked | Family::FusedTransposed,
                ) => Verdict::not_loaded(format!(
                    "transformers {} has no recipe for {}: these {} keys would not load (missing keys, random experts): convert with `patchgen moe convert`, or register a converter",
                    r.version,
                    r.model_type,
                    f.letter()
                )),
                (_, Family::FusedUndecided) => {
                    Verdict::info("fused, transposed or not: decide from the model's source before loading")
                }
                (_, Family::LegacyStacked) => Verdict::info(
                    "legacy stacked (family D): neither HF nor VeOmni loads it; `patchgen moe convert --to fused`",
                ),
                (kind, f) => {
                    Verdict::info(format!("recipe {} on a {} checkpoint: check by hand", kind.label(), f.describe()))
                }
            };
            out.push(line);
        }
    }
    if let Some(p) = project {
        let fused: Vec<&FusedExperts> = p.generated.iter().flat_map(|g| g.fused.iter()).collect();
        if !fused.is_empty() {
            let needs = families.iter().any(|f| !matches!(f, Family::Fused | Family::GptOss));
            match (&p.converter, needs) {
                (Some(init), true) => out.push(Verdict::info(format!(
                    "the project's generated {} has fused experts and {} registers a converter: VeOmni converts at load",
                    fused[0].class,
                    init.display()
                ))),
                (None, true) => out.push(Verdict::not_loaded(format!(
                    "the project's generated {} has fused experts but {}/__init__.py registers no `_create_checkpoint_tensor_converter`: VeOmni would load random experts (only INFO logs)",
                    fused[0].class,
                    p.package_dir.display()
                ))),
                (_, false) => out.push(Verdict::info(format!(
                    "the project's generated {} has fused experts: this checkpoint already matches them",
                    fused[0].class
                ))),
            }
        }
    }
    out
}
