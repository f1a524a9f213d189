//! The base protocol over stdio: `Content-Length` framed JSON-RPC messages
//! (`lsp_server::Message`), read on one thread and written on another. A
//! message that is not valid JSON-RPC (bad JSON, a missing or absurd
//! `Content-Length`) is skipped and reported to the loop as a
//! [`MALFORMED`] notification (which answers the client with a JSON-RPC
//! parse error, [`PARSE_ERROR`]), never the end of the server; the end of
//! stdin is.
//!
//! Reading finds the frames again after a wrong `Content-Length`: a header
//! line with junk before `Content-Length:` (the rest of a body that was
//! longer than declared) is read from the header on, and a body that holds
//! a header line (`Content-Length: N` and a line break, which no JSON text
//! can hold: its strings cannot contain a raw line break) was shorter than
//! declared: it ends there and the header is read again.

use std::io::{BufRead, Read, Write};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use lsp_server::{Message, Notification};

/// The method of the notification a skipped message becomes (`params`:
/// `{"reason": ...}`); internal, never sent to the client.
pub const MALFORMED: &str = "$/patchgen/malformedMessage";

/// Sent to the writer to answer a skipped message: written as a JSON-RPC
/// parse error response (`id: null`, code -32700; `params`: `{"reason": ...}`).
pub const PARSE_ERROR: &str = "$/patchgen/parseError";

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
            let mut input = Framed::new(stdin.lock());
            read_loop(&mut input, &to_loop);
        })
        .expect("spawn the reader thread");
    let writer = std::thread::Builder::new()
        .name("lsp-writer".into())
        .spawn(move || {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            for msg in from_loop {
                let written = match &msg {
                    Message::Notification(n) if n.method == PARSE_ERROR => write_parse_error(&mut out, &n.params),
                    _ => msg.write(&mut out),
                };
                if written.and_then(|()| out.flush()).is_err() {
                    break;
                }
            }
        })
        .expect("spawn the writer thread");
    (to_stdout, from_stdin, Writer(writer))
}

/// A JSON-RPC parse error response for a skipped message (its id cannot be known).
fn write_parse_error(out: &mut impl Write, params: &serde_json::Value) -> std::io::Result<()> {
    let reason = params.get("reason").and_then(|r| r.as_str()).unwrap_or("malformed message");
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": -32700, "message": format!("patchgen server: skipped a message: {reason}") },
    })
    .to_string();
    write!(out, "Content-Length: {}\r\n\r\n{body}", body.len())
}

/// A reader that can put bytes back (the start of a frame found inside a
/// body that was shorter than its `Content-Length` said).
pub struct Framed<R> {
    inner: R,
    pending: Vec<u8>,
    at: usize,
}

impl<R: BufRead> Framed<R> {
    pub fn new(inner: R) -> Self {
        Framed { inner, pending: Vec::new(), at: 0 }
    }

    /// Read `bytes` again before the rest of the input.
    fn unread(&mut self, bytes: &[u8]) {
        let mut next = bytes.to_vec();
        next.extend_from_slice(&self.pending[self.at..]);
        self.pending = next;
        self.at = 0;
    }
}

impl<R: BufRead> Read for Framed<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = {
            let have = self.fill_buf()?;
            let n = have.len().min(buf.len());
            buf[..n].copy_from_slice(&have[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Framed<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.at < self.pending.len() {
            return Ok(&self.pending[self.at..]);
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        if self.at < self.pending.len() {
            self.at += n;
            if self.at >= self.pending.len() {
                self.pending.clear();
                self.at = 0;
            }
        } else {
            self.inner.consume(n);
        }
    }
}

/// Where a header (`Content-Length:`, digits, a line break) starts in `bytes`.
fn header_in(bytes: &[u8]) -> Option<usize> {
    const NAME: &[u8] = b"content-length:";
    (0..bytes.len().saturating_sub(NAME.len())).find(|&i| {
        bytes[i..i + NAME.len()].eq_ignore_ascii_case(NAME) && {
            let rest = &bytes[i + NAME.len()..];
            let digits_at = rest.iter().position(|b| *b != b' ' && *b != b'\t').unwrap_or(rest.len());
            let rest = &rest[digits_at..];
            let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            n > 0 && matches!(rest.get(n), Some(b'\r' | b'\n'))
        }
    })
}

/// Read messages from `input` until it ends (or the loop is gone).
pub fn read_loop<R: BufRead>(input: &mut Framed<R>, to_loop: &Sender<Message>) {
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
pub fn read_message<R: BufRead>(input: &mut Framed<R>) -> std::io::Result<Option<Result<Message, Skipped>>> {
    let mut length: Option<usize> = None;
    let mut bad_header: Option<String> = None;
    let mut saw_header = false;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        // The tail of a body longer than declared, then a header: resync.
        let mut line = line.as_str();
        if let Some(at) = header_in(line.as_bytes()).filter(|&at| at > 0) {
            line = &line[at..];
            length = None;
            bad_header = None;
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
    let mut body = Vec::with_capacity(length.min(1 << 20));
    while body.len() < length {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let n = chunk.len().min(length - body.len());
        let from = body.len().saturating_sub(64);
        body.extend_from_slice(&chunk[..n]);
        input.consume(n);
        // The next frame's header inside this body: the declared length was too long.
        if let Some(at) = header_in(&body[from..]).map(|at| from + at) {
            input.unread(&body[at..]);
            return Ok(Some(Err(Skipped(format!(
                "Content-Length {length} is longer than the message ({at} bytes before the next header)"
            )))));
        }
    }
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
        let mut reader = Framed::new(std::io::BufReader::new(input.as_bytes()));
        assert!(matches!(read_message(&mut reader), Ok(Some(Err(why))) if why.0.starts_with("not a JSON-RPC")));
        assert!(matches!(read_message(&mut reader), Ok(Some(Ok(Message::Request(r)))) if r.method == "shutdown"));
        // A header without a usable length is skipped; the next message is read.
        assert!(matches!(read_message(&mut reader), Ok(Some(Err(why))) if why.0.contains("Content-Length")));
        assert!(matches!(read_message(&mut reader), Ok(Some(Ok(Message::Request(r)))) if r.method == "shutdown"));
        assert!(matches!(read_message(&mut reader), Ok(None)));
    }

    #[test]
    fn wrong_lengths_resync_on_the_next_header() {
        let ok = r#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#;
        // Too short: the rest of the body is glued to the next header.
        let short = format!("Content-Length: 5\r\n\r\n{ok}{}", frame(ok));
        // Too long: the body runs into the next frame.
        let long = format!("Content-Length: 500\r\n\r\n{ok}{}", frame(ok));
        // Not a number: the body is left in the stream.
        let bad = format!("Content-Length: x\r\n\r\n{ok}{}", frame(ok));
        for input in [short, long, bad] {
            let mut reader = Framed::new(std::io::BufReader::new(input.as_bytes()));
            assert!(matches!(read_message(&mut reader), Ok(Some(Err(_)))), "{input}");
            assert!(
                matches!(read_message(&mut reader), Ok(Some(Ok(Message::Request(r)))) if r.method == "shutdown"),
                "{input}"
            );
            assert!(matches!(read_message(&mut reader), Ok(None)), "{input}");
        }
    }
}
