//! The base protocol over stdio: `Content-Length` framed JSON-RPC messages
//! (`lsp_server::Message`), read on one thread and written on another. A
//! message that is not valid JSON-RPC (bad JSON, a missing or absurd
//! `Content-Length`) is skipped and reported to the loop as a
//! [`MALFORMED`] notification, never the end of the server; the end of
//! stdin is.

use std::io::{BufRead, Read, Write};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use lsp_server::{Message, Notification};

/// The method of the notification a skipped message becomes (`params`:
/// `{"reason": ...}`); internal, never sent to the client.
pub const MALFORMED: &str = "$/patchgen/malformedMessage";

/// Larger bodies are skipped.
const MAX_BODY: usize = 64 << 20;

/// The writer thread: joined at the end so every response is flushed.
pub struct Writer(JoinHandle<()>);

impl Writer {
    pub fn join(self) {
        let _ = self.0.join();
    }
}

/// Channels to and from stdin/stdout.
pub fn stdio() -> (Sender<Message>, Receiver<Message>, Writer) {
    let (to_loop, from_stdin) = crossbeam_channel::unbounded::<Message>();
    let (to_stdout, from_loop) = crossbeam_channel::unbounded::<Message>();
    // Not joined: it may be blocked reading stdin when the server exits.
    std::thread::Builder::new()
        .name("lsp-reader".into())
        .spawn(move || {
            let stdin = std::io::stdin();
            let mut input = stdin.lock();
            read_loop(&mut input, &to_loop);
        })
        .expect("spawn the reader thread");
    let writer = std::thread::Builder::new()
        .name("lsp-writer".into())
        .spawn(move || {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            for msg in from_loop {
                if msg.write(&mut out).and_then(|()| out.flush()).is_err() {
                    break;
                }
            }
        })
        .expect("spawn the writer thread");
    (to_stdout, from_stdin, Writer(writer))
}

/// Read messages from `input` until it ends (or the loop is gone).
pub fn read_loop(input: &mut impl BufRead, to_loop: &Sender<Message>) {
    loop {
        let msg = match read_message(input) {
            Ok(None) | Err(_) => return,
            Ok(Some(Ok(msg))) => msg,
            Ok(Some(Err(reason))) => Message::Notification(Notification::new(
                MALFORMED.to_string(),
                serde_json::json!({ "reason": reason.0 }),
            )),
        };
        if to_loop.send(msg).is_err() {
            return;
        }
    }
}

/// Why a framed message is skipped (the reading goes on with the next).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Skipped(pub String);

/// One framed message: `None` at the end of the input, `Some(Err)` for a
/// message that is skipped (with why).
pub fn read_message(input: &mut impl BufRead) -> std::io::Result<Option<Result<Message, Skipped>>> {
    let mut length: Option<usize> = None;
    let mut bad_header: Option<String> = None;
    let mut saw_header = false;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if saw_header {
                break;
            }
            continue;
        }
        saw_header = true;
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                match value.trim().parse::<usize>() {
                    Ok(n) => length = Some(n),
                    Err(_) => bad_header = Some(format!("bad Content-Length `{}`", value.trim())),
                }
            }
        } else {
            bad_header = Some(format!("bad header line `{line}`"));
        }
    }
    let Some(length) = length else {
        return Ok(Some(Err(Skipped(bad_header.unwrap_or_else(|| "no Content-Length header".to_string())))));
    };
    if length > MAX_BODY {
        std::io::copy(&mut input.take(length as u64), &mut std::io::sink())?;
        return Ok(Some(Err(Skipped(format!("a {length}-byte message is too large")))));
    }
    let mut body = vec![0u8; length];
    input.read_exact(&mut body)?;
    if let Some(why) = bad_header {
        return Ok(Some(Err(Skipped(why))));
    }
    Ok(Some(serde_json::from_slice::<Message>(&body).map_err(|e| Skipped(format!("not a JSON-RPC message: {e}")))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    #[test]
    fn bad_messages_are_skipped_and_reading_goes_on() {
        let ok = r#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#;
        let input = format!("{}{}Content-Length: x\r\n\r\n{}", frame("{not json"), frame(ok), frame(ok));
        let mut reader = std::io::BufReader::new(input.as_bytes());
        assert!(matches!(read_message(&mut reader), Ok(Some(Err(why))) if why.0.starts_with("not a JSON-RPC")));
        assert!(matches!(read_message(&mut reader), Ok(Some(Ok(Message::Request(r)))) if r.method == "shutdown"));
        // A header without a usable length is skipped; the next message is read.
        assert!(matches!(read_message(&mut reader), Ok(Some(Err(why))) if why.0.contains("Content-Length")));
        assert!(matches!(read_message(&mut reader), Ok(Some(Ok(Message::Request(r)))) if r.method == "shutdown"));
        assert!(matches!(read_message(&mut reader), Ok(None)));
    }
}
