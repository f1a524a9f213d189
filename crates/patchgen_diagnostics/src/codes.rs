//! The stable codes of the diagnostics the core commands report
//! (`generate`, `check`, `list`): generation warnings `PGW…`, notes
//! `PGI…`, failures `PGE…`, drift `PGD…`; and `survey`'s findings `PGS…`. A code is never reused or
//! renumbered once published; `docs/diagnostics.md` lists every one (a
//! test keeps that list and [`ALL`] equal). Lint rules (`PG1xx`…) have
//! their own registry.

use super::{Diagnostic, Severity};

/// A diagnostic kind: its code, kebab-case name, severity and one-line summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Code {
    pub code: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    pub summary: &'static str,
}

impl Code {
    /// A diagnostic of this kind.
    pub fn diagnostic(&self, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(self.code, self.name, self.severity, message)
    }
}

const fn code(code: &'static str, name: &'static str, severity: Severity, summary: &'static str) -> Code {
    Code { code, name, severity, summary }
}

use Severity::{Error, Info, Warning};

pub const MISSING_TARGET: Code = code(
    "PGW001",
    "missing-target",
    Warning,
    "a replace_class / replace_function / override_method target that is not in the upstream module: the patch does nothing",
);
pub const DUPLICATE_REGISTRATION: Code = code(
    "PGW002",
    "duplicate-registration",
    Warning,
    "the same target patched more than once: the last registration wins, placed where the first one was",
);
pub const NOOP_MODIFY_INIT: Code = code(
    "PGW003",
    "noop-modify-init",
    Warning,
    "modify_init is listed in the header but changes no code (as in the reference)",
);
pub const DISCARDED_DECORATOR: Code = code(
    "PGW004",
    "discarded-decorator",
    Warning,
    "a registration call without `replacement=` used as a statement: it returns a decorator, which is discarded",
);
pub const SOURCE_NOT_FOUND: Code = code(
    "PGW005",
    "source-not-found",
    Warning,
    "the source of a registered function or class cannot be found as `inspect` would find it",
);
pub const HELPER_WITHOUT_SOURCE: Code = code(
    "PGW006",
    "helper-without-source",
    Warning,
    "an add_helper argument that has no source: it is skipped (as in the reference)",
);
pub const CONFIG_WARNING: Code = code("PGW099", "config-warning", Warning, "any other finding of the config evaluator");
pub const INJECTED_METHOD: Code = code(
    "PGI001",
    "injected-method",
    Info,
    "override_method targets a method the upstream class does not define: the method is injected into the class",
);
pub const OPTIONAL_SKIPPED: Code = code(
    "PGI002",
    "optional-skipped",
    Info,
    "an `optional=True` config whose upstream module is not installed: `check` skips it",
);
pub const DIFF_FINAL_NEWLINES: Code = code(
    "PGI003",
    "diff-final-newlines",
    Info,
    "a checked-in `.diff` differs only in the newlines that end it (pre-commit's end-of-file-fixer): not drift, and `--fix` leaves it",
);
pub const CONFIG_ERROR: Code = code(
    "PGE001",
    "config-error",
    Error,
    "the config cannot be evaluated (syntax, a value not known statically, a DSL misuse, …)",
);
pub const NOT_A_CONFIG: Code =
    code("PGE002", "not-a-config", Error, "the named module has no `config` (or `-c NAME`) PatchConfig");
pub const UPSTREAM_NOT_FOUND: Code =
    code("PGE003", "upstream-not-found", Error, "the upstream `source_module` is not found");
pub const UPSTREAM_SYNTAX: Code =
    code("PGE004", "upstream-syntax", Error, "the upstream module cannot be read or parsed");
pub const CODEGEN_ERROR: Code =
    code("PGE005", "codegen-error", Error, "generation failed (e.g. a positioned helper's anchor is missing)");
pub const RUFF_ERROR: Code =
    code("PGE006", "ruff-error", Error, "ruff rejected or could not normalise the generated file");
pub const WRITE_ERROR: Code =
    code("PGE007", "write-error", Error, "a generated file cannot be read, compared or written");
pub const STRICT: Code = code("PGE008", "strict-warnings", Error, "warnings under `--strict`");
pub const PROJECT_ERROR: Code = code(
    "PGE009",
    "project-error",
    Error,
    "the command cannot start: no or an invalid [tool.patchgen], an invalid PATCHGEN_* value, ruff not found, …",
);
pub const COMMAND_FAILED: Code = code(
    "PGE010",
    "command-failed",
    Error,
    "the command ran and could not finish: a wheel or checkpoint it cannot read, a model that is not there, a conversion it refuses, a file it cannot write",
);
pub const UNRESOLVED_BUMP_CONFLICT: Code = code(
    "PGE011",
    "unresolved-bump-conflict",
    Error,
    "a config still holds the conflict markers `patchgen bump` wrote (`<<<<<<< config` … `>>>>>>> transformers B`): resolve them first",
);
pub const DRIFT: Code =
    code("PGD001", "drift", Error, "a checked-in generated file differs from what its config produces");

pub const SURVEY_SIGNATURE_CHANGED: Code = code(
    "PGS001",
    "signature-changed",
    Warning,
    "survey: a patch target's parameters changed between the two upstreams; adapt the patch before moving the pin",
);
pub const SURVEY_DECORATORS_CHANGED: Code = code(
    "PGS002",
    "decorators-changed",
    Warning,
    "survey: a patch target's decorators (or a class's bases) changed; check the replacement keeps what they do",
);
pub const SURVEY_REMOVED: Code = code(
    "PGS003",
    "target-removed",
    Warning,
    "survey: a patch target is gone from the new upstream; the patch would do nothing",
);
pub const SURVEY_NEW_UPSTREAM: Code = code(
    "PGS004",
    "new-upstream",
    Warning,
    "survey: a target the config adds is now defined upstream; the patch would replace it",
);
pub const SURVEY_MISSING_NAME: Code = code(
    "PGS005",
    "missing-name",
    Warning,
    "survey: a name the config's code uses is no longer defined or imported by the new upstream module",
);
pub const SURVEY_MISSING_ATTRIBUTE: Code = code(
    "PGS006",
    "missing-attribute",
    Warning,
    "survey: a `self.<attr>` an override reads is no longer set or defined by the new upstream class",
);
pub const SURVEY_BODY_CHANGED: Code = code(
    "PGS007",
    "body-changed",
    Warning,
    "survey: a patch target's code changed upstream (docstrings and comments aside); carry the change into the patch (`patchgen bump`)",
);
pub const SURVEY_FAILED: Code =
    code("PGS009", "survey-failed", Error, "survey: a config's source module cannot be surveyed in an upstream");

/// Every code, in documentation order.
pub const ALL: [Code; 30] = [
    MISSING_TARGET,
    DUPLICATE_REGISTRATION,
    NOOP_MODIFY_INIT,
    DISCARDED_DECORATOR,
    SOURCE_NOT_FOUND,
    HELPER_WITHOUT_SOURCE,
    CONFIG_WARNING,
    INJECTED_METHOD,
    OPTIONAL_SKIPPED,
    DIFF_FINAL_NEWLINES,
    CONFIG_ERROR,
    NOT_A_CONFIG,
    UPSTREAM_NOT_FOUND,
    UPSTREAM_SYNTAX,
    CODEGEN_ERROR,
    RUFF_ERROR,
    WRITE_ERROR,
    STRICT,
    PROJECT_ERROR,
    COMMAND_FAILED,
    UNRESOLVED_BUMP_CONFLICT,
    DRIFT,
    SURVEY_SIGNATURE_CHANGED,
    SURVEY_DECORATORS_CHANGED,
    SURVEY_REMOVED,
    SURVEY_NEW_UPSTREAM,
    SURVEY_MISSING_NAME,
    SURVEY_MISSING_ATTRIBUTE,
    SURVEY_BODY_CHANGED,
    SURVEY_FAILED,
];
