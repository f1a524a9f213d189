//! `PatchPlan`: everything codegen needs from one evaluated config, as plain
//! data. Produced by static evaluation (`config::evaluate`), consumed by the
//! pure `codegen::generate`.

use std::collections::BTreeSet;
use std::path::PathBuf;

/// A location in a file, for messages (`path:line`), and the range of the
/// node it was taken from, for a source excerpt (`patchgen_diagnostics`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    pub path: PathBuf,
    /// 1-based; 0 when the whole file is meant.
    pub line: usize,
    /// 1-based, in characters; 0 when no column is known (the whole line).
    pub column: usize,
    /// Where the node ends (line, exclusive column), when known.
    pub end: Option<(usize, usize)>,
}

impl Loc {
    /// A whole line (`line` 0: the whole file).
    pub fn line(path: impl Into<PathBuf>, line: usize) -> Loc {
        Loc { path: path.into(), line, column: 0, end: None }
    }

    /// This place as a diagnostic location (with its column and range when known).
    pub fn location(&self) -> patchgen_diagnostics::Location {
        patchgen_diagnostics::Location {
            path: self.path.clone(),
            line: self.line,
            column: if self.line > 0 { self.column } else { 0 },
            end: self.end.filter(|_| self.line > 0 && self.column > 0),
        }
    }
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.path.display())
        } else {
            write!(f, "{}:{}", self.path.display(), self.line)
        }
    }
}

/// The reference's `PatchType` enum; `value()` is what the header prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PatchType {
    ClassReplacement,
    MethodOverride,
    FunctionReplacement,
    AdditionalImport,
    InitModification,
}

impl PatchType {
    pub const ALL: [PatchType; 5] = [
        PatchType::ClassReplacement,
        PatchType::MethodOverride,
        PatchType::FunctionReplacement,
        PatchType::AdditionalImport,
        PatchType::InitModification,
    ];

    pub fn value(self) -> &'static str {
        match self {
            PatchType::ClassReplacement => "class_replacement",
            PatchType::MethodOverride => "method_override",
            PatchType::FunctionReplacement => "function_replacement",
            PatchType::AdditionalImport => "additional_import",
            PatchType::InitModification => "init_modification",
        }
    }

    /// The config DSL method that registers a patch of this type (`replace_class`).
    pub fn dsl_method(self) -> &'static str {
        match self {
            PatchType::ClassReplacement => "replace_class",
            PatchType::MethodOverride => "override_method",
            PatchType::FunctionReplacement => "replace_function",
            PatchType::AdditionalImport => "add_import",
            PatchType::InitModification => "modify_init",
        }
    }

    /// The enum member name (`PatchType.CLASS_REPLACEMENT`).
    pub fn member(self) -> &'static str {
        match self {
            PatchType::ClassReplacement => "CLASS_REPLACEMENT",
            PatchType::MethodOverride => "METHOD_OVERRIDE",
            PatchType::FunctionReplacement => "FUNCTION_REPLACEMENT",
            PatchType::AdditionalImport => "ADDITIONAL_IMPORT",
            PatchType::InitModification => "INIT_MODIFICATION",
        }
    }
}

impl SourceObject {
    /// The 1-based file line of `source`'s line `index` (0-based); 0 when unknown.
    pub fn line_of(&self, index: usize) -> usize {
        match (self.first_line, self.code_line) {
            (0, _) | (_, 0) => 0,
            (first, _) if index < self.leading => first + index,
            (_, code) => code + index - self.leading,
        }
    }
}

/// A class or function whose source text goes into the generated file:
/// the text is what `inspect.getsource` returns plus the column-0 comment
/// block above it (the reference's `get_object_source_with_leading_comments`).
#[derive(Clone, Debug)]
pub struct SourceObject {
    /// `__name__`.
    pub name: String,
    /// `__module__`: the dotted module the object was defined in.
    pub module: String,
    pub source: String,
    pub defined_at: Loc,
    /// Where `source`'s lines are in `defined_at.path`: the leading comment
    /// block's `leading` lines from line `first_line` (1-based), the rest
    /// from `code_line`; 0 when unknown.
    pub first_line: usize,
    pub leading: usize,
    pub code_line: usize,
    /// `textwrap.dedent(source)` is known to parse as a module holding a
    /// function definition: the source is a function statement of a parsed
    /// config file (see `source::ObjectSource`). `false` means not known.
    pub dedents_to_function: bool,
}

#[derive(Clone, Debug)]
pub struct Patch {
    pub patch_type: PatchType,
    pub target: String,
    pub replacement: Option<SourceObject>,
    pub source_module: Option<String>,
    pub description: Option<String>,
    pub replacement_source: Option<String>,
    /// In the dict's insertion order.
    pub name_map: Option<Vec<(String, String)>>,
    pub registered_at: Loc,
}

#[derive(Clone, Debug)]
pub struct ImportSpec {
    pub module: String,
    pub names: Option<Vec<String>>,
    pub alias: Option<String>,
    pub is_from_import: bool,
}

/// A helper as the generator will see it: `None` where the reference's
/// `inspect.getsource` fails and the helper is silently skipped.
#[derive(Clone, Debug)]
pub struct Helper {
    pub object: Option<SourceObject>,
}

#[derive(Clone, Debug)]
pub struct PositionedHelper {
    pub target: String,
    pub helper: Helper,
    pub placement: String,
}

/// One evaluated config.
#[derive(Clone, Debug)]
pub struct PatchPlan {
    /// Dotted module of the config file.
    pub config_module: String,
    pub config_path: PathBuf,
    /// Where the `PatchConfig(...)` call is (what a failure about the
    /// config as a whole points at).
    pub created_at: Loc,
    pub source_module: String,
    pub target_file: String,
    pub description: String,
    pub patches: Vec<Patch>,
    pub additional_imports: Vec<ImportSpec>,
    pub post_import_blocks: Vec<String>,
    pub helpers: Vec<Helper>,
    pub positioned_helpers: Vec<PositionedHelper>,
    pub drop_imported_names: BTreeSet<String>,
    pub exclude: Vec<String>,
    pub transformers_version: Option<String>,
    /// `optional=True`: a missing upstream module skips the config.
    pub optional: bool,
    /// Where the calls that added imports, blocks, dropped names and
    /// exclusions were made (for provenance).
    pub call_sites: CallSites,
}

/// Config locations of the plan's by-value parts (for provenance): one
/// entry per `additional_imports` and `post_import_blocks` element (the
/// `PatchConfig(...)` call when nothing better is known), and the
/// `drop_import_names` / `exclude_from_output` call of each name.
#[derive(Clone, Debug, Default)]
pub struct CallSites {
    pub imports: Vec<Loc>,
    pub blocks: Vec<Loc>,
    pub drops: Vec<(String, Loc)>,
    pub excludes: Vec<(String, Loc)>,
}

impl CallSites {
    /// Where name `name` was dropped or excluded (`excluded`).
    pub fn name_site(&self, name: &str, excluded: bool) -> Option<&Loc> {
        let list = if excluded { &self.excludes } else { &self.drops };
        list.iter().find(|(n, _)| n == name).map(|(_, l)| l)
    }
}
