//! One remote directory behind a synchronous face: an `object_store` store
//! (HTTP for the Hub and `http(s)://`, S3, GCS, Azure) with the retry and
//! timeout policy, the credential read from the environment, and counters of
//! the bytes moved. Async calls run on one small process-wide tokio runtime
//! (2 worker threads) that callers reach through [`block_on`]; nothing
//! async leaks out of `moe::remote`.
//!
//! Environment (the [`Env`] snapshot the caller passes; nothing here reads
//! the process's): the Hub's `HF_ENDPOINT` (default `https://huggingface.co`),
//! `HF_TOKEN`, else the file `HF_TOKEN_PATH`, else `$HF_HOME/token`, else
//! `~/.cache/huggingface/token` (sent as `Authorization: Bearer`); the
//! stores' own variables as `object_store`'s `from_env` would read them
//! (`AWS_*`, `GOOGLE_*` and `SERVICE_ACCOUNT`, `AZURE_*` and
//! `IDENTITY_ENDPOINT`; [`from_snapshot`]); `PATCHGEN_REMOTE_TIMEOUT` (seconds per
//! request, default 120) and `PATCHGEN_REMOTE_RETRIES` (default 10, with
//! exponential backoff from 100 ms) for 5xx answers, dropped connections
//! and timeouts.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use object_store::path::Path as ObjPath;
use object_store::{
    BackoffConfig, ClientConfigKey, ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload,
    RetryConfig, WriteMultipart,
};

use super::error::{Credential, RemoteError, classify};
use super::hub::{self, HubRepo};
use super::url::{Bucket, Place, RemoteUrl};
use patchgen_core::settings::Env;

/// The process-wide runtime of remote transfers.
fn runtime() -> Result<&'static tokio::runtime::Runtime, RemoteError> {
    static RT: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("patchgen-remote")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| RemoteError::Other { url: String::new(), message: format!("cannot start the I/O runtime: {e}") })
}

/// Run `f` to completion on the remote runtime (callable from any
/// non-runtime thread, several at once).
pub fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, RemoteError> {
    Ok(runtime()?.block_on(f))
}

/// Bytes and requests, counted as they complete.
#[derive(Default, Debug)]
pub struct Stats {
    pub bytes_read: AtomicU64,
    pub reads: AtomicU64,
    pub bytes_written: AtomicU64,
}

/// A remote directory (cheap to clone: the clones share the store and the counters).
#[derive(Clone)]
pub struct Remote {
    pub url: RemoteUrl,
    store: Arc<dyn ObjectStore>,
    prefix: String,
    credential: Credential,
    /// On the Hub: the repository, and what the Hub said about refused requests.
    hub: Option<Arc<HubRepo>>,
    pub stats: Arc<Stats>,
}

/// A variable of `env` that is set to something other than blanks.
fn var(env: &Env, name: &str) -> Option<String> {
    env.var(name).filter(|v| !v.trim().is_empty()).map(str::to_string)
}

/// A whole-number `PATCHGEN_REMOTE_*` setting, read through the settings.
fn setting(
    read: fn(&Env) -> Result<Option<u64>, patchgen_core::settings::SettingsError>,
    env: &Env,
) -> Result<Option<u64>, RemoteError> {
    read(env).map_err(|e| RemoteError::Other { url: String::new(), message: e.to_string() })
}

/// A store builder configured as its `from_env()` configures it from the
/// process environment, from `env` instead: every `<prefix>*` variable
/// whose lower-cased name is one of the store's config keys.
pub(crate) fn from_snapshot<B, K: std::str::FromStr>(
    builder: B,
    env: &Env,
    prefix: &str,
    with: impl Fn(B, K, &str) -> B,
) -> B {
    env.with_prefix(prefix).fold(builder, |b, (name, value)| match name.to_ascii_lowercase().parse() {
        Ok(key) => with(b, key, value),
        Err(_) => b,
    })
}

/// The Hub token and where it came from.
fn hub_token(env: &Env) -> (Option<String>, Credential) {
    let env = |name: &str| var(env, name);
    if let Some(t) = env("HF_TOKEN") {
        return (Some(t), Credential::Env(vec!["HF_TOKEN".into()]));
    }
    let file = env("HF_TOKEN_PATH").map(PathBuf::from).unwrap_or_else(|| {
        let home = env("HF_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env("HOME").unwrap_or_default()).join(".cache").join("huggingface"));
        home.join("token")
    });
    match std::fs::read_to_string(&file) {
        Ok(t) if !t.trim().is_empty() => (Some(t.trim().to_string()), Credential::File(file)),
        _ => (
            None,
            Credential::None { help: format!("set HF_TOKEN, or log in (`hf auth login` writes {})", file.display()) },
        ),
    }
}

/// Which of `vars` are set, as the credential a bucket store read.
fn env_credential(env: &Env, vars: &[&str], help: &str) -> Credential {
    let set: Vec<String> = vars.iter().filter(|v| var(env, v).is_some()).map(|v| v.to_string()).collect();
    if set.is_empty() { Credential::None { help: help.into() } } else { Credential::Env(set) }
}

impl Remote {
    /// A store for `url` (no request is made), configured and
    /// authenticated from `env`.
    pub fn connect(url: &RemoteUrl, env: &Env) -> Result<Remote, RemoteError> {
        runtime()?;
        let dir = url.dir();
        let bad = |e: object_store::Error| RemoteError::Other { url: dir.clone(), message: e.to_string() };
        let timeout = Duration::from_secs(setting(patchgen_core::settings::remote_timeout_secs, env)?.unwrap_or(120));
        let retry = RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(15),
                base: 2.0,
            },
            max_retries: setting(patchgen_core::settings::remote_retries, env)?.unwrap_or(10) as usize,
            retry_timeout: Duration::from_secs(180).max(timeout),
        };
        // Buckets keep the client settings `from_env` read (AWS_ALLOW_HTTP,
        // proxies, ...) and get only the timeouts; HTTP stores get these options.
        let secs = format!("{}s", timeout.as_secs());
        let options = ClientOptions::new().with_timeout(timeout).with_connect_timeout(Duration::from_secs(10));
        let mut hub_repo = None;
        let (store, prefix, credential): (Arc<dyn ObjectStore>, String, Credential) = match &url.place {
            Place::Hub { repo, revision, subdir } => {
                let endpoint = var(env, "HF_ENDPOINT")
                    .unwrap_or_else(|| "https://huggingface.co".into())
                    .trim_end_matches('/')
                    .to_string();
                let (token, credential) = hub_token(env);
                let mut headers = http::HeaderMap::new();
                if let Some(t) = token {
                    let mut v =
                        http::HeaderValue::from_str(&format!("Bearer {t}")).map_err(|_| RemoteError::Other {
                            url: dir.clone(),
                            message: "the Hub token holds characters a header cannot carry".into(),
                        })?;
                    v.set_sensitive(true);
                    headers.insert(http::header::AUTHORIZATION, v);
                }
                let base = format!("{endpoint}/{repo}/resolve/{revision}");
                let options = options.with_default_headers(headers).with_allow_http(endpoint.starts_with("http://"));
                let answers = hub::Answers::default();
                let store = object_store::http::HttpBuilder::new()
                    .with_url(base)
                    .with_client_options(options)
                    .with_retry(retry)
                    .with_http_connector(hub::Connector(answers.clone()))
                    .build()
                    .map_err(bad)?;
                hub_repo =
                    Some(Arc::new(HubRepo { endpoint, repo: repo.clone(), revision: revision.clone(), answers }));
                (Arc::new(store), subdir.clone(), credential)
            }
            Place::Http { base } => {
                let store = object_store::http::HttpBuilder::new()
                    .with_url(base.clone())
                    .with_client_options(options.with_allow_http(base.starts_with("http://")))
                    .with_retry(retry)
                    .build()
                    .map_err(bad)?;
                (Arc::new(store), String::new(), Credential::None { help: "plain HTTP sends no credential".into() })
            }
            Place::Bucket { kind: Bucket::S3, bucket, prefix } => {
                let store = from_snapshot(object_store::aws::AmazonS3Builder::new(), env, "AWS_", |b, k, v| {
                    b.with_config(k, v)
                })
                .with_bucket_name(bucket)
                .with_config(object_store::aws::AmazonS3ConfigKey::Client(ClientConfigKey::Timeout), &secs)
                .with_config(object_store::aws::AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout), "10s")
                .with_retry(retry)
                .build()
                .map_err(bad)?;
                let cred = env_credential(
                    env,
                    &["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"],
                    "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or run where an instance role applies)",
                );
                (Arc::new(store), prefix.clone(), cred)
            }
            Place::Bucket { kind: Bucket::Gcs, bucket, prefix } => {
                let mut builder = object_store::gcp::GoogleCloudStorageBuilder::new();
                if let Some(path) = env.var("SERVICE_ACCOUNT") {
                    builder = builder.with_service_account_path(path);
                }
                let store = from_snapshot(builder, env, "GOOGLE_", |b, k, v| b.with_config(k, v))
                    .with_bucket_name(bucket)
                    .with_config(object_store::gcp::GoogleConfigKey::Client(ClientConfigKey::Timeout), &secs)
                    .with_config(object_store::gcp::GoogleConfigKey::Client(ClientConfigKey::ConnectTimeout), "10s")
                    .with_retry(retry)
                    .build()
                    .map_err(bad)?;
                let cred = env_credential(
                    env,
                    &["GOOGLE_SERVICE_ACCOUNT", "GOOGLE_SERVICE_ACCOUNT_PATH", "GOOGLE_APPLICATION_CREDENTIALS"],
                    "set GOOGLE_APPLICATION_CREDENTIALS (or GOOGLE_SERVICE_ACCOUNT)",
                );
                (Arc::new(store), prefix.clone(), cred)
            }
            Place::Bucket { kind: Bucket::Azure, bucket, prefix } => {
                let mut builder =
                    from_snapshot(object_store::azure::MicrosoftAzureBuilder::new(), env, "AZURE_", |b, k, v| {
                        b.with_config(k, v)
                    });
                if let Some(endpoint) = env.var("IDENTITY_ENDPOINT") {
                    builder = builder.with_msi_endpoint(endpoint);
                }
                let store = builder
                    .with_container_name(bucket)
                    .with_config(object_store::azure::AzureConfigKey::Client(ClientConfigKey::Timeout), &secs)
                    .with_config(object_store::azure::AzureConfigKey::Client(ClientConfigKey::ConnectTimeout), "10s")
                    .with_retry(retry)
                    .build()
                    .map_err(bad)?;
                let cred = env_credential(
                    env,
                    &[
                        "AZURE_STORAGE_ACCOUNT_KEY",
                        "AZURE_STORAGE_SAS_KEY",
                        "AZURE_CLIENT_SECRET",
                        "AZURE_STORAGE_TOKEN",
                    ],
                    "set AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY (or a SAS or client secret)",
                );
                (Arc::new(store), prefix.clone(), cred)
            }
        };
        Ok(Remote { url: url.clone(), store, prefix, credential, hub: hub_repo, stats: Arc::default() })
    }

    fn path(&self, name: &str) -> ObjPath {
        if self.prefix.is_empty() { ObjPath::from(name) } else { ObjPath::from(format!("{}/{name}", self.prefix)) }
    }

    /// The URL of `name`, as messages show it.
    pub fn display(&self, name: &str) -> String {
        self.url.join(name)
    }

    fn fault(&self, name: &str, e: object_store::Error) -> RemoteError {
        self.hub_error(name).unwrap_or_else(|| classify(&self.display(name), e, &self.credential))
    }

    /// What the Hub said about the refused request of `name`, in its words
    /// (`hub`), when it said something.
    fn hub_error(&self, name: &str) -> Option<RemoteError> {
        let hub = self.hub.as_ref()?;
        let e = hub.error_for(&self.display(name), self.path(name).as_ref(), &self.credential)?;
        Some(RemoteError::Hub(Box::new(e)))
    }

    fn count(&self, n: usize) {
        self.stats.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
        self.stats.reads.fetch_add(1, Ordering::Relaxed);
    }

    fn short(&self, name: &str, want: u64, got: usize) -> RemoteError {
        RemoteError::Truncated { url: self.display(name), detail: format!("{got} bytes received, {want} expected") }
    }

    /// The whole of a small file; `None` when it does not exist.
    pub async fn get_all(&self, name: &str) -> Result<Option<Bytes>, RemoteError> {
        let r = match self.store.get(&self.path(name)).await {
            Ok(r) => r,
            // Only the file is missing, not the repository or the revision.
            Err(object_store::Error::NotFound { .. }) => match self.hub_error(name) {
                Some(e) if !e.is_not_found() => return Err(e),
                _ => return Ok(None),
            },
            Err(e) => return Err(self.fault(name, e)),
        };
        let size = r.meta.size;
        let bytes = r.bytes().await.map_err(|e| self.fault(name, e))?;
        self.count(bytes.len());
        if bytes.len() as u64 != size {
            return Err(self.short(name, size, bytes.len()));
        }
        Ok(Some(bytes))
    }

    /// Bytes `range` of `name`, exactly.
    pub async fn read_range(&self, name: &str, range: Range<u64>) -> Result<Bytes, RemoteError> {
        let want = range.end - range.start;
        if want == 0 {
            return Ok(Bytes::new());
        }
        let bytes = self.store.get_range(&self.path(name), range).await.map_err(|e| self.fault(name, e))?;
        self.count(bytes.len());
        if bytes.len() as u64 != want {
            return Err(self.short(name, want, bytes.len()));
        }
        Ok(bytes)
    }

    /// Bytes `range` of `name`, exactly, as the chunks the connection
    /// delivered (no contiguous buffer of the whole range is allocated).
    pub async fn read_chunks(&self, name: &str, range: Range<u64>) -> Result<Vec<Bytes>, RemoteError> {
        use futures::TryStreamExt;
        let want = range.end - range.start;
        if want == 0 {
            return Ok(Vec::new());
        }
        let opts = GetOptions { range: Some(GetRange::Bounded(range)), ..Default::default() };
        let r = self.store.get_opts(&self.path(name), opts).await.map_err(|e| self.fault(name, e))?;
        let chunks: Vec<Bytes> = r.into_stream().try_collect().await.map_err(|e| self.fault(name, e))?;
        let got: usize = chunks.iter().map(Bytes::len).sum();
        self.count(got);
        if got as u64 != want {
            return Err(self.short(name, want, got));
        }
        Ok(chunks)
    }

    /// The first `max` bytes of `name` (fewer if it is shorter) and its size,
    /// in one ranged request.
    pub async fn read_head(&self, name: &str, max: u64) -> Result<(Bytes, u64), RemoteError> {
        let opts = GetOptions { range: Some(GetRange::Bounded(0..max)), ..Default::default() };
        let r = self.store.get_opts(&self.path(name), opts).await.map_err(|e| self.fault(name, e))?;
        let size = r.meta.size;
        let bytes = r.bytes().await.map_err(|e| self.fault(name, e))?;
        self.count(bytes.len());
        if bytes.len() as u64 != size.min(max) {
            return Err(self.short(name, size.min(max), bytes.len()));
        }
        Ok((bytes, size))
    }

    /// The files (name, size) and subdirectories directly in the directory.
    pub async fn list(&self) -> Result<(Vec<(String, u64)>, Vec<String>), RemoteError> {
        if !self.url.can_list() {
            return Err(RemoteError::Other {
                url: self.url.dir(),
                message: "this store cannot list a directory".into(),
            });
        }
        let prefix = (!self.prefix.is_empty()).then(|| ObjPath::from(self.prefix.as_str()));
        let r = self.store.list_with_delimiter(prefix.as_ref()).await.map_err(|e| self.fault("", e))?;
        let base = |p: &ObjPath| p.filename().unwrap_or_default().to_string();
        let files = r.objects.iter().map(|o| (base(&o.location), o.size)).collect();
        let dirs = r.common_prefixes.iter().map(base).collect();
        Ok((files, dirs))
    }

    /// Write a small file in one request.
    pub async fn put(&self, name: &str, bytes: Bytes) -> Result<(), RemoteError> {
        let n = bytes.len() as u64;
        self.store.put(&self.path(name), PutPayload::from_bytes(bytes)).await.map_err(|e| self.fault(name, e))?;
        self.stats.bytes_written.fetch_add(n, Ordering::Relaxed);
        Ok(())
    }

    /// A multipart upload of `name` in parts of `part` bytes; the object
    /// appears only when it is finished.
    pub async fn writer(&self, name: &str, part: usize) -> Result<WriteMultipart, RemoteError> {
        let up = self.store.put_multipart(&self.path(name)).await.map_err(|e| self.fault(name, e))?;
        Ok(WriteMultipart::new_with_chunk_size(up, part))
    }

    /// Map an upload error of `name`.
    pub fn upload_fault(&self, name: &str, e: object_store::Error) -> RemoteError {
        self.fault(name, e)
    }

    pub fn add_written(&self, n: u64) {
        self.stats.bytes_written.fetch_add(n, Ordering::Relaxed);
    }

    pub async fn delete(&self, name: &str) -> Result<(), RemoteError> {
        match self.store.delete(&self.path(name)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.fault(name, e)),
        }
    }

    pub fn bytes_read(&self) -> u64 {
        self.stats.bytes_read.load(Ordering::Relaxed)
    }

    pub fn reads(&self) -> u64 {
        self.stats.reads.load(Ordering::Relaxed)
    }
}
