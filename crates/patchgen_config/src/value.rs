//! The values static evaluation works with: a small model of the Python
//! objects a patch config builds, plus `Opaque` for everything it does not
//! model (torch, kernels, …) — fine to pass around, an error where the DSL
//! needs its value.

use std::cell::RefCell;
use std::rc::Rc;

use super::plan::{Loc, PatchType};
use super::source::DefObj;

pub type Shared<T> = Rc<RefCell<T>>;

pub fn shared<T>(v: T) -> Shared<T> {
    Rc::new(RefCell::new(v))
}

#[derive(Clone, Debug)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    List(Shared<Vec<Value>>),
    Tuple(Rc<Vec<Value>>),
    /// Insertion-ordered, as Python dicts are.
    Dict(Shared<Vec<(Value, Value)>>),
    Set(Shared<Vec<Value>>),
    Config(Shared<ConfigObj>),
    Patch(Shared<PatchObj>),
    ImportSpec(Shared<ImportSpecObj>),
    PositionedHelper(Shared<PositionedHelperObj>),
    /// A function or class defined in a module patchgen read.
    Def(Rc<DefObj>),
    /// An imported module, by dotted name.
    Module(Rc<str>),
    /// `from module import attr` (or `module.attr`) not looked at yet.
    Lazy(Rc<LazyRef>),
    Opaque(Rc<Opaque>),
    /// A name bound by a statement static evaluation cannot run.
    Unknown(Rc<Opaque>),
    Builtin(Builtin),
    /// A bound method of a modelled object (`config.add_import`, `lst.extend`).
    Method(Box<Value>, Rc<str>),
    /// What `config.replace_class("X")` and friends return: applied to a
    /// function or class, it registers the patch.
    Decorator(Rc<PendingDecorator>),
    PatchType(PatchType),
}

#[derive(Debug)]
pub struct LazyRef {
    pub module: String,
    pub attr: String,
    pub loc: Loc,
}

#[derive(Debug)]
pub struct Opaque {
    /// What the value is, for messages (`torch.no_grad(...)`).
    pub what: String,
    pub loc: Loc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    PatchConfig,
    PatchClass,
    ImportSpecClass,
    PositionedHelperClass,
    PatchTypeEnum,
    CreatePatchFromExternal,
    DeepCopy,
    ShallowCopy,
    Dedent,
    List,
    Tuple,
    Dict,
    Set,
    Str,
    Len,
    Sorted,
}

#[derive(Debug)]
pub struct PendingDecorator {
    pub config: Shared<ConfigObj>,
    pub kind: DecoratorKind,
    pub target: String,
    pub name_map: Option<Value>,
    pub description: Option<Value>,
    pub loc: Loc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecoratorKind {
    ReplaceClass,
    OverrideMethod,
    ReplaceFunction,
    ModifyInit,
    AddHelperAfter,
}

/// `PatchConfig`: its fields as Python values, so aliasing
/// (`config.helpers.extend(...)` on another config's list) behaves.
#[derive(Debug, Clone)]
pub struct ConfigObj {
    pub source_module: Value,
    pub target_file: Value,
    pub description: Value,
    pub patches: Value,
    pub additional_imports: Value,
    pub post_import_blocks: Value,
    pub helpers: Value,
    pub positioned_helpers: Value,
    pub drop_imported_names: Value,
    pub exclude: Value,
    pub transformers_version: Value,
    /// Skip (not fail) the config when its upstream module is missing.
    pub optional: Value,
    pub created_at: Loc,
    /// Where the DSL calls that add text by value were made (for
    /// provenance: `add_post_import_block`, `drop_import_names`,
    /// `exclude_from_output`), with the value each added.
    pub call_sites: ConfigCallSites,
}

/// `(value, call location)` of the config's by-value DSL calls, in call order.
#[derive(Debug, Clone, Default)]
pub struct ConfigCallSites {
    pub blocks: Vec<(String, Loc)>,
    pub drops: Vec<(String, Loc)>,
    pub excludes: Vec<(String, Loc)>,
}

pub const CONFIG_FIELDS: [&str; 12] = [
    "source_module",
    "target_file",
    "description",
    "patches",
    "additional_imports",
    "post_import_blocks",
    "helpers",
    "positioned_helpers",
    "drop_imported_names",
    "exclude",
    "transformers_version",
    "optional",
];

pub const CONFIG_METHODS: [&str; 14] = [
    "replace_class",
    "override_method",
    "replace_function",
    "modify_init",
    "add_import",
    "add_helper",
    "add_helper_after",
    "add_post_import_block",
    "drop_import_names",
    "exclude_from_output",
    "get_patches_for_target",
    "get_class_replacements",
    "get_method_overrides",
    "get_function_replacements",
];

impl ConfigObj {
    pub fn field(&self, name: &str) -> Option<&Value> {
        Some(match name {
            "source_module" => &self.source_module,
            "target_file" => &self.target_file,
            "description" => &self.description,
            "patches" => &self.patches,
            "additional_imports" => &self.additional_imports,
            "post_import_blocks" => &self.post_import_blocks,
            "helpers" => &self.helpers,
            "positioned_helpers" => &self.positioned_helpers,
            "drop_imported_names" => &self.drop_imported_names,
            "exclude" => &self.exclude,
            "transformers_version" => &self.transformers_version,
            "optional" => &self.optional,
            _ => return None,
        })
    }

    pub fn field_mut(&mut self, name: &str) -> Option<&mut Value> {
        Some(match name {
            "source_module" => &mut self.source_module,
            "target_file" => &mut self.target_file,
            "description" => &mut self.description,
            "patches" => &mut self.patches,
            "additional_imports" => &mut self.additional_imports,
            "post_import_blocks" => &mut self.post_import_blocks,
            "helpers" => &mut self.helpers,
            "positioned_helpers" => &mut self.positioned_helpers,
            "drop_imported_names" => &mut self.drop_imported_names,
            "exclude" => &mut self.exclude,
            "transformers_version" => &mut self.transformers_version,
            "optional" => &mut self.optional,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone)]
pub struct PatchObj {
    pub patch_type: Value,
    pub target: Value,
    pub replacement: Value,
    pub source_module: Value,
    pub description: Value,
    pub replacement_source: Value,
    pub name_map: Value,
    pub loc: Loc,
}

pub const PATCH_FIELDS: [&str; 7] =
    ["patch_type", "target", "replacement", "source_module", "description", "replacement_source", "name_map"];

impl PatchObj {
    pub fn field_mut(&mut self, name: &str) -> Option<&mut Value> {
        Some(match name {
            "patch_type" => &mut self.patch_type,
            "target" => &mut self.target,
            "replacement" => &mut self.replacement,
            "source_module" => &mut self.source_module,
            "description" => &mut self.description,
            "replacement_source" => &mut self.replacement_source,
            "name_map" => &mut self.name_map,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone)]
pub struct ImportSpecObj {
    pub module: Value,
    pub names: Value,
    pub alias: Value,
    pub is_from_import: Value,
    /// The `add_import(...)` or `ImportSpec(...)` call that made it.
    pub loc: Loc,
}

pub const IMPORT_SPEC_FIELDS: [&str; 4] = ["module", "names", "alias", "is_from_import"];

#[derive(Debug, Clone)]
pub struct PositionedHelperObj {
    pub target: Value,
    pub helper: Value,
    pub placement: Value,
}

pub const POSITIONED_HELPER_FIELDS: [&str; 3] = ["target", "helper", "placement"];

impl Value {
    pub fn str(s: &str) -> Value {
        Value::Str(Rc::from(s))
    }

    pub fn list(items: Vec<Value>) -> Value {
        Value::List(shared(items))
    }

    /// Code patchgen does not run could change the config through this
    /// value: a config or patch, or a container that may hold one.
    pub fn can_reach_config(&self) -> bool {
        matches!(self, Value::Config(_) | Value::List(_) | Value::Dict(_) | Value::Set(_) | Value::Patch(_))
    }

    /// A short description of the value's type, for messages.
    pub fn type_name(&self) -> String {
        match self {
            Value::None => "None".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Float(_) => "float".into(),
            Value::Str(_) => "str".into(),
            Value::List(_) => "list".into(),
            Value::Tuple(_) => "tuple".into(),
            Value::Dict(_) => "dict".into(),
            Value::Set(_) => "set".into(),
            Value::Config(_) => "PatchConfig".into(),
            Value::Patch(_) => "Patch".into(),
            Value::ImportSpec(_) => "ImportSpec".into(),
            Value::PositionedHelper(_) => "PositionedHelper".into(),
            Value::Def(d) => {
                if d.is_class {
                    format!("class {}", d.name)
                } else {
                    format!("function {}", d.name)
                }
            }
            Value::Module(m) => format!("module {m}"),
            Value::Lazy(l) => format!("{}.{}", l.module, l.attr),
            Value::Opaque(o) => o.what.clone(),
            Value::Unknown(o) => o.what.clone(),
            Value::Builtin(b) => format!("{b:?}"),
            Value::Method(_, m) => format!("method {m}"),
            Value::Decorator(_) => "patch decorator".into(),
            Value::PatchType(p) => format!("PatchType.{}", p.member()),
        }
    }

    /// Python truthiness, where it can be known.
    pub fn truthy(&self) -> Option<bool> {
        Some(match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.borrow().is_empty(),
            Value::Tuple(t) => !t.is_empty(),
            Value::Dict(d) => !d.borrow().is_empty(),
            Value::Set(s) => !s.borrow().is_empty(),
            Value::Opaque(_) | Value::Unknown(_) | Value::Lazy(_) => return None,
            _ => true,
        })
    }

    /// Python `==` where it can be known (`None` past a nesting depth,
    /// where Python raises `RecursionError`).
    pub fn py_eq(&self, other: &Value) -> Option<bool> {
        self.py_eq_depth(other, 0)
    }

    fn py_eq_depth(&self, other: &Value, depth: usize) -> Option<bool> {
        if depth > MAX_COMPARE_DEPTH {
            return None;
        }
        Some(match (self, other) {
            (Value::None, Value::None) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Bool(a), Value::Int(b)) | (Value::Int(b), Value::Bool(a)) => (*a as i64) == *b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Int(a), Value::Float(b)) | (Value::Float(b), Value::Int(a)) => (*a as f64) == *b,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::List(a), Value::List(b)) => Rc::ptr_eq(a, b) || seq_eq(&a.borrow(), &b.borrow(), depth)?,
            (Value::Tuple(a), Value::Tuple(b)) => Rc::ptr_eq(a, b) || seq_eq(a, b, depth)?,
            (Value::Def(a), Value::Def(b)) => Rc::ptr_eq(a, b),
            (Value::Config(a), Value::Config(b)) => Rc::ptr_eq(a, b),
            (Value::PatchType(a), Value::PatchType(b)) => a == b,
            (Value::Opaque(_) | Value::Unknown(_) | Value::Lazy(_), _)
            | (_, Value::Opaque(_) | Value::Unknown(_) | Value::Lazy(_)) => return None,
            _ => false,
        })
    }

    /// Python's `x is y or x == y` (what `in`, `index` and `remove` use).
    pub fn py_same_or_eq(&self, other: &Value) -> Option<bool> {
        if self.py_is(other) == Some(true) {
            return Some(true);
        }
        self.py_eq(other)
    }

    /// Python `is` where it can be known.
    pub fn py_is(&self, other: &Value) -> Option<bool> {
        Some(match (self, other) {
            (Value::None, Value::None) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::List(a), Value::List(b)) => Rc::ptr_eq(a, b),
            (Value::Dict(a), Value::Dict(b)) => Rc::ptr_eq(a, b),
            (Value::Set(a), Value::Set(b)) => Rc::ptr_eq(a, b),
            (Value::Config(a), Value::Config(b)) => Rc::ptr_eq(a, b),
            (Value::Def(a), Value::Def(b)) => Rc::ptr_eq(a, b),
            (Value::Opaque(_) | Value::Unknown(_) | Value::Lazy(_), _)
            | (_, Value::Opaque(_) | Value::Unknown(_) | Value::Lazy(_)) => return None,
            _ => false,
        })
    }

    pub fn is_hashable_known(&self) -> bool {
        matches!(self, Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::Tuple(_))
    }
}

/// Nesting depth past which comparisons give up.
const MAX_COMPARE_DEPTH: usize = 100;

/// Largest string, list or tuple evaluation builds (bytes or items).
pub const MAX_VALUE_SIZE: usize = 10_000_000;

fn seq_eq(a: &[Value], b: &[Value], depth: usize) -> Option<bool> {
    if a.len() != b.len() {
        return Some(false);
    }
    for (x, y) in a.iter().zip(b) {
        let same = x.py_is(y) == Some(true) || x.py_eq_depth(y, depth + 1)?;
        if !same {
            return Some(false);
        }
    }
    Some(true)
}

/// Deep copy as `copy.deepcopy` does for these types: containers and DSL
/// objects are copied, functions, classes, modules and opaque values are
/// shared (deepcopy treats functions and classes as atomic).
pub fn deep_copy(v: &Value, memo: &mut Vec<(usize, Value)>) -> Value {
    fn key<T>(rc: &Rc<T>) -> usize {
        Rc::as_ptr(rc) as *const u8 as usize
    }
    macro_rules! memo_get {
        ($rc:expr) => {
            if let Some((_, v)) = memo.iter().find(|(k, _)| *k == key($rc)) {
                return v.clone();
            }
        };
    }
    match v {
        Value::List(l) => {
            memo_get!(l);
            let new = shared(Vec::new());
            memo.push((key(l), Value::List(new.clone())));
            let items: Vec<Value> = l.borrow().iter().map(|x| deep_copy(x, memo)).collect();
            *new.borrow_mut() = items;
            Value::List(new)
        }
        Value::Set(l) => {
            memo_get!(l);
            let new = shared(Vec::new());
            memo.push((key(l), Value::Set(new.clone())));
            let items: Vec<Value> = l.borrow().iter().map(|x| deep_copy(x, memo)).collect();
            *new.borrow_mut() = items;
            Value::Set(new)
        }
        Value::Tuple(t) => Value::Tuple(Rc::new(t.iter().map(|x| deep_copy(x, memo)).collect())),
        Value::Dict(d) => {
            memo_get!(d);
            let new = shared(Vec::new());
            memo.push((key(d), Value::Dict(new.clone())));
            let items: Vec<(Value, Value)> =
                d.borrow().iter().map(|(k, v)| (deep_copy(k, memo), deep_copy(v, memo))).collect();
            *new.borrow_mut() = items;
            Value::Dict(new)
        }
        Value::Config(c) => {
            memo_get!(c);
            // Record the copy before copying the fields: a config may contain itself.
            let old = c.borrow().clone();
            let new = shared(old.clone());
            memo.push((key(c), Value::Config(new.clone())));
            for name in CONFIG_FIELDS {
                let copied = deep_copy(old.field(name).expect("known field"), memo);
                *new.borrow_mut().field_mut(name).expect("known field") = copied;
            }
            Value::Config(new)
        }
        Value::Patch(p) => {
            memo_get!(p);
            let old = p.borrow().clone();
            let new = shared(old.clone());
            memo.push((key(p), Value::Patch(new.clone())));
            let target = deep_copy(&old.target, memo);
            let name_map = deep_copy(&old.name_map, memo);
            let description = deep_copy(&old.description, memo);
            {
                let mut n = new.borrow_mut();
                n.target = target;
                n.name_map = name_map;
                n.description = description;
            }
            Value::Patch(new)
        }
        Value::ImportSpec(s) => {
            let mut copy = s.borrow().clone();
            copy.names = deep_copy(&copy.names, memo);
            Value::ImportSpec(shared(copy))
        }
        Value::PositionedHelper(h) => Value::PositionedHelper(shared(h.borrow().clone())),
        other => other.clone(),
    }
}
