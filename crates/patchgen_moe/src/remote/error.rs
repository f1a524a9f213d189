//! What can go wrong with a remote checkpoint, each error naming the file
//! (its URL) and, for a refused credential, which variable or file it was
//! read from — never the credential itself.
//!
//! [`classify`] turns an `object_store` error into one of these: its typed
//! kinds first (`NotFound`, `Unauthenticated`, `PermissionDenied`,
//! `NotSupported` for a range the server ignored), then its source chain
//! (`HttpError` kinds for timeouts and dropped bodies, the status the
//! generic HTTP store leaves only in its message).

use object_store::client::{HttpError, HttpErrorKind};

/// Where the credential sent to a store came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credential {
    /// No credential was sent.
    None { help: String },
    /// Read from these environment variables.
    Env(Vec<String>),
    /// Read from this file.
    File(std::path::PathBuf),
}

impl Credential {
    fn refused(&self) -> String {
        match self {
            Credential::None { help } => format!("no credential was sent: {help}"),
            Credential::Env(vars) => format!("the credential read from {} was refused", vars.join(", ")),
            Credential::File(p) => format!("the token read from {} was refused", p.display()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("{url}: not found (404)")]
    NotFound { url: String },
    #[error("{url}: {status}: {}", credential.refused())]
    Denied { url: String, status: &'static str, credential: Credential },
    #[error(
        "{url}: the server ignored the Range request (it answered 200 with the whole file): refusing to download it\n  help: serve the checkpoint from a server that honours Range (the Hub, S3, nginx)"
    )]
    RangeIgnored { url: String },
    #[error("{url}: the body ended early (connection dropped or truncated): {detail}")]
    Truncated { url: String, detail: String },
    #[error("{url}: timed out: {detail}\n  help: PATCHGEN_REMOTE_TIMEOUT=SECONDS raises the limit per request")]
    Timeout { url: String, detail: String },
    #[error("{url}: --offline: {why}")]
    Offline { url: String, why: String },
    #[error("{url}: {message}")]
    Other { url: String, message: String },
    /// The request cannot be carried out as asked (DST inside SRC, a DST
    /// in use, a read-only DST): a usage error, before any transfer.
    #[error("{0}")]
    Request(String),
    /// A checkpoint error once the bytes arrived (a malformed header, an
    /// index naming missing files, ...), already located.
    #[error("{0}")]
    Checkpoint(String),
    /// The Hub refused the request and said why (`X-Error-Code`).
    #[error("{0}")]
    Hub(Box<super::hub::HubError>),
}

impl RemoteError {
    /// The file is not there (a plain 404, or the Hub's `EntryNotFound`),
    /// as opposed to a repository, revision or access problem.
    pub fn is_not_found(&self) -> bool {
        match self {
            RemoteError::NotFound { .. } => true,
            RemoteError::Hub(h) => h.is_entry_not_found(),
            _ => false,
        }
    }
}

impl From<crate::error::MoeError> for RemoteError {
    /// A local-file error met on the way (a source or destination on disk,
    /// a header once its bytes arrived): already located.
    fn from(e: crate::error::MoeError) -> RemoteError {
        RemoteError::Checkpoint(e.to_string())
    }
}

/// The `object_store` error `e` met while reading or writing `url`.
pub fn classify(url: &str, e: object_store::Error, credential: &Credential) -> RemoteError {
    let url = url.to_string();
    let denied = |status| RemoteError::Denied { url: url.clone(), status, credential: credential.clone() };
    match &e {
        object_store::Error::NotFound { .. } => return RemoteError::NotFound { url },
        object_store::Error::Unauthenticated { .. } => return denied("401 Unauthorized"),
        object_store::Error::PermissionDenied { .. } => return denied("403 Forbidden"),
        _ => {}
    }
    let mut text = String::new();
    let mut kind = None;
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(err) = cur {
        if let Some(h) = err.downcast_ref::<HttpError>() {
            kind = kind.or(Some(h.kind()));
        }
        text.push_str(&err.to_string());
        text.push('\n');
        cur = err.source();
    }
    if text.contains("Range request not supported") || text.contains("non-partial response") {
        return RemoteError::RangeIgnored { url };
    }
    if text.contains("status code: 401") {
        return denied("401 Unauthorized");
    }
    if text.contains("status code: 403") {
        return denied("403 Forbidden");
    }
    if text.contains("status code: 404") {
        return RemoteError::NotFound { url };
    }
    let detail = e.to_string();
    match kind {
        Some(HttpErrorKind::Timeout) => RemoteError::Timeout { url, detail },
        Some(HttpErrorKind::Interrupted | HttpErrorKind::Decode) => RemoteError::Truncated { url, detail },
        _ if text.contains("error decoding response body") || text.contains("end of file before message length") => {
            RemoteError::Truncated { url, detail }
        }
        _ => RemoteError::Other { url, message: detail },
    }
}
