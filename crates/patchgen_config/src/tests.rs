//! Static evaluation, tested with in-memory modules.

use super::loader::MemoryLoader;
use super::plan::PatchType;
use super::*;

const HEAD: &str =
    "from patchgen import PatchConfig\nconfig = PatchConfig(source_module=\"m.up\", target_file=\"out.py\")\n";

fn plan(modules: &[(&str, &str)]) -> Result<PatchPlan, EvalError> {
    let loader = MemoryLoader::new(modules.iter().copied());
    let top = modules[0].0;
    Ok(evaluate(&loader, top, "config")?.expect("a PatchConfig").plan)
}

fn one(body: &str) -> Result<PatchPlan, EvalError> {
    let text = format!("{HEAD}{body}");
    plan(&[("pkg.a_patch_gen_config", &text)])
}

#[test]
fn decorator_and_direct_forms_register_with_reference_defaults() {
    let p = one("@config.replace_class(\"A\")\nclass B:\n    pass\n\ndef f(self):\n    pass\n\nconfig.override_method(\"A.g\", replacement=f)\nconfig.replace_function(\"h\", f, None, \"\")\n").unwrap();
    let got: Vec<(PatchType, &str, Option<&str>)> =
        p.patches.iter().map(|p| (p.patch_type, p.target.as_str(), p.description.as_deref())).collect();
    assert_eq!(
        got,
        vec![
            (PatchType::ClassReplacement, "A", Some("Replace A with B")),
            (PatchType::MethodOverride, "A.g", Some("Override A.g")),
            // An empty description is falsy: the default is used.
            (PatchType::FunctionReplacement, "h", Some("Replace h with f")),
        ]
    );
    assert_eq!(p.patches[0].source_module.as_deref(), Some("pkg.a_patch_gen_config"));
    assert_eq!(p.patches[0].replacement.as_ref().unwrap().source, "@config.replace_class(\"A\")\nclass B:\n    pass\n");
}

#[test]
fn type_checking_blocks_and_main_guard_are_skipped() {
    let p = one("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    config.add_import(\"x\")\nelse:\n    config.add_import(\"y\")\nif __name__ == \"__main__\":\n    config.add_import(\"z\")\n").unwrap();
    let modules: Vec<&str> = p.additional_imports.iter().map(|i| i.module.as_str()).collect();
    assert_eq!(modules, vec!["y"]);
}

#[test]
fn strings_concatenate_and_fstrings_over_known_values_evaluate() {
    let p = one("BASE = \"torch\"\nconfig.add_import(f\"{BASE}.nn\" + \".functional\", alias=\"F\", is_from_import=False)\nconfig.add_post_import_block(\"a = 1\" \"\\n\" 'b = 2')\n").unwrap();
    assert_eq!(p.additional_imports[0].module, "torch.nn.functional");
    assert_eq!(p.post_import_blocks, vec!["a = 1\nb = 2".to_string()]);
}

#[test]
fn comprehension_filters_by_name_over_another_configs_helpers() {
    let base = format!(
        "{HEAD}def keep():\n    pass\n\ndef drop():\n    pass\n\nconfig.add_helper(keep)\nconfig.add_helper(drop)\n"
    );
    let top = format!(
        "{HEAD}from pkg.base_patch_gen_config import config as base\nconfig.helpers.extend(h for h in base.helpers if h.__name__ != \"drop\")\n"
    );
    let p = plan(&[("pkg.top_patch_gen_config", &top), ("pkg.base_patch_gen_config", &base)]).unwrap();
    let names: Vec<&str> = p.helpers.iter().map(|h| h.object.as_ref().unwrap().name.as_str()).collect();
    assert_eq!(names, vec!["keep"]);
    assert_eq!(p.helpers[0].object.as_ref().unwrap().module, "pkg.base_patch_gen_config");
}

#[test]
fn deepcopy_is_independent_and_mutating_an_imported_config_is_not() {
    let base = format!("{HEAD}config.add_import(\"base\")\n");
    let copy = "import copy\nfrom pkg.base_patch_gen_config import config as base\nconfig = copy.deepcopy(base)\nconfig.add_import(\"mine\")\nconfig.target_file = \"copy.py\"\n";
    let p = plan(&[("pkg.copy_patch_gen_config", copy), ("pkg.base_patch_gen_config", &base)]).unwrap();
    assert_eq!(p.target_file, "copy.py");
    assert_eq!(p.additional_imports.len(), 2);
    let mutate =
        "from pkg.base_patch_gen_config import config\nconfig.target_file = \"npu.py\"\nconfig.add_import(\"npu\")\n";
    let p = plan(&[("pkg.npu_patch_gen_config", mutate), ("pkg.base_patch_gen_config", &base)]).unwrap();
    assert_eq!((p.target_file.as_str(), p.additional_imports.len()), ("npu.py", 2));
}

#[test]
fn opaque_values_pass_around_but_fail_where_the_dsl_needs_them() {
    let p = one("import torch\nslot = torch.ops.Slot(\"x\")\n_ = (slot, torch)\n").unwrap();
    assert!(p.patches.is_empty());
    let err = one("from kernels import NAME\nconfig.add_import(NAME)\n").unwrap_err();
    assert!(err.message.contains("must be a string known statically"), "{err}");
    assert_eq!(err.loc.line, 4);
    assert!(err.help.unwrap().contains("`NAME` from `kernels`"));
}

#[test]
fn unsupported_statements_fail_only_when_they_touch_the_config() {
    // A loop over opaque values that never touches the config is harmless.
    assert!(one("import torch\nfor i in torch.x:\n    y = i\n").is_ok());
    let err = one("for name in [\"a\", \"b\"]:\n    config.add_import(name)\n").unwrap_err();
    assert!(err.message.contains("cannot evaluate a `for` loop statically"), "{err}");
    let err = one("try:\n    import x\nexcept ImportError:\n    config.add_import(\"y\")\n").unwrap_err();
    assert!(err.message.contains("`try`"), "{err}");
    // Names bound by such a statement are unknown, not silently wrong.
    let err =
        one("import torch\ntry:\n    NAME = torch.x\nexcept Exception:\n    NAME = \"y\"\nconfig.add_import(NAME)\n")
            .unwrap_err();
    assert!(err.help.unwrap().contains("bound by a `try` statement"));
}

#[test]
fn unevaluated_statements_make_unknown_exactly_the_names_python_binds() {
    // Neither the class body nor the comprehension binds a module name (python3 prints "kept").
    let p = one("NAME = \"kept\"\ntry:\n    class A:\n        NAME = 1\n    xs = [NAME for NAME in range(3)]\nexcept Exception:\n    pass\nconfig.add_import(NAME)\n").unwrap();
    assert_eq!(p.additional_imports[0].module, "kept");
    // A `match` capture does.
    let err =
        one("NAME = \"kept\"\nimport torch\nmatch torch.x:\n    case [NAME]:\n        pass\nconfig.add_import(NAME)\n")
            .unwrap_err();
    assert!(err.help.unwrap().contains("bound by a `match` statement"));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let n = 1000;
    let body = format!("config.add_import({}\"x\"{})\n", "[".repeat(n), "][0]".repeat(n));
    let r = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || one(&body).map(|_| ()))
        .unwrap()
        .join()
        .unwrap();
    assert!(r.unwrap_err().message.contains("nested too deeply"));
}

#[test]
fn an_overlay_is_read_instead_of_the_file_and_makes_a_module_exist() {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("__init__.py"), "").unwrap();
    let on_disk = format!("{HEAD}@config.replace_class(\"A\")\nclass B:\n    pass\n");
    std::fs::write(pkg.join("a_patch_gen_config.py"), &on_disk).unwrap();
    let targets = |loader: &ProjectLoader, module: &str| -> Vec<String> {
        let ev = evaluate(loader, module, "config").unwrap().expect("a PatchConfig");
        ev.plan.patches.iter().map(|p| p.target.clone()).collect()
    };
    assert_eq!(targets(&ProjectLoader::new(vec![dir.path().to_path_buf()]), "pkg.a_patch_gen_config"), ["A"]);
    // The unsaved buffer wins over the file; a buffer never saved is a module.
    let mut overlay = Overlay::default();
    let buffer = format!("{HEAD}@config.replace_class(\"C\")\nclass B:\n    pass\n");
    overlay.insert(pkg.join("a_patch_gen_config.py"), buffer.as_str());
    overlay.insert(pkg.join("new_patch_gen_config.py"), format!("{HEAD}config.replace_function(\"f\", None)\n"));
    let loader = ProjectLoader::with_overlay(vec![dir.path().to_path_buf()], overlay);
    assert_eq!(targets(&loader, "pkg.a_patch_gen_config"), ["C"]);
    assert!(loader.find("pkg.new_patch_gen_config").is_some());
    assert!(loader.files_read().contains(&pkg.join("a_patch_gen_config.py")));
    assert_eq!(std::fs::read_to_string(pkg.join("a_patch_gen_config.py")).unwrap(), on_disk);
}

#[test]
fn a_long_re_export_chain_names_the_import_that_starts_it() {
    let mods: Vec<(String, String)> = (0..40)
        .map(|k| (format!("pkg.m{k}"), format!("from pkg.m{} import NAME\n", k + 1)))
        .chain([("pkg.m40".to_string(), "NAME = \"x\"\n".to_string())])
        .collect();
    let top = format!("{HEAD}from pkg.m0 import NAME\nconfig.add_import(NAME)\n");
    let mut all: Vec<(&str, &str)> = vec![("pkg.a_patch_gen_config", top.as_str())];
    all.extend(mods.iter().map(|(m, t)| (m.as_str(), t.as_str())));
    let err = plan(&all).unwrap_err();
    assert!(err.message.contains("re-exports"), "{}", err.message);
    assert_ne!(err.loc.path, std::path::PathBuf::new(), "the error names a file: {err:?}");
    assert!(err.loc.line > 0, "{err:?}");
}

#[test]
fn budgets_refuse_huge_values_before_building_them() {
    for body in [
        "x = (\"a\" * 9000000).replace(\"a\", \"a\" * 200)\n",
        "x = (\"a\" * 9000000).replace(\"\", \"bb\")\n",
        "x = \"-\".join([\"a\" * 9000000, \"b\" * 9000000])\n",
        "s = \"a\" * 9000000\nx = f\"{s}{s}\"\n",
    ] {
        let err = one(body).unwrap_err();
        assert!(err.message.contains("too large"), "{body}: {}", err.message);
    }
    // Within the budget, the values are built as Python builds them.
    let p =
        one("config.add_import(\"ab\".replace(\"b\", \"c\" * 3) + \"-\".join([\"x\", \"y\"]) + f\"{'z'}\")\n").unwrap();
    assert_eq!(p.additional_imports[0].module, "accc".to_string() + "x-yz");
    let stacked = format!("{}def f():\n    return 1\n", "@config.add_helper\n".repeat(3000));
    let err = one(&stacked).unwrap_err();
    assert!(err.message.contains("add up to over"), "{}", err.message);
}
