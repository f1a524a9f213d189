//! The Hugging Face Hub's own words for a refused request. The Hub names
//! what went wrong in the `X-Error-Code` header of its answer (and says it
//! in `X-Error-Message`); `huggingface_hub` turns the four that matter here
//! into `RepositoryNotFoundError`, `GatedRepoError`, `RevisionNotFoundError`
//! and `EntryNotFoundError` (`hf_raise_for_status`), and so do we:
//!
//! | `X-Error-Code` | status | [`HubError`] |
//! |---|---|---|
//! | `RepoNotFound` (also spelt `RepositoryNotFound`) | 401 without a token, 404 with one (a private repository looks the same) | `RepositoryNotFound` |
//! | `GatedRepo` | 401 without a token, 403 with one not yet granted access | `GatedRepo` |
//! | `RevisionNotFound` | 404 | `RevisionNotFound` |
//! | `EntryNotFound` | 404 | `EntryNotFound` |
//!
//! `object_store` keeps only the status of a refused request, so the Hub's
//! store is built with a [`Connector`] whose client notes these headers
//! ([`Answers`]) before `object_store` sees the answer; a failed request
//! is then mapped from what the Hub said about that file
//! ([`HubRepo::error_for`]). Each message names the repository (and the
//! revision or file), the endpoint, and what to do; where a token was sent
//! it names where the token was read from, never the token. A refusal
//! without one of these codes (a mirror, a proxy) keeps the generic
//! status words of [`super::error::classify`].

use std::sync::{Arc, Mutex};

use object_store::ClientOptions;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpService, ReqwestConnector,
};

use super::error::Credential;

/// What the Hub said went wrong (`X-Error-Code`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HubErrorCode {
    RepoNotFound,
    GatedRepo,
    RevisionNotFound,
    EntryNotFound,
}

impl HubErrorCode {
    /// The code of an `X-Error-Code` value; `None` for the others.
    pub fn parse(header: &str) -> Option<HubErrorCode> {
        match header.trim() {
            "RepoNotFound" | "RepositoryNotFound" => Some(HubErrorCode::RepoNotFound),
            "GatedRepo" => Some(HubErrorCode::GatedRepo),
            "RevisionNotFound" => Some(HubErrorCode::RevisionNotFound),
            "EntryNotFound" => Some(HubErrorCode::EntryNotFound),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            HubErrorCode::RepoNotFound => "RepoNotFound",
            HubErrorCode::GatedRepo => "GatedRepo",
            HubErrorCode::RevisionNotFound => "RevisionNotFound",
            HubErrorCode::EntryNotFound => "EntryNotFound",
        }
    }
}

/// One refused request, as the Hub answered it.
#[derive(Clone, Debug)]
struct Answer {
    /// The request's path, percent-decoded.
    path: String,
    status: u16,
    code: HubErrorCode,
    /// `X-Error-Message`, one line.
    message: Option<String>,
}

/// The Hub's refusals of one store's requests, noted as they arrive.
#[derive(Clone, Default, Debug)]
pub struct Answers(Arc<Mutex<Vec<Answer>>>);

impl Answers {
    fn note(&self, answer: Answer) {
        if let Ok(mut v) = self.0.lock() {
            v.push(answer);
        }
    }

    /// What the Hub answered to the last request for `object` (its path in
    /// the repository).
    fn for_object(&self, object: &str) -> Option<Answer> {
        let suffix = format!("/{object}");
        let v = self.0.lock().ok()?;
        v.iter().rev().find(|a| a.path.ends_with(&suffix)).cloned()
    }
}

/// `%XX` sequences decoded (a request path as the client sent it).
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (bytes.get(i + 1).and_then(|&b| hex(b)), bytes.get(i + 2).and_then(|&b| hex(b)))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The HTTP client of the Hub's store: `reqwest`, as `object_store` would
/// use, noting the Hub's error headers.
#[derive(Debug)]
struct Noting {
    inner: HttpClient,
    answers: Answers,
}

#[async_trait::async_trait]
impl HttpService for Noting {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let path = percent_decoded(req.uri().path());
        let res = self.inner.execute(req).await?;
        if !res.status().is_success()
            && let Some(code) =
                res.headers().get("x-error-code").and_then(|v| v.to_str().ok()).and_then(HubErrorCode::parse)
        {
            let message = res
                .headers()
                .get("x-error-message")
                .and_then(|v| v.to_str().ok())
                .map(|m| m.lines().next().unwrap_or_default().trim().chars().take(300).collect::<String>())
                .filter(|m| !m.is_empty());
            self.answers.note(Answer { path, status: res.status().as_u16(), code, message });
        }
        Ok(res)
    }
}

/// Builds the Hub store's [`Noting`] client.
#[derive(Debug)]
pub struct Connector(pub Answers);

impl HttpConnector for Connector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Noting { inner, answers: self.0.clone() }))
    }
}

/// One Hub repository at one revision, and what the Hub answered about it.
#[derive(Clone, Debug)]
pub struct HubRepo {
    pub endpoint: String,
    pub repo: String,
    pub revision: String,
    pub answers: Answers,
}

impl HubRepo {
    /// The Hub's own error for the failed request of `object` (its path in
    /// the repository, `url` as messages show it), when the Hub said one.
    pub fn error_for(&self, url: &str, object: &str, credential: &Credential) -> Option<HubError> {
        let a = self.answers.for_object(object)?;
        let token = match credential {
            Credential::None { .. } => None,
            Credential::Env(vars) => Some(format!("the token read from {}", vars.join(", "))),
            Credential::File(p) => Some(format!("the token read from {}", p.display())),
        };
        let place = Place {
            url: url.to_string(),
            endpoint: self.endpoint.clone(),
            repo: self.repo.clone(),
            status: a.status,
            code: a.code,
            hub_says: a.message,
        };
        Some(match a.code {
            HubErrorCode::RepoNotFound => HubError::RepositoryNotFound { place, token },
            HubErrorCode::GatedRepo => HubError::GatedRepo { place, token },
            HubErrorCode::RevisionNotFound => HubError::RevisionNotFound { place, revision: self.revision.clone() },
            HubErrorCode::EntryNotFound => {
                HubError::EntryNotFound { place, revision: self.revision.clone(), file: object.to_string() }
            }
        })
    }
}

/// Where a Hub error happened: the file's URL, the endpoint and repository,
/// and what the Hub answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub url: String,
    pub endpoint: String,
    pub repo: String,
    pub status: u16,
    pub code: HubErrorCode,
    /// The Hub's `X-Error-Message`.
    pub hub_says: Option<String>,
}

impl Place {
    /// `(401 RepoNotFound)`, and what the Hub said.
    fn answered(&self) -> String {
        let mut s = format!("({} {})", self.status, self.code.as_str());
        if let Some(m) = &self.hub_says {
            s.push_str(&format!("; the Hub says: {m}"));
        }
        s
    }

    /// The repository's page on the Hub.
    fn page(&self) -> String {
        format!("{}/{}", self.endpoint, self.repo)
    }
}

/// A request the Hub refused, in its own terms.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HubError {
    /// No such repository at this endpoint, or a private one the token
    /// (if any) cannot see: the Hub does not tell the two apart.
    #[error(
        "{}: repository not found: `{}` at {} {}\n  help: check the repository name (hf://ORG/NAME); {}",
        place.url, place.repo, place.endpoint, place.answered(),
        match token {
            None => "if it is private, set HF_TOKEN (or run `hf auth login`) to a token that can read it".to_string(),
            Some(t) => format!("if it is private, {t} cannot read it: use a token of an account that can"),
        }
    )]
    RepositoryNotFound { place: Place, token: Option<String> },
    /// A gated repository the caller has not been granted access to.
    #[error(
        "{}: `{}` is a gated repository: access must be requested {}\n  help: {}",
        place.url, place.repo, place.answered(),
        match token {
            None => format!("request access on {}, then set HF_TOKEN (or run `hf auth login`) to a token of the account that has it", place.page()),
            Some(t) => format!("the account of {t} has not been granted access: request it on {} (and wait for approval)", place.page()),
        }
    )]
    GatedRepo { place: Place, token: Option<String> },
    /// The repository exists, the revision (branch, tag or commit) does not.
    #[error(
        "{}: revision `{revision}` not found in `{}` at {} {}\n  help: check the revision after `@` (a branch, tag or commit of {}; without `@` it is `main`)",
        place.url, place.repo, place.endpoint, place.answered(), place.page()
    )]
    RevisionNotFound { place: Place, revision: String },
    /// The repository and revision exist, the file does not.
    #[error(
        "{}: `{file}` not found in `{}` at revision `{revision}` ({}) {}\n  help: check the file name: {}/tree/{revision} lists the repository's files",
        place.url, place.repo, place.endpoint, place.answered(), place.page()
    )]
    EntryNotFound { place: Place, revision: String, file: String },
}

impl HubError {
    /// Only this file is missing (the repository and revision exist).
    pub fn is_entry_not_found(&self) -> bool {
        matches!(self, HubError::EntryNotFound { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_codes_huggingface_hub_knows() {
        assert_eq!(HubErrorCode::parse("RepoNotFound"), Some(HubErrorCode::RepoNotFound));
        assert_eq!(HubErrorCode::parse("RepositoryNotFound"), Some(HubErrorCode::RepoNotFound));
        assert_eq!(HubErrorCode::parse(" GatedRepo "), Some(HubErrorCode::GatedRepo));
        assert_eq!(HubErrorCode::parse("Whatever"), None);
    }

    #[test]
    fn decodes_request_paths() {
        assert_eq!(percent_decoded("/o/r/resolve/refs%2Fpr%2F1/a%20b.json"), "/o/r/resolve/refs/pr/1/a b.json");
        assert_eq!(percent_decoded("/a%2"), "/a%2");
        assert_eq!(percent_decoded("%zz"), "%zz");
    }

    #[test]
    fn maps_the_answer_for_that_file() {
        let answers = Answers::default();
        answers.note(Answer {
            path: "/o/r/resolve/main/config.json".into(),
            status: 404,
            code: HubErrorCode::EntryNotFound,
            message: None,
        });
        let hub = HubRepo { endpoint: "http://h".into(), repo: "o/r".into(), revision: "main".into(), answers };
        let none = Credential::None { help: String::new() };
        let e = hub.error_for("hf://o/r/config.json", "config.json", &none).unwrap();
        assert!(e.is_entry_not_found());
        assert!(e.to_string().starts_with("hf://o/r/config.json: `config.json` not found in `o/r` at revision `main`"));
        assert!(hub.error_for("hf://o/r/x.json", "x.json", &none).is_none());
    }
}
