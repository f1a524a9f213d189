//! What tests/moe.rs and tests/moe_remote.rs share: the oracle python
//! (`PATCHGEN_TEST_PYTHON`), the scripts beside this file, checkpoints made
//! by `ckpt.py`, and a command's outcome.
#![allow(dead_code)] // each test crate uses its part

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<std::process::Output> for Out {
    fn from(o: std::process::Output) -> Out {
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// The python with numpy and safetensors (and moto), or `None` with a
/// message outside CI.
pub fn python() -> Option<String> {
    match std::env::var("PATCHGEN_TEST_PYTHON") {
        Ok(p) if !p.is_empty() => Some(p),
        _ if std::env::var("CI").as_deref() == Ok("true") => {
            panic!(
                "PATCHGEN_TEST_PYTHON must name a python with numpy and safetensors (scripts/test-env.sh installs it)"
            )
        }
        _ => {
            eprintln!("skipping: PATCHGEN_TEST_PYTHON is not set (run through scripts/test.sh)");
            None
        }
    }
}

/// A script in tests/moe/.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/moe").join(name)
}

/// `ckpt.py ARGS...`.
pub fn py(python: &str, args: &[&str]) -> Out {
    Command::new(python).arg(script("ckpt.py")).args(args).output().expect("run python").into()
}

/// A synthetic checkpoint of `family` in `dir` (`ckpt.py make`).
pub fn make(python: &str, family: &str, dir: &Path, extra: &[&str]) {
    let mut args = vec!["make", family, dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = py(python, &args);
    assert_eq!(o.code, 0, "make {family}: {}", o.stderr);
}

pub fn ok(o: &Out, what: &str) {
    assert_eq!(o.code, 0, "{what}: stdout {} stderr {}", o.stdout, o.stderr);
}
