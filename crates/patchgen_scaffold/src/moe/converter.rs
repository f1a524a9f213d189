//! The checkpoint tensor converter a new MoE model needs, in the shape of
//! VeOmni's `checkpoint_tensor_converter.py`, from the analysis in
//! [`super`] (the recipe's key mapping; square experts refused).

use std::fmt::Write;

use patchgen_moe::config::MoeDims;

use super::{ConverterKind, MoeNeeds};

/// Where the converter finds the number of experts (and, for a
/// transposer, H and I) on `model.config`: the toy config's keys, read as
/// `moe inspect` reads a `config.json`.
pub fn config_attr(dims: &MoeDims, key: &str) -> String {
    let mut path = String::from("model.config");
    for part in dims.text_path.split('.').filter(|p| !p.is_empty()) {
        let _ = write!(path, ".{part}");
    }
    format!("{path}.{key}")
}

/// What the converter module needs besides the facts.
pub struct ConverterSpec<'a> {
    pub licence: &'a str,
    /// `from ...checkpoint_tensor_loading import ConvertedCheckpointTensor`, as the project writes it.
    pub converted_import: &'a str,
    pub hf_name: &'a str,
    pub prefix: &'a str,
    pub upstream_version: &'a str,
    pub dims: &'a MoeDims,
}

/// A Python raw string literal where one can hold `s` (regular
/// expressions read better so), else an escaped one.
fn py_raw(s: &str) -> String {
    if s.contains(['"', '\n']) || s.ends_with('\\') { crate::render::py_str(s) } else { format!("r\"{s}\"") }
}

/// The names `__init__.py` imports from the converter module.
pub fn converter_functions(hf_name: &str) -> (String, String) {
    (format!("create_{hf_name}_checkpoint_tensor_converter"), format!("convert_{hf_name}_fqn_to_index_mapping"))
}

/// `checkpoint_tensor_converter.py` for the new model, or why not.
pub fn converter_py(needs: &MoeNeeds, spec: &ConverterSpec<'_>) -> Result<String, crate::declined::Declined> {
    let kind = needs.converter.as_ref().ok_or("no converter kind")?;
    let experts_key = spec.dims.experts_key.as_deref().ok_or("the toy config has no experts count")?;
    let (create, fqn) = converter_functions(spec.hf_name);
    let class = format!("{}CheckpointTensorConverter", spec.prefix);
    let renames: Vec<String> = needs
        .renamings
        .iter()
        .map(|(a, b)| format!("    ({}, {}),\n", crate::render::py_str(a), crate::render::py_str(b)))
        .collect();
    let mut out = String::new();
    if !spec.licence.is_empty() {
        out.push_str(spec.licence.trim_end());
        out.push_str("\n\n");
    }
    let layout = match kind {
        ConverterKind::PerExpert { gate, up, down } => format!(
            "    checkpoint (per-expert):\n        <module>.experts.{{j}}.{gate}.weight  [I, H]\n        <module>.experts.{{j}}.{up}.weight  [I, H]\n        <module>.experts.{{j}}.{down}.weight  [H, I]\n\n    patched model (fused):\n        <module>.experts.gate_up_proj  [E, 2*I, H]  (gate rows first)\n        <module>.experts.down_proj     [E, H, I]\n"
        ),
        ConverterKind::Transposed => "    checkpoint (fused, transposed):\n        <module>.experts.gate_up_proj  [E, H, 2*I]\n        <module>.experts.down_proj     [E, I, H]\n\n    patched model (fused):\n        <module>.experts.gate_up_proj  [E, 2*I, H]\n        <module>.experts.down_proj     [E, H, I]\n".to_string(),
    };
    let rename_doc = if needs.renamings.is_empty() {
        String::new()
    } else {
        format!(
            "\nThe recipe's renamings are applied to every key: {}.\n",
            needs.renamings.iter().map(|(a, b)| format!("`{a}` -> `{b}`")).collect::<Vec<_>>().join(", ")
        )
    };
    let _ = write!(
        out,
        "\"\"\"\nRuntime checkpoint tensor converter for {p}, written by `patchgen new`.\n\ntransformers {v} loads `{mt}` checkpoints with the recipe {r} (its conversion_mapping.py),\nbut skips it for the generated (custom-code) classes; this converter does the same at load time:\n\n{layout}{rename_doc}\"\"\"\n\nimport re\n\nimport torch\n\n{imp}\n\n\n",
        p = spec.prefix,
        v = spec.upstream_version,
        mt = needs.model_type,
        r = needs.recipe,
        imp = spec.converted_import,
    );
    let regex = !needs.regex_renamings.is_empty();
    if regex {
        let base = needs.base_model.as_ref().ok_or("no base model for the recipe's renamings")?;
        if matches!(kind, ConverterKind::Transposed) {
            return Err("a transposed recipe with regular-expression renamings is not written".into());
        }
        out.push_str("# The recipe's WeightRenamings as transformers compiles them: the sources as one alternation\n# of named groups, the first target with its `\\N` filled from the matched source.\n_RENAMINGS = tuple(\n    (re.compile(\"|\".join(f\"(?P<g{i}>{source})\" for i, source in enumerate(sources))), target)\n    for sources, target in (\n");
        for (sources, target) in &needs.regex_renamings {
            let srcs: Vec<String> = sources.iter().map(|x| py_raw(x)).collect();
            let _ = writeln!(out, "        (({},), {}),", srcs.join(", "), py_raw(target));
        }
        out.push_str("    )\n)\n");
        let children: Vec<String> = base.children.iter().map(|c| crate::render::py_str(&format!("{c}."))).collect();
        let _ = write!(
            out,
            "# The base model ({class}, `base_model_prefix` {prefix:?}): transformers renames in its namespace,\n# then adds or strips the prefix for the model it loads.\n_BASE_PREFIX = {p}\n_BASE_CHILDREN = ({c},)\n\n\n",
            class = base.class,
            prefix = base.prefix,
            p = crate::render::py_str(&format!("{}.", base.prefix)),
            c = children.join(", "),
        );
        out.push_str(
            r#"def _fill(target, match, start):
    """The target's backreferences (backslash + group number) filled from the matched source's groups."""
    return re.sub(r"\\(\d+)", lambda ref: match.group(start + int(ref.group(1))), target)


def _rename(name):
    """The recipe's renamings in order, each replacing its first match (transformers' rename_source_key)."""
    for pattern, target in _RENAMINGS:
        match = pattern.search(name)
        if match is None:
            continue
        group = next(g for g, value in match.groupdict().items() if value is not None)
        name = name.replace(match.group(0), _fill(target, match, pattern.groupindex[group]), 1)
    return name


def _convert_key(name, target_prefix):
    """A checkpoint key renamed in the base model's namespace, then prefixed as the loaded model names it."""
    has_prefix = name.startswith(_BASE_PREFIX)
    source = name[len(_BASE_PREFIX) :] if has_prefix else name
    converted = _rename(source)
    if converted.startswith(_BASE_CHILDREN):
        return target_prefix + converted
    if has_prefix and converted == source:
        return name
    return converted


"#,
        );
    } else {
        let _ = write!(out, "_RENAMES = (\n{})\n\n\n", renames.concat());
        out.push_str(
            "def _rename(name):\n    \"\"\"The recipe's renamings (transformers applies them at load, but not to custom-code classes).\"\"\"\n    for old, new in _RENAMES:\n        name = name.replace(old, new)\n    return name\n\n\n",
        );
    }
    match kind {
        ConverterKind::PerExpert { gate, up, down } => {
            let _ = write!(
                out,
                "_EXPERT_KEY = re.compile(r\"^(.+)\\.experts\\.(\\d+)\\.({gate}|{up}|{down})\\.weight$\")\n_ROLE = {{\"{gate}\": \"gate\", \"{up}\": \"up\", \"{down}\": \"down\"}}\n\n\n"
            );
            let _ = write!(
                out,
                r#"class {class}:
    """Stacks per-expert checkpoint tensors into the fused expert parameters.

    Each (module, projection) is buffered until all ``num_experts`` experts arrived; gate and up
    are concatenated (gate first) once both are stacked. Other keys pass through renamed.
    """

    def __init__(self, num_experts{init_param}):
        self.num_experts = num_experts{init_assign}
        self._experts = {{}}
        self._stacked = {{}}

    def _key(self, name):
        return {key_expr}

    def can_handle(self, name):
        key = self._key(name)
        return _EXPERT_KEY.match(key) is not None or key != name

    def convert(self, name, tensor):
        key = self._key(name)
        match = _EXPERT_KEY.match(key)
        if match is None:
            return ConvertedCheckpointTensor(name=key, tensor=tensor)
        module, expert, role = match.group(1), int(match.group(2)), _ROLE[match.group(3)]
        experts = self._experts.setdefault((module, role), {{}})
        experts[expert] = tensor
        if len(experts) < self.num_experts:
            return None
        del self._experts[(module, role)]
        stacked = torch.stack([experts[i] for i in range(self.num_experts)])
        if role == "down":
            return ConvertedCheckpointTensor(name=f"{{module}}.experts.down_proj", tensor=stacked)
        pair = self._stacked.setdefault(module, {{}})
        pair[role] = stacked
        if len(pair) < 2:
            return None
        del self._stacked[module]
        merged = torch.cat([pair["gate"], pair["up"]], dim=1)
        return ConvertedCheckpointTensor(name=f"{{module}}.experts.gate_up_proj", tensor=merged)

    def finalize(self):
        problems = []
        if self._experts:
            found = ", ".join(f"{{m}} {{r}}: {{len(e)}}" for (m, r), e in sorted(self._experts.items()))
            problems.append(f"experts missing (expected {{self.num_experts}}): {{found}}")
        if self._stacked:
            found = ", ".join(f"{{m}} has only {{sorted(p)}}" for m, p in sorted(self._stacked.items()))
            problems.append(f"gate/up pair incomplete: {{found}}")
        if problems:
            raise RuntimeError("{prefix} checkpoint converter: incomplete checkpoint: " + "; ".join(problems))
        return []


def {create}(model):
    """Registered on the model classes as ``_create_checkpoint_tensor_converter`` (__init__.py)."""
    return {class}(num_experts={experts}{factory_arg})


def {fqn}(fqn_to_index_mapping{fqn_param}):
    """The checkpoint index's keys as the converter emits them (a fused tensor in the first shard of its sources)."""
    converted = {{}}
    for name, index in fqn_to_index_mapping.items():
        key = {fqn_key}
        match = _EXPERT_KEY.match(key)
        if match is None:
            converted[key] = index
            continue
        module = match.group(1)
        proj = "down_proj" if _ROLE[match.group(3)] == "down" else "gate_up_proj"
        fused = f"{{module}}.experts.{{proj}}"
        converted[fused] = min(index, converted.get(fused, index))
    return converted
"#,
                prefix = spec.prefix,
                experts = config_attr(spec.dims, experts_key),
                init_param = if regex { ", target_prefix=\"\"" } else { "" },
                init_assign = if regex { "\n        self.target_prefix = target_prefix" } else { "" },
                key_expr = if regex { "_convert_key(name, self.target_prefix)" } else { "_rename(name)" },
                factory_arg = match &needs.base_model {
                    Some(b) if regex => format!(
                        ", target_prefix=_BASE_PREFIX if hasattr(model, {}) else \"\"",
                        crate::render::py_str(&b.prefix)
                    ),
                    _ => String::new(),
                },
                fqn_param = if regex { ", target_model_prefix=_BASE_PREFIX" } else { "" },
                fqn_key = if regex { "_convert_key(name, target_model_prefix)" } else { "_rename(name)" },
            );
        }
        ConverterKind::Transposed => {
            let hidden = config_attr(spec.dims, "hidden_size");
            let inter = config_attr(
                spec.dims,
                spec.dims.intermediate_key.as_deref().ok_or("the toy config has no MoE intermediate size")?,
            );
            let _ = write!(
                out,
                r#"_FUSED_KEY = re.compile(r"^(.+)\.experts\.(gate_up_proj|down_proj)$")


class {class}:
    """Transposes fused expert tensors stored [E, H, 2*I] / [E, I, H] into [E, 2*I, H] / [E, H, I].

    A square expert (hidden_size == 2 * intermediate for gate_up_proj, hidden_size == intermediate for
    down_proj) cannot be told by shape: it raises (convert it offline with
    `patchgen moe convert --source-layout`), never guesses.
    """

    def __init__(self, num_experts, hidden_size, intermediate_size):
        self.num_experts = num_experts
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size

    def can_handle(self, name):
        return _FUSED_KEY.match(name) is not None or _rename(name) != name

    def convert(self, name, tensor):
        match = _FUSED_KEY.match(name)
        if match is None:
            return ConvertedCheckpointTensor(name=_rename(name), tensor=tensor)
        h, i = self.hidden_size, self.intermediate_size
        stored, fused = ((h, 2 * i), (2 * i, h)) if match.group(2) == "gate_up_proj" else ((i, h), (h, i))
        shape = tuple(tensor.shape)
        if len(shape) != 3 or shape[0] != self.num_experts:
            raise RuntimeError(f"{prefix} checkpoint converter: {{name}} {{shape}}: expected 3-D with dim 0 == {{self.num_experts}}")
        if stored == fused:
            raise RuntimeError(
                f"{prefix} checkpoint converter: {{name}} {{shape}}: the stored and fused layouts have the same shape; "
                "convert the checkpoint with `patchgen moe convert --source-layout fused|transposed`"
            )
        if shape[1:] == stored:
            tensor = tensor.transpose(1, 2).contiguous()
        elif shape[1:] != fused:
            raise RuntimeError(f"{prefix} checkpoint converter: {{name}} {{shape}}: neither {{stored}} nor {{fused}} per expert")
        return ConvertedCheckpointTensor(name=_rename(name), tensor=tensor)

    def finalize(self):
        return []


def {create}(model):
    """Registered on the model classes as ``_create_checkpoint_tensor_converter`` (__init__.py)."""
    return {class}(
        num_experts={experts},
        hidden_size={hidden},
        intermediate_size={inter},
    )


def {fqn}(fqn_to_index_mapping):
    """The checkpoint index's keys as the converter emits them (names kept, renamings applied)."""
    return {{_rename(name): index for name, index in fqn_to_index_mapping.items()}}
"#,
                prefix = spec.prefix,
                experts = config_attr(spec.dims, experts_key),
            );
        }
    }
    Ok(out)
}
