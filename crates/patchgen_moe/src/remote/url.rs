//! Remote checkpoint addresses, parsed without touching the network:
//!
//! - `hf://ORG/REPO[@REVISION][/SUBDIR]`: the Hugging Face Hub's `resolve`
//!   URLs (`{HF_ENDPOINT}/{ORG}/{REPO}/resolve/{REVISION}/{SUBDIR}/{file}`,
//!   revision `main` by default; a revision holds no `/`);
//! - `s3://BUCKET[/PREFIX]`, `gs://BUCKET[/PREFIX]`,
//!   `az://CONTAINER[/PREFIX]`: object stores;
//! - `http://…/DIR`, `https://…/DIR`: a directory whose files sit side by side.
//!
//! A last segment ending in `.safetensors` names one file rather than a
//! directory. Anything else (a plain path) is not a URL: [`RemoteUrl::parse`]
//! returns `Ok(None)` for it.

use std::fmt;

/// Which kind of bucket store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bucket {
    S3,
    Gcs,
    Azure,
}

impl Bucket {
    pub fn scheme(self) -> &'static str {
        match self {
            Bucket::S3 => "s3",
            Bucket::Gcs => "gs",
            Bucket::Azure => "az",
        }
    }
}

/// Longest address accepted (what browsers and object stores handle).
pub const MAX_URL: usize = 2048;

/// Where a remote checkpoint lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// A Hub repository at a revision, under `subdir` (empty: the top).
    Hub { repo: String, revision: String, subdir: String },
    /// A bucket (container) and a prefix inside it (no leading or trailing `/`).
    Bucket { kind: Bucket, bucket: String, prefix: String },
    /// An `http(s)://` directory (no trailing `/`).
    Http { base: String },
}

/// A parsed remote address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteUrl {
    pub place: Place,
    /// The one `.safetensors` file named by the URL, if it names one.
    pub file: Option<String>,
}

/// A string that starts like a URL but cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{url}: {message}")]
pub struct UrlError {
    pub url: String,
    pub message: String,
}

impl RemoteUrl {
    /// `Ok(None)` when `s` is not a URL (a local path).
    pub fn parse(s: &str) -> Result<Option<RemoteUrl>, UrlError> {
        let Some((scheme, rest)) = s.split_once("://") else { return Ok(None) };
        let err = |m: &str| UrlError { url: s.to_string(), message: m.to_string() };
        // The HTTP stack refuses (and object_store then panics on) longer URIs.
        if s.len() > MAX_URL {
            let shown: String = s.chars().take(60).collect();
            return Err(UrlError {
                url: format!("{shown}…"),
                message: format!("{} bytes: an address is at most {MAX_URL}", s.len()),
            });
        }
        let rest = rest.trim_end_matches('/');
        // Git's rule for paths: no segment may climb, stay or be empty, so
        // no address reaches outside its repository, bucket or cache.
        if let Some(bad) = rest.split('/').find(|seg| {
            let climbs = |s: &str| matches!(s, "" | "." | "..");
            // `org/.@v1` too: the repository name before a revision.
            climbs(seg) || seg.split_once('@').is_some_and(|(n, r)| climbs(n) || climbs(r))
        }) {
            return Err(err(&format!(
                "the segment `{bad}` is empty, `.` or `..`: an address names its files without climbing"
            )));
        }
        if let Some(c) = rest.chars().find(|c| c.is_control()) {
            return Err(err(&format!("a control character ({c:?}) in the address")));
        }
        let (dir, file) = split_file(rest);
        let place = match scheme {
            "hf" => {
                let mut parts = dir.splitn(3, '/');
                let (Some(org), Some(name)) = (parts.next(), parts.next()) else {
                    return Err(err("expected hf://ORG/REPO[@REVISION][/SUBDIR]"));
                };
                let subdir = parts.next().unwrap_or("").to_string();
                let (name, revision) = match name.split_once('@') {
                    Some((n, r)) => (n, r.to_string()),
                    None => (name, "main".to_string()),
                };
                if org.is_empty() || name.is_empty() || revision.is_empty() {
                    return Err(err("expected hf://ORG/REPO[@REVISION][/SUBDIR]"));
                }
                let id_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
                if !org.chars().all(id_char) || !name.chars().all(id_char) {
                    return Err(err("a Hub repository id has only letters, digits, `-`, `_` and `.`"));
                }
                Place::Hub { repo: format!("{org}/{name}"), revision, subdir }
            }
            "s3" | "gs" | "az" => {
                let kind = match scheme {
                    "s3" => Bucket::S3,
                    "gs" => Bucket::Gcs,
                    _ => Bucket::Azure,
                };
                let (bucket, prefix) = dir.split_once('/').unwrap_or((dir, ""));
                if bucket.is_empty() {
                    return Err(err(&format!("expected {scheme}://BUCKET[/PREFIX]")));
                }
                if let Some(why) = bad_bucket(kind, bucket) {
                    return Err(err(&why));
                }
                Place::Bucket { kind, bucket: bucket.to_string(), prefix: prefix.to_string() }
            }
            "http" | "https" => {
                if dir.is_empty() {
                    return Err(err("expected http(s)://HOST/DIR"));
                }
                Place::Http { base: format!("{scheme}://{dir}") }
            }
            _ => {
                return Err(err(
                    "unknown scheme: use hf://, s3://, gs://, az://, http:// or https://, or a local path",
                ));
            }
        };
        Ok(Some(RemoteUrl { place, file }))
    }

    /// The URL of the directory (no trailing `/`), as shown in messages.
    pub fn dir(&self) -> String {
        match &self.place {
            Place::Hub { repo, revision, subdir } => {
                let rev = if revision == "main" { String::new() } else { format!("@{revision}") };
                let sub = if subdir.is_empty() { String::new() } else { format!("/{subdir}") };
                format!("hf://{repo}{rev}{sub}")
            }
            Place::Bucket { kind, bucket, prefix } => {
                let p = if prefix.is_empty() { String::new() } else { format!("/{prefix}") };
                format!("{}://{bucket}{p}", kind.scheme())
            }
            Place::Http { base } => base.clone(),
        }
    }

    /// The URL of `name` in the directory, as shown in messages.
    pub fn join(&self, name: &str) -> String {
        format!("{}/{name}", self.dir())
    }

    /// Whether the store can list a directory (buckets can; the Hub's
    /// `resolve` URLs and plain HTTP cannot).
    pub fn can_list(&self) -> bool {
        matches!(self.place, Place::Bucket { .. })
    }
}

impl fmt::Display for RemoteUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}", self.join(file)),
            None => write!(f, "{}", self.dir()),
        }
    }
}

/// Why `name` is not a valid bucket (container) name for `kind`: S3's
/// rules (3–63 of `a-z 0-9 . -`, a letter or digit at both ends, no `..`),
/// Cloud Storage's (also `_`; up to 222 with dots, 63 between them), or
/// Azure's containers (3–63 of `a-z 0-9 -`, no `--`, a letter or digit
/// at both ends).
fn bad_bucket(kind: Bucket, name: &str) -> Option<String> {
    let (allowed, max, rules): (&dyn Fn(char) -> bool, usize, &str) = match kind {
        Bucket::S3 => (
            &|c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-',
            63,
            "S3 bucket names are 3-63 lowercase letters, digits, `.` and `-`",
        ),
        Bucket::Gcs => (
            &|c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-' | '_'),
            if name.contains('.') { 222 } else { 63 },
            "Cloud Storage bucket names are 3-63 lowercase letters, digits, `.`, `-` and `_`",
        ),
        Bucket::Azure => (
            &|c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-',
            63,
            "Azure container names are 3-63 lowercase letters, digits and `-`",
        ),
    };
    let ends = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let ok = (3..=max).contains(&name.len())
        && name.chars().all(allowed)
        && ends(name.chars().next())
        && ends(name.chars().last())
        && !name.contains("..")
        && !(kind == Bucket::Azure && name.contains("--"))
        && !(kind == Bucket::Gcs && name.split('.').any(|p| p.len() > 63));
    (!ok).then(|| format!("`{name}` is not a valid bucket name: {rules}, starting and ending with a letter or digit"))
}

/// `(dir, Some(file))` when the last segment is a `.safetensors` file.
fn split_file(rest: &str) -> (&str, Option<String>) {
    match rest.rsplit_once('/') {
        Some((dir, last)) if last.ends_with(".safetensors") => (dir, Some(last.to_string())),
        _ => (rest, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> RemoteUrl {
        RemoteUrl::parse(s).unwrap().unwrap()
    }

    #[test]
    fn hub_urls() {
        assert_eq!(
            p("hf://deepseek-ai/DeepSeek-V3").place,
            Place::Hub { repo: "deepseek-ai/DeepSeek-V3".into(), revision: "main".into(), subdir: String::new() }
        );
        let u = p("hf://org/repo@v1.0/sub/dir/");
        assert_eq!(u.place, Place::Hub { repo: "org/repo".into(), revision: "v1.0".into(), subdir: "sub/dir".into() });
        assert_eq!(u.join("config.json"), "hf://org/repo@v1.0/sub/dir/config.json");
        let f = p("hf://org/repo/model-00001-of-00002.safetensors");
        assert_eq!(f.file.as_deref(), Some("model-00001-of-00002.safetensors"));
        assert_eq!(f.to_string(), "hf://org/repo/model-00001-of-00002.safetensors");
        assert!(RemoteUrl::parse("hf://justone").is_err());
        assert!(RemoteUrl::parse("hf://org/@rev").is_err());
    }

    #[test]
    fn buckets_http_and_paths() {
        assert_eq!(
            p("s3://bkt/some/prefix").place,
            Place::Bucket { kind: Bucket::S3, bucket: "bkt".into(), prefix: "some/prefix".into() }
        );
        assert_eq!(
            p("gs://bkt").place,
            Place::Bucket { kind: Bucket::Gcs, bucket: "bkt".into(), prefix: String::new() }
        );
        assert_eq!(p("az://cnt/x").dir(), "az://cnt/x");
        assert_eq!(p("https://host:8080/a/b/").place, Place::Http { base: "https://host:8080/a/b".into() });
        assert!(p("s3://bkt/p").can_list() && !p("http://h/d").can_list());
        assert_eq!(RemoteUrl::parse("./ckpt").unwrap(), None);
        assert_eq!(RemoteUrl::parse("/abs/model.safetensors").unwrap(), None);
        // Climbing, empty segments and invalid buckets are refused before any request.
        for bad in [
            "hf://../x",
            "hf://org/repo@..",
            // Found by the fixed-time fuzz loop: the repository name `.` before a revision.
            "hf://org/.@v1.0/model.safetensors",
            "hf://org/..@main",
            "hf://org/repo/../../../..",
            "hf://org//repo",
            "hf://org/re po",
            "s3://b ucket/x",
            "s3://bucket/a/./b",
            "s3://ab",
            "s3://Bucket/x",
            "gs://-b/x",
            "az://a--b/x",
            "https://h/a/../b",
            &format!("hf://{}/x", "o".repeat(3000)),
        ] {
            assert!(RemoteUrl::parse(bad).is_err(), "{bad}");
        }
        assert!(RemoteUrl::parse("gs://my_bucket.example/x").is_ok());
        let e = RemoteUrl::parse("ftp://x/y").unwrap_err();
        assert!(e.to_string().starts_with("ftp://x/y: unknown scheme"), "{e}");
    }
}
