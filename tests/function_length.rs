//! No library function longer than 150 lines (issue #33, item 6): a long
//! function is split into steps named for what they decide. Measured from
//! the line of `fn` to the line of the closing brace, both included, by a
//! scan that blanks comments, strings and character literals and then
//! counts braces. Test code (`*tests.rs` files, what follows a file's
//! first `#[cfg(test)]`) is not library code.
//!
//! The exceptions, each a single decision too wide to cut without hiding
//! it: the tokenizer's state machine, the DSL dispatch, and a code template.

use std::path::{Path, PathBuf};

const LIMIT: usize = 150;

/// (file under the workspace root, function): allowed over the limit.
const ALLOWED: [(&str, &str); 3] = [
    // One state machine over a line's characters (CPython's tokenizer).
    ("crates/patchgen_python/src/pytext/tokenize.rs", "step_line"),
    // One arm per `PatchConfig` method.
    ("crates/patchgen_config/src/dsl.rs", "call_config_method"),
    // The converter module's Python text, written out.
    ("crates/patchgen_scaffold/src/moe/converter.rs", "converter_py"),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The library sources: every crate's `src/` and the binary's.
fn library_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    for krate in std::fs::read_dir(root().join("crates")).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    files.retain(|f| !f.file_name().is_some_and(|n| n.to_string_lossy().ends_with("tests.rs")));
    files.sort();
    files
}

/// `src` with comments, string literals (raw, byte, escaped) and character
/// literals replaced by spaces, newlines kept: braces left are code.
fn blank_non_code(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').map_or(b.len(), |k| i + k);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if (b[i] == b'r' || b[i] == b'b') && (i == 0 || !ident(b[i - 1])) && raw_string_opener(rest).is_some() {
            let (opener, hashes) = raw_string_opener(rest).unwrap();
            let mut closer = vec![b'"'];
            closer.extend(std::iter::repeat_n(b'#', hashes));
            let body = i + opener;
            let end = b[body..]
                .windows(closer.len())
                .position(|w| w == closer.as_slice())
                .map_or(b.len(), |k| body + k + closer.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'\'' {
            // A character literal (`'{'`, `'\''`, `'\u{7b}'`), not a lifetime.
            let len = if rest.get(1) == Some(&b'\\') {
                rest.iter().skip(2).position(|&c| c == b'\'').map(|k| k + 3)
            } else {
                let n = 1 + src[i + 1..].chars().next().map_or(0, char::len_utf8);
                (rest.get(n) == Some(&b'\'')).then_some(n + 1)
            };
            match len {
                Some(n) => {
                    blank(&mut out, i, i + n);
                    i += n;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("only ASCII bytes were replaced, by spaces")
}

/// `r"`, `r#"`, `br##"`…: the opener's length and its number of `#`.
fn raw_string_opener(s: &[u8]) -> Option<(usize, usize)> {
    let mut k = if s.starts_with(b"br") {
        2
    } else if s.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = s[k..].iter().take_while(|&&c| c == b'#').count();
    k += hashes;
    (s.get(k) == Some(&b'"')).then_some((k + 1, hashes))
}

/// Every function with a body in `code` (already blanked): its name, its
/// first line and its length in lines.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let line_at = |at: usize| code[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(k) = code[from..].find("fn ") {
        let at = from + k;
        from = at + 3;
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let name: String =
            code[at + 3..].trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if name.is_empty() {
            continue;
        }
        // The body opens at the first `{` before any `;` (a declaration).
        let Some(open) = code[at..].find(['{', ';']).map(|k| at + k).filter(|&o| b[o] == b'{') else { continue };
        let mut depth = 0usize;
        let mut close = open;
        for (j, &c) in b.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = j;
                        break;
                    }
                }
                _ => {}
            }
        }
        let first = line_at(at);
        out.push((name, first, line_at(close) - first + 1));
    }
    out
}

#[test]
fn the_scan_measures_functions() {
    let src = "fn a() {\n    let s = \"}\";\n    let c = '{';\n    // }\n}\nfn b<'a>(x: &'a str) -> &'a str { x }\n\
               trait T { fn d(&self); }\nfn e() { let r = r#\"}\"#; }\n";
    let found = functions(&blank_non_code(src));
    assert_eq!(
        found,
        vec![("a".to_string(), 1, 5), ("b".to_string(), 6, 1), ("e".to_string(), 8, 1)],
        "braces in strings, characters and comments are not code; a declaration has no body"
    );
}

#[test]
fn no_library_function_is_longer_than_the_limit() {
    let mut long = Vec::new();
    for f in library_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        let library = text.split("#[cfg(test)]").next().unwrap_or_default();
        let rel = f.strip_prefix(root()).unwrap().to_string_lossy().replace('\\', "/");
        for (name, line, len) in functions(&blank_non_code(library)) {
            if len <= LIMIT {
                continue;
            }
            if !ALLOWED.contains(&(rel.as_str(), name.as_str())) {
                long.push(format!("{rel}:{line}: `{name}` is {len} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {LIMIT} lines: split them into steps named for what they decide\n{}",
        long.join("\n")
    );
    // An exception names a function that exists.
    for (file, name) in ALLOWED {
        let text = std::fs::read_to_string(root().join(file)).unwrap_or_default();
        assert!(
            functions(&blank_non_code(&text)).iter().any(|(n, _, _)| n == name),
            "the allowed `{name}` is no longer in {file}: update ALLOWED"
        );
    }
}
