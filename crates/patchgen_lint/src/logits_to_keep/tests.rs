//! PG301's analysis and fix on small forwards.

use super::*;
use crate::fix::apply;
use patchgen_python::pysource::ParsedFile;
use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;
use std::path::PathBuf;

fn run(src: &str, upstream: Option<bool>) -> (ParsedFile, Vec<Problem>) {
    let file = ParsedFile::parse(PathBuf::from("c.py"), src).expect("parses");
    let problems = {
        let Stmt::FunctionDef(f) = file.body().iter().rev().find(|s| matches!(s, Stmt::FunctionDef(_))).unwrap() else {
            unreachable!()
        };
        analyze(f, upstream)
    };
    (file, problems)
}

/// The text a range covers.
fn text(file: &ParsedFile, r: TextRange) -> &str {
    &file.text[r]
}

fn loss_before_slice(src: &str) -> Option<(String, String)> {
    let (file, problems) = run(src, Some(true));
    problems.iter().find_map(|p| match p {
        Problem::LossBeforeSlice { call, argument, .. } => {
            Some((text(&file, *call).to_string(), text(&file, *argument).to_string()))
        }
        Problem::MissingParameter => None,
    })
}

const VEOMNI_D977_SHAPE: &str = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    outputs = self.model(input_ids=input_ids, **kwargs)
    hidden_states = outputs.last_hidden_state
    slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
    loss = None
    logits = None
    if labels is not None:
        if veomni_causal_lm_loss.use_non_eager_impl:
            loss, logits, aux = veomni_causal_lm_loss(logits=logits, labels=labels, hidden_states=hidden_states, weights=self.lm_head.weight, **kwargs)
        else:
            logits = self.lm_head(hidden_states)
            loss, _, aux = self.loss_function(logits=logits, labels=labels, hidden_states=hidden_states, **kwargs)
    else:
        logits = self.lm_head(hidden_states[:, slice_indices, :])
    return Out(loss=loss, logits=logits)
"#;

#[test]
fn slice_only_in_the_no_labels_branch_fires_on_the_first_loss_call() {
    assert_eq!(
        loss_before_slice(VEOMNI_D977_SHAPE),
        Some(("veomni_causal_lm_loss".to_string(), "hidden_states".to_string()))
    );
}

#[test]
fn slice_first_is_clean() {
    let fixed = VEOMNI_D977_SHAPE
        .replace("    loss = None\n", "    hidden_states = hidden_states[:, slice_indices, :]\n    loss = None\n");
    assert_eq!(loss_before_slice(&fixed), None);
}

#[test]
fn upstream_shape_is_clean() {
    let src = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    outputs = self.model(input_ids=input_ids, **kwargs)
    hidden_states = outputs.last_hidden_state
    slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
    logits = self.lm_head(hidden_states[:, slice_indices, :])
    loss = None
    if labels is not None:
        loss = self.loss_function(logits=logits, labels=labels, vocab_size=self.config.vocab_size, **kwargs)
    return Out(loss=loss, logits=logits)
"#;
    assert_eq!(loss_before_slice(src), None);
}

#[test]
fn renamed_variables_and_inline_keep() {
    // No `slice_indices` local, the hidden states called `h`, the loss a
    // differently named helper, positional arguments.
    let src = r#"
def fwd(self, ids=None, labels=None, logits_to_keep: int = 0, **kw):
    h = self.model(ids, **kw)[0]
    if labels is not None:
        loss = my_fused_loss(h, self.lm_head.weight, labels)
        logits = None
    else:
        loss = None
        logits = self.lm_head(h[:, -logits_to_keep:, :])
    return loss, logits
"#;
    assert_eq!(loss_before_slice(src), Some(("my_fused_loss".to_string(), "h".to_string())));
}

#[test]
fn slicing_logits_but_feeding_unsliced_hidden_states_fires() {
    let src = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    hidden_states = self.model(input_ids).last_hidden_state
    keep = slice(-logits_to_keep, None)
    logits = self.lm_head(hidden_states[:, keep, :])
    if labels is not None:
        loss = self.loss_function(logits=logits, labels=labels, hidden_states=hidden_states)
    return logits
"#;
    assert_eq!(loss_before_slice(src), Some(("self.loss_function".to_string(), "hidden_states".to_string())));
}

#[test]
fn slicing_guarded_by_keep_counts_as_applied() {
    let src = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    hidden_states = self.model(input_ids).last_hidden_state
    if logits_to_keep:
        hidden_states = hidden_states[:, -logits_to_keep:, :]
    loss = self.loss_function(hidden_states=hidden_states, labels=labels)
    return loss
"#;
    assert_eq!(loss_before_slice(src), None);
}

#[test]
fn slicing_in_an_unrelated_branch_before_the_loss_fires() {
    let src = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    hidden_states = self.model(input_ids).last_hidden_state
    if self.training:
        hidden_states = hidden_states[:, -logits_to_keep:, :]
    loss = self.loss_function(hidden_states=hidden_states, labels=labels)
    return loss
"#;
    assert_eq!(loss_before_slice(src), Some(("self.loss_function".to_string(), "hidden_states".to_string())));
}

#[test]
fn attribute_base_and_load_balancing_loss() {
    // The slice is taken on `outputs.last_hidden_state` directly; the
    // router loss on unsliced router logits is not a token loss.
    let src = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    outputs = self.model(input_ids)
    aux = load_balancing_loss_func(outputs.last_hidden_state, 4)
    hs = outputs.last_hidden_state[:, slice(-logits_to_keep, None), :]
    loss = self.loss_function(hidden_states=hs, labels=labels)
    return loss
"#;
    assert_eq!(loss_before_slice(src), None);
    let bad = src.replace("hidden_states=hs", "hidden_states=outputs.last_hidden_state");
    assert_eq!(
        loss_before_slice(&bad),
        Some(("self.loss_function".to_string(), "outputs.last_hidden_state".to_string()))
    );
}

#[test]
fn missing_parameter_only_when_upstream_has_it() {
    let src =
        "def forward(self, input_ids=None, labels=None, **kwargs):\n    return self.loss_function(labels=labels)\n";
    assert_eq!(run(src, Some(true)).1, vec![Problem::MissingParameter]);
    assert_eq!(run(src, Some(false)).1, vec![]);
    assert_eq!(run(src, None).1, vec![]);
}

/// The python block after `heading` in the rule's documentation.
fn doc_block(heading: &str) -> String {
    let doc: String = crate::rule("PG301")
        .expect("PG301 is a rule")
        .doc
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let rest = &doc[doc.find(heading).expect("heading") + heading.len()..];
    let start = rest.find("```python\n").expect("a python block") + "```python\n".len();
    rest[start..start + rest[start..].find("```").unwrap()].to_string()
}

fn fixed(src: &str) -> Option<String> {
    fixed_function_source(src).map(|(text, _)| text)
}

#[test]
fn the_fix_turns_the_doc_example_into_use_instead() {
    let example = doc_block("## Example");
    let (text, fix) = fixed_function_source(&example).expect("a fix");
    assert_eq!(text, doc_block("## Use instead"));
    assert_eq!((fix.var.as_str(), fix.index.as_str()), ("hidden_states", ":, slice_indices, :"));
    assert!(fix.after.starts_with("slice_indices = slice(-logits_to_keep, None)"), "{}", fix.after);
    assert!(fix.help().contains("insert `hidden_states = hidden_states[:, slice_indices, :]` right after"));
}

/// What `fix` must make of `VEOMNI_D977_SHAPE`, written by hand.
const VEOMNI_D977_SHAPE_FIXED: &str = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    outputs = self.model(input_ids=input_ids, **kwargs)
    hidden_states = outputs.last_hidden_state
    slice_indices = (
        slice(-logits_to_keep, None) if isinstance(logits_to_keep, int)
        else logits_to_keep
    )
    hidden_states = hidden_states[:, slice_indices, :]
    loss = None
    logits = None
    if labels is not None:
        if veomni_causal_lm_loss.use_non_eager_impl:
            loss, logits, aux = veomni_causal_lm_loss(
                logits=logits, labels=labels, hidden_states=hidden_states, weights=self.lm_head.weight, **kwargs
            )
        else:
            logits = self.lm_head(hidden_states)
            loss, _, aux = self.loss_function(logits=logits, labels=labels, hidden_states=hidden_states, **kwargs)
    else:
        logits = self.lm_head(hidden_states)
    return Out(loss=loss, logits=logits)
"#;

/// python3's `ast.dump` of each source (formatting and comments aside).
fn python_ast(sources: &[&str]) -> Vec<String> {
    let program = "import ast, sys\nfor src in sys.argv[1:]:\n    print(ast.dump(ast.parse(src)))\n";
    let out = std::process::Command::new("python3").arg("-c").arg(program).args(sources).output().expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn the_fixed_veomni_shape_is_the_hand_written_one_and_clean() {
    let text = fixed(VEOMNI_D977_SHAPE).expect("a fix");
    let asts = python_ast(&[&text, VEOMNI_D977_SHAPE_FIXED]);
    assert_eq!(asts[0], asts[1], "{text}");
    assert_eq!(loss_before_slice(&text), None);
    // Only the forward's own lines changed: one inserted, one slice replaced.
    let before: Vec<&str> = VEOMNI_D977_SHAPE.lines().collect();
    let after: Vec<&str> = text.lines().collect();
    assert_eq!(after.len(), before.len() + 1);
}

#[test]
fn the_fix_slices_a_directly_used_keep_where_it_is_needed() {
    // No keep local: `logits_to_keep` inline, the hidden states `h`.
    let src = r#"
def fwd(self, ids=None, labels=None, logits_to_keep: int = 0, **kw):
    h = self.model(ids, **kw)[0]
    if labels is not None:
        loss = my_fused_loss(h, self.lm_head.weight, labels)
        logits = None
    else:
        loss = None
        logits = self.lm_head(h[:, -logits_to_keep:, :])
    return loss, logits
"#;
    let want = src
        .replace("[0]\n", "[0]\n    h = h[:, -logits_to_keep:, :]\n")
        .replace("self.lm_head(h[:, -logits_to_keep:, :])", "self.lm_head(h)");
    assert_eq!(fixed(src).as_deref(), Some(want.as_str()));
    assert_eq!(loss_before_slice(&want), None);
}

#[test]
fn no_fix_when_it_is_not_unambiguous() {
    // The slice only under an unrelated condition.
    let src = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    hidden_states = self.model(input_ids).last_hidden_state
    if self.training:
        hidden_states = hidden_states[:, -logits_to_keep:, :]
    loss = self.loss_function(hidden_states=hidden_states, labels=labels)
    return loss
"#;
    assert_eq!(fixed(src), None);
    // The unsliced value is an attribute, not a plain name.
    let attr = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    outputs = self.model(input_ids)
    loss = self.loss_function(hidden_states=outputs.last_hidden_state, labels=labels)
    logits = self.lm_head(outputs.last_hidden_state[:, -logits_to_keep:, :])
    return loss, logits
"#;
    assert_eq!(fixed(attr), None);
    // Two slice forms.
    let two = VEOMNI_D977_SHAPE.replace(
        "            logits = self.lm_head(hidden_states)\n",
        "            logits = self.lm_head(hidden_states[:, -logits_to_keep:, :])\n",
    );
    assert_eq!(fixed(&two), None);
    // The hidden states also leave the function (slicing would change the output).
    let out =
        VEOMNI_D977_SHAPE.replace("Out(loss=loss, logits=logits)", "Out(loss=loss, logits=logits, last=hidden_states)");
    assert_eq!(fixed(&out), None);
    // The keep local bound inside a branch.
    let branch = VEOMNI_D977_SHAPE.replace(
        "    slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep\n",
        "    if labels is None:\n        slice_indices = slice(-logits_to_keep, None)\n",
    );
    assert_eq!(fixed(&branch), None);
    // Nothing to fix: clean, or the parameter dropped.
    assert_eq!(
        fixed(
            &VEOMNI_D977_SHAPE.replace(
                "    loss = None\n",
                "    hidden_states = hidden_states[:, slice_indices, :]\n    loss = None\n"
            )
        ),
        None
    );
    assert_eq!(
        fixed(
            "def forward(self, input_ids=None, labels=None, **kwargs):\n    return self.loss_function(labels=labels)\n"
        ),
        None
    );
}

#[test]
fn the_fix_of_a_method_keeps_the_class_indentation() {
    let src = format!(
        "class Qwen3ForCausalLM:\n{}",
        VEOMNI_D977_SHAPE
            .lines()
            .map(|l| if l.is_empty() { String::new() } else { format!("    {l}") })
            .collect::<Vec<_>>()
            .join("\n")
    );
    let file = ParsedFile::parse(PathBuf::from("c.py"), &src).expect("parses");
    let Stmt::ClassDef(class) = &file.body()[0] else { unreachable!() };
    let forward = pyfacts::method(class, "forward").unwrap();
    let fix = fix(forward, &src).expect("a fix");
    let text = apply(&src, &fix.edits);
    assert!(text.contains("\n        slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep\n        hidden_states = hidden_states[:, slice_indices, :]\n"), "{text}");
}

#[test]
fn targets() {
    assert!(is_target("Qwen3ForCausalLM.forward"));
    assert!(is_target("Qwen3VLMoeForConditionalGeneration.forward"));
    assert!(!is_target("Qwen3ForSequenceClassification.forward"));
    assert!(!is_target("Qwen3ForCausalLM.get_parallel_plan"));
    assert!(!is_target("Qwen3ForCausalLM"));
}

/// The fix's re-check parses the fixed function alone; it must agree with
/// parsing the whole fixed module, for module-level functions, methods,
/// methods of nested classes, decorated ones, and edits that fix or not.
#[test]
fn the_function_alone_recheck_agrees_with_the_whole_module() {
    use crate::fix::Edit;
    use ruff_text_size::TextSize;
    let indent = |src: &str, by: &str| {
        src.lines()
            .map(|l| if l.is_empty() { String::new() } else { format!("{by}{l}") })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let decorated = VEOMNI_D977_SHAPE.replacen("\ndef forward", "\n@torch.no_grad()\n@wraps(f)\ndef forward", 1);
    let shapes = [
        format!("import torch\n{VEOMNI_D977_SHAPE}\nx = 1\n"),
        format!("class A:\n{}\n", indent(VEOMNI_D977_SHAPE, "    ")),
        format!("class A:\n    class B:\n{}\n    y = 2\n", indent(&decorated, "        ")),
        format!("class A:\n\t'''doc'''\n{}\n", indent(&decorated, "\t")),
    ];
    let whole = |src: &str, start: TextSize, edits: &[Edit]| {
        let fixed = apply(src, edits);
        let parsed = ruff_python_parser::parse_module(&fixed).unwrap();
        fn find(body: &[Stmt], at: TextSize) -> Option<&ruff_python_ast::StmtFunctionDef> {
            body.iter().find_map(|s| match s {
                Stmt::FunctionDef(f) if f.start() == at => Some(f),
                Stmt::ClassDef(c) => find(&c.body, at),
                _ => None,
            })
        }
        find(&parsed.syntax().body, start).is_some_and(|f| analyze(f, None).is_empty())
    };
    let mut checked = 0;
    for src in &shapes {
        let file = ParsedFile::parse(PathBuf::from("c.py"), src).expect("parses");
        fn forward(body: &[Stmt]) -> Option<&ruff_python_ast::StmtFunctionDef> {
            body.iter().find_map(|s| match s {
                Stmt::FunctionDef(f) if f.name.as_str() == "forward" => Some(f),
                Stmt::ClassDef(c) => forward(&c.body),
                _ => None,
            })
        }
        let func = forward(file.body()).unwrap();
        let proposed = fix(func, src).expect("a fix").edits;
        // Slice-first (clean), only the insertion (still clean: the slices
        // remain), a wrong insertion (dirty), no edit (dirty).
        let insertion = &proposed[0];
        let wrong =
            vec![Edit { content: insertion.content.replace("hidden_states = ", "other = "), ..insertion.clone() }];
        for edits in [proposed.clone(), proposed[..1].to_vec(), wrong, Vec::new()] {
            assert_eq!(
                super::fix::fixed_is_clean(func, src, &edits),
                whole(src, func.start(), &edits),
                "{src}\n{edits:?}"
            );
            checked += 1;
        }
        assert!(super::fix::fixed_is_clean(func, src, &proposed));
        assert!(!super::fix::fixed_is_clean(func, src, &[]));
    }
    assert_eq!(checked, 16);
}
