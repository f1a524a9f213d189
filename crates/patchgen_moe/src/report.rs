//! Text and JSON renderings of the `moe inspect` and `moe convert`
//! reports (the only place that formats them).

use std::fmt::Write;

use super::convert::ConvertReport;
use super::inspect::InspectReport;

pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1000.0 && u < UNITS.len() - 1 {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 { format!("{n} B") } else { format!("{v:.2} {}", UNITS[u]) }
}

pub fn inspect_text(r: &InspectReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "checkpoint: {} ({} shard{}, {} tensors, {})",
        r.checkpoint.display(),
        r.shards,
        if r.shards == 1 { "" } else { "s" },
        r.tensors,
        human_bytes(r.total_bytes)
    );
    match &r.config {
        Some(c) => {
            let opt = |v: Option<u64>, k: &Option<String>| match (v, k) {
                (Some(v), Some(k)) => format!("{v} ({k})"),
                (Some(v), None) => v.to_string(),
                _ => "?".into(),
            };
            let within = if c.text_path.is_empty() { String::new() } else { format!(", dims from {}", c.text_path) };
            let _ = writeln!(
                s,
                "config: {} (model_type {}{within}): E={}, H={}, I={}, layers={}{}",
                c.path.display(),
                c.model_type.as_deref().unwrap_or("?"),
                opt(c.experts, &c.experts_key),
                c.hidden.map_or("?".into(), |h| h.to_string()),
                opt(c.intermediate, &c.intermediate_key),
                c.layers.map_or("?".into(), |h| h.to_string()),
                match (&c.dense_layers, &c.dense_rule) {
                    (Some(d), Some(rule)) if !d.is_empty() =>
                        format!(", dense layers {} ({rule})", super::layout::ranges(d)),
                    _ => String::new(),
                }
            );
            if let (Some(h), Some(i)) = (c.hidden, c.intermediate) {
                if h == 2 * i {
                    let _ = writeln!(
                        s,
                        "  note: hidden_size == 2 * intermediate ({h} == 2 * {i}): fused gate_up_proj is square per expert"
                    );
                }
                if h == i {
                    let _ =
                        writeln!(s, "  note: hidden_size == intermediate ({h}): fused down_proj is square per expert");
                }
            }
        }
        None => {
            let _ = writeln!(
                s,
                "config: none (no config.json next to the checkpoint; pass --config): shapes checked against each other only"
            );
        }
    }
    if r.stacks.is_empty() {
        let _ = writeln!(s, "experts: none");
    }
    for st in &r.stacks {
        let e: Vec<String> = st.experts.iter().map(u64::to_string).collect();
        let _ = writeln!(
            s,
            "{}: {} {}; layers {}; {} experts; {}{}",
            st.pattern,
            st.family_letter,
            st.family,
            if st.layers.is_empty() { "-".into() } else { st.layers.clone() },
            e.join("/"),
            st.dtypes.join(", "),
            if st.quantised.is_empty() { String::new() } else { format!("; quantised: {}", st.quantised.join(", ")) }
        );
    }
    for g in &r.groups {
        for a in &g.ambiguous {
            let _ = writeln!(s, "  ambiguous: {}.experts: {a}", g.prefix);
        }
    }
    for g in &r.groups {
        for p in &g.problems {
            let _ = writeln!(s, "  problem: {}.experts: {p}", g.prefix);
        }
    }
    for p in &r.layer_problems {
        let _ = writeln!(s, "  problem: {p}");
    }
    match (&r.recipe, &r.recipe_note) {
        (Some(f), _) => {
            let _ = writeln!(
                s,
                "recipe: transformers {} for {}: {}{}",
                f.version,
                f.model_type,
                f.label,
                f.alias_of.as_ref().map_or(String::new(), |a| format!(" (via _MODEL_TO_CONVERSION_PATTERN → {a})"))
            );
        }
        (None, Some(n)) => {
            let _ = writeln!(s, "recipe: unknown: {n}");
        }
        _ => {}
    }
    if let Some(p) = &r.project {
        for g in &p.generated {
            let classes: Vec<String> = g.fused.iter().map(|f| format!("{} (line {})", f.class, f.line)).collect();
            let _ = writeln!(
                s,
                "project: {}: {}",
                g.path.display(),
                if classes.is_empty() {
                    "no fused expert parameters".into()
                } else {
                    format!("fused experts in {}", classes.join(", "))
                }
            );
        }
        let _ = writeln!(
            s,
            "project: converter: {}",
            p.converter.as_ref().map_or("none registered".into(), |c| format!("registered in {}", c.display()))
        );
    }
    for v in &r.verdict {
        let _ = writeln!(s, "=> {v}");
    }
    if let Some(t) = &r.transfer_note {
        let _ = writeln!(s, "{t}");
    }
    s
}

pub fn convert_text(r: &ConvertReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "converted {} expert module(s) to {} ({} already in that layout): {} tensors, {} in {} shard(s), {:.2} s ({}/s)",
        r.converted.len(),
        match r.to {
            super::plan::Target::Fused => "fused",
            super::plan::Target::PerExpert => "per-expert",
        },
        r.unchanged,
        r.tensors,
        human_bytes(r.bytes),
        r.shards.len(),
        r.seconds,
        human_bytes((r.bytes as f64 / r.seconds.max(1e-9)) as u64)
    );
    let mut fams: Vec<&str> = r.converted.iter().map(|(_, f)| f.as_str()).collect();
    fams.sort();
    fams.dedup();
    if !fams.is_empty() {
        let _ = writeln!(s, "from famil{} {}", if fams.len() == 1 { "y" } else { "ies" }, fams.join(", "));
    }
    if !r.copied_files.is_empty() {
        let _ = writeln!(s, "copied: {}", r.copied_files.join(", "));
    }
    if !r.skipped_dirs.is_empty() {
        let _ = writeln!(s, "not copied (directories): {}", r.skipped_dirs.join(", "));
    }
    if r.verified {
        let _ = writeln!(s, "verified: every tensor matches its source bytes");
    }
    let _ = writeln!(s, "wrote {}", r.dst.display());
    s
}
