//! The live python3 as an independent implementation: run a program that
//! reads one JSON document on stdin and writes one on stdout (shared by the
//! differential tests).

use std::io::{Read, Write};
use std::process::{Command, Stdio};

/// Run `python3 -c program` with `input` as JSON on stdin; its stdout, parsed.
/// stdin is written from a thread, so a large output cannot deadlock the pipe.
pub fn run_python<I: serde::Serialize + ?Sized, T: serde::de::DeserializeOwned>(program: &str, input: &I) -> T {
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 is needed for the differential tests");
    let mut stdin = child.stdin.take().unwrap();
    let payload = serde_json::to_vec(input).unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&payload).unwrap());
    let mut stdout = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut stdout).unwrap();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success(), "python3 failed");
    serde_json::from_slice(&stdout).expect("json from python3")
}
