//! The names a test row spells for a model, and their counterparts for the
//! new model: the toy directory (a path component, or `_toy("<dir>")`), a
//! class (`Qwen3MoeForCausalLM` → `MixtralForCausalLM`, the prefix rename
//! `new` uses everywhere), and the model's names (HF module name, project
//! directory, registry keys, and each without underscores — VeOmni's e2e ids
//! write `qwen3vlmoe`), alone or starting an id (`qwen3_moe-eager`).
//!
//! A name starts an id only when the project has no longer model name that
//! starts it too (`qwen3_moe-fa2` is qwen3_moe's, not qwen3's) and the next
//! character does not continue a word (`llama3_1` is not `llama`'s id).

use serde::Serialize;

/// The names of one model as the test tables may spell them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ModelNames {
    /// The HF module name (`qwen2_5_vl`).
    pub hf: String,
    /// The project's model directory (`qwen2_5vl`).
    pub dir: String,
    /// The class prefix (`Qwen2_5_VL`).
    pub prefix: String,
    /// The registry keys (the `model_type`s), the main one first.
    pub keys: Vec<String>,
    /// Its toy config directories under `tests/toy_config` (the one `new`
    /// writes for the new model).
    pub toy_dirs: Vec<String>,
    /// The classes its upstream module defines.
    #[serde(skip)]
    pub classes: Vec<String>,
}

fn squash(s: &str) -> String {
    s.replace('_', "")
}

impl ModelNames {
    /// The names that stand for the model alone, with the new model's
    /// counterpart of each.
    fn alias_pairs(&self, to: &ModelNames) -> Vec<(String, String)> {
        let main_key = self.keys.first().cloned().unwrap_or_else(|| self.hf.clone());
        let new_key = to.keys.first().cloned().unwrap_or_else(|| to.hf.clone());
        let mut pairs = vec![(self.hf.clone(), to.hf.clone()), (self.dir.clone(), to.hf.clone())];
        for k in &self.keys {
            let new = match k.strip_prefix(&main_key) {
                Some(rest) => format!("{new_key}{rest}"),
                None => new_key.clone(),
            };
            pairs.push((k.clone(), new));
        }
        let squashed: Vec<(String, String)> = pairs.iter().map(|(a, b)| (squash(a), squash(b))).collect();
        pairs.extend(squashed);
        let mut out: Vec<(String, String)> = Vec::new();
        for p in pairs {
            if !p.0.is_empty() && !out.iter().any(|(a, _)| *a == p.0) {
                out.push(p);
            }
        }
        out
    }

    /// Every name of the model (to tell one model's ids from another's).
    pub fn aliases(&self) -> Vec<String> {
        self.alias_pairs(self).into_iter().map(|(a, _)| a).collect()
    }
}

/// What a renamed string was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Renamed {
    /// A path through (or the name of) the toy directory.
    Toy,
    /// A class; `false` when the new module has no such class.
    Class { exists: bool },
    /// The model's name, or an id it starts.
    Name,
}

/// The sibling → new model renaming of strings.
pub struct Renamer<'a> {
    pub from: &'a ModelNames,
    pub to: &'a ModelNames,
    pairs: Vec<(String, String)>,
    /// Every project model's names (the sibling's included).
    project: Vec<String>,
}

fn continues_word(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric())
}

impl<'a> Renamer<'a> {
    pub fn new(from: &'a ModelNames, to: &'a ModelNames, project: Vec<String>) -> Self {
        let pairs = from.alias_pairs(to);
        Renamer { from, to, pairs, project }
    }

    /// The longest model name that starts `s` as a word, of any project
    /// model; `strict`: not followed by `_` either (`qwen3_next-eager` may be
    /// another model's, one the project does not have).
    fn owner_prefix<'s>(&self, s: &'s str, strict: bool) -> Option<&'s str> {
        self.project
            .iter()
            .chain(self.pairs.iter().map(|(a, _)| a))
            .filter(|a| {
                let next = s.strip_prefix(a.as_str()).map(|r| r.chars().next());
                next.is_some_and(|c| !(continues_word(c) || strict && c == Some('_')))
            })
            .max_by_key(|a| a.len())
            .map(|a| &s[..a.len()])
    }

    /// `s` under the new model's names, when it names the sibling.
    pub fn rename(&self, s: &str) -> Option<(String, Renamed)> {
        self.rename_as(s, false)
    }

    fn rename_as(&self, s: &str, strict: bool) -> Option<(String, Renamed)> {
        let toy_dir = self.to.toy_dirs.first()?;
        if s.contains('/') || self.from.toy_dirs.iter().any(|d| d == s) {
            let parts: Vec<&str> = s.split('/').collect();
            if parts.iter().any(|p| self.from.toy_dirs.iter().any(|d| d == p)) {
                let renamed: Vec<&str> = parts
                    .iter()
                    .map(|p| if self.from.toy_dirs.iter().any(|d| d == p) { toy_dir.as_str() } else { p })
                    .collect();
                return Some((renamed.join("/"), Renamed::Toy));
            }
            return None;
        }
        if self.from.classes.iter().any(|c| c == s)
            && let Some(rest) = s.strip_prefix(self.from.prefix.as_str())
        {
            let new = format!("{}{rest}", self.to.prefix);
            let exists = self.to.classes.contains(&new);
            return Some((new, Renamed::Class { exists }));
        }
        let owner = self.owner_prefix(s, strict)?;
        let (_, new) = self.pairs.iter().find(|(a, _)| a == owner)?;
        Some((format!("{new}{}", &s[owner.len()..]), Renamed::Name))
    }

    /// Whether a string names the sibling for certain (a row that does is
    /// the sibling's): its toy directory, one of its classes, or its name
    /// alone or followed by a non-word character other than `_`.
    pub fn mentions(&self, s: &str) -> bool {
        self.rename_as(s, true).is_some()
    }

    /// Whether an identifier spells one of the sibling's names
    /// (`_qwen3_5_npu_skip`, `_gpt_oss_fa4_quack_skip`).
    pub fn identifier_mentions(&self, ident: &str) -> bool {
        let lower = ident.to_lowercase();
        self.pairs.iter().filter(|(a, _)| a.len() > 2).any(|(a, _)| {
            lower.match_indices(a.as_str()).any(|(i, _)| {
                let before = lower[..i].chars().next_back();
                let after = lower[i + a.len()..].chars().next();
                !continues_word(before)
                    && !continues_word(after)
                    && !self.project.iter().any(|p| p.len() > a.len() && lower[i..].starts_with(p.as_str()))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(hf: &str, dir: &str, prefix: &str, toy: &str, classes: &[&str]) -> ModelNames {
        ModelNames {
            hf: hf.into(),
            dir: dir.into(),
            prefix: prefix.into(),
            keys: vec![hf.into()],
            toy_dirs: vec![toy.into()],
            classes: classes.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn renames_toy_paths_classes_and_ids() {
        let from = names(
            "qwen3_vl_moe",
            "qwen3_vl_moe",
            "Qwen3VLMoe",
            "qwen3vlmoe_toy",
            &["Qwen3VLMoeForConditionalGeneration"],
        );
        let to = names("glm4v_moe", "glm4v_moe", "Glm4vMoe", "glm4v_moe_toy", &["Glm4vMoeForConditionalGeneration"]);
        let r = Renamer::new(&from, &to, vec!["qwen3_vl".into(), "qwen3_vl_moe".into(), "qwen3".into()]);
        assert_eq!(r.rename("./tests/toy_config/qwen3vlmoe_toy").unwrap().0, "./tests/toy_config/glm4v_moe_toy");
        assert_eq!(r.rename("qwen3vlmoe_toy").unwrap().0, "glm4v_moe_toy");
        assert_eq!(
            r.rename("Qwen3VLMoeForConditionalGeneration").unwrap(),
            ("Glm4vMoeForConditionalGeneration".into(), Renamed::Class { exists: true })
        );
        assert_eq!(r.rename("qwen3_vl_moe-fa2").unwrap().0, "glm4v_moe-fa2");
        assert_eq!(r.rename("qwen3vlmoe").unwrap().0, "glm4vmoe");
        assert_eq!(r.rename("qwen3_vl-fa2"), None);
        assert_eq!(r.rename("./tests/toy_config/qwen3vl_toy"), None);
        assert_eq!(r.rename("flash_attention_2"), None);
    }

    #[test]
    fn a_longer_project_name_owns_the_id() {
        let from = names("qwen3_5", "qwen3_5", "Qwen3_5", "qwen3_5_toy", &[]);
        let to = names("olmo3", "olmo3", "Olmo3", "olmo3_toy", &[]);
        let r = Renamer::new(&from, &to, vec!["qwen3_5_moe".into()]);
        assert_eq!(r.rename("qwen3_5-text-eager").unwrap().0, "olmo3-text-eager");
        assert_eq!(r.rename("qwen3_5_vl-sdpa").unwrap().0, "olmo3_vl-sdpa");
        assert!(!r.mentions("qwen3_5_vl-sdpa") && !r.mentions("qwen3_5_next-eager") && r.mentions("qwen3_5-fa2"));
        assert_eq!(r.rename("qwen3_5_moe-text-eager"), None);
        assert!(r.identifier_mentions("_qwen3_5_npu_skip"));
        assert!(!r.identifier_mentions("_qwen3_5_moe_npu_skip"));
        let llama = names("llama", "llama", "Llama", "llama31_toy", &[]);
        let r = Renamer::new(&llama, &to, vec![]);
        assert_eq!(r.rename("llama3_1"), None);
        assert_eq!(
            r.rename("./tests/toy_config/llama31_toy/config.json").unwrap().0,
            "./tests/toy_config/olmo3_toy/config.json"
        );
    }
}
