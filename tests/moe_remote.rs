//! `patchgen moe inspect|convert` on remote checkpoints, without the
//! internet: a stand-in for the Hub's `resolve` URLs
//! (`tests/moe/hub_server.py`, standard library, with Range, HEAD, a
//! private repo, the Hub's refusals with their `X-Error-Code`, and fault
//! modes, counting the bytes it serves), moto's S3
//! server and Azurite, Microsoft's Azure Blob emulator (both installed by
//! scripts/test-env.sh; their tests are skipped with a message when they
//! are missing outside CI). All listen on 127.0.0.1.
//! Remote results are compared with the local ones on the same files:
//! `inspect` JSON equal but for the paths, `convert` output byte-identical;
//! S3 objects are written and read back with boto3, Azure blobs with
//! azure-storage-blob, not with patchgen.

#[path = "moe/support.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use support::{Out, make, ok, python, script};

/// patchgen with a clean environment: no Hub token, no AWS settings, HOME
/// in `home`, plus `env`.
fn patchgen(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    command(home, args, env).output().expect("run patchgen").into()
}

/// The binary with `args` in `home`, the cloud variables of the test
/// process removed and `env` set.
fn command(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_patchgen"));
    c.args(args).current_dir(home).env_remove("PYTHONPATH").env_remove("VIRTUAL_ENV").env("HOME", home);
    for (k, _) in std::env::vars() {
        let cloud = ["HF_", "AWS_", "AZURE_", "AZURITE_", "GOOGLE_", "PATCHGEN_REMOTE"];
        if cloud.iter().any(|p| k.starts_with(p)) {
            c.env_remove(&k);
        }
    }
    c.env("PATCHGEN_REMOTE_RETRIES", "2");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// A child process killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn hub(python: &str, root: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(python)
            .arg(script("hub_server.py"))
            .arg(root)
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start hub_server.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().strip_prefix("PORT ").expect("PORT line").parse().unwrap();
        Server { child, port }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn get(&self, path: &str) -> String {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut r = String::new();
        s.read_to_string(&mut r).unwrap();
        r.split_once("\r\n\r\n").map(|x| x.1.to_string()).unwrap_or_default()
    }

    fn stats(&self) -> (u64, u64) {
        let v: serde_json::Value = serde_json::from_str(&self.get("/__stats")).unwrap();
        (v["bytes"].as_u64().unwrap(), v["requests"].as_u64().unwrap())
    }

    fn fault(&self, path: &str, mode: &str, times: u32) {
        assert_eq!(self.get(&format!("/__fault?path={path}&mode={mode}&times={times}")), "ok");
    }

    fn reset(&self) {
        assert_eq!(self.get("/__reset"), "ok");
    }
}

/// An inspect report as JSON, with `from` (the checkpoint's path or URL)
/// replaced and the transfer count dropped.
fn normalised(json: &str, from: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(&json.replace(from, "<CKPT>")).unwrap();
    v.as_object_mut().unwrap().remove("bytes_read");
    v
}

/// Every file of a directory, by name.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    out.sort();
    out
}

fn same_files(a: &Path, b: &Path) {
    let (fa, fb) = (files(a), files(b));
    let names = |f: &[(String, Vec<u8>)]| f.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&fa), names(&fb), "{} vs {}", a.display(), b.display());
    for ((n, x), (_, y)) in fa.iter().zip(&fb) {
        assert!(x == y, "{n} differs between {} and {}", a.display(), b.display());
    }
}

fn no_leftovers(dir: &Path) {
    let stray: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".patchgen-moe-"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

/// The `8 + N` header bytes of each `.safetensors` file of `dir`, summed.
fn header_bytes(dir: &Path) -> (u64, usize) {
    let mut total = 0;
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "safetensors") {
            total += header_bytes_of(&p).0;
            n += 1;
        }
    }
    (total, n)
}

/// What reading each shard's header takes: the first 64 KiB (or the whole
/// file when smaller), more only for a longer header.
fn first_reads(dir: &Path) -> (u64, usize) {
    let mut total = 0;
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "safetensors") {
            let (h, _) = header_bytes_of(&p);
            total += size(&p).min(h.max(64 * 1024));
            n += 1;
        }
    }
    (total, n)
}

fn header_bytes_of(p: &Path) -> (u64, ()) {
    let mut len = [0u8; 8];
    std::fs::File::open(p).unwrap().read_exact(&mut len).unwrap();
    (8 + u64::from_le_bytes(len), ())
}

fn size(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

#[test]
fn hub_inspect_and_convert_match_the_local_copy() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let root = d.join("hub");
    for (repo, family) in [("org/moe", "qwen3_moe"), ("org/vl", "qwen3_vl_moe")] {
        make(&python, family, &root.join(repo), &["--shards", "3"]);
    }
    let hub = Server::hub(&python, &root, &[]);
    let env = [("HF_ENDPOINT", hub.endpoint())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();

    for (repo, _) in [("org/moe", ()), ("org/vl", ())] {
        let local = root.join(repo);
        let url = format!("hf://{repo}");
        let l = patchgen(d, &["moe", "inspect", local.to_str().unwrap(), "--format", "json"], &[]);
        ok(&l, "local inspect");
        hub.reset();
        let r = patchgen(d, &["moe", "inspect", &url, "--format", "json"], &env);
        ok(&r, "remote inspect");
        assert_eq!(normalised(&r.stdout, &url), normalised(&l.stdout, local.to_str().unwrap()));
        // Headers (here < 64 KiB: one ranged read each), the index, config.json; no data.
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let (served, _) = hub.stats();
        assert_eq!(v["bytes_read"].as_u64(), Some(served));
        let (first_reads, shards) = first_reads(&local);
        assert_eq!(shards, 3);
        assert_eq!(
            served,
            first_reads + size(&local.join("model.safetensors.index.json")) + size(&local.join("config.json"))
        );

        // One shard named by its URL, as locally: the config next to it applies.
        let shard = "model-00001-of-00003.safetensors";
        let lf = local.join(shard);
        let l1 = patchgen(d, &["moe", "inspect", lf.to_str().unwrap(), "--format", "json"], &[]);
        let r1 = patchgen(d, &["moe", "inspect", &format!("{url}/{shard}"), "--format", "json"], &env);
        assert_eq!(r1.code, l1.code, "{}", r1.stderr);
        assert_eq!(normalised(&r1.stdout, &url), normalised(&l1.stdout, local.to_str().unwrap()));

        // -v tells the bytes fetched.
        let t = patchgen(d, &["moe", "inspect", &url, "-v"], &env);
        assert!(t.stdout.contains("fetched: ") && t.stdout.contains("no tensor data"), "{}", t.stdout);

        // The same through a plain http:// directory.
        let plain = format!("{}/plain/{repo}", hub.endpoint());
        let p = patchgen(d, &["moe", "inspect", &plain, "--format", "json"], &[]);
        ok(&p, "plain inspect");
        assert_eq!(normalised(&p.stdout, &plain), normalised(&l.stdout, local.to_str().unwrap()));

        // convert hf:// -> local is byte-identical to the local conversion.
        let name = repo.replace('/', "-");
        let want = d.join(format!("{name}-local"));
        ok(&patchgen(d, &["moe", "convert", local.to_str().unwrap(), want.to_str().unwrap()], &[]), "local convert");
        let got = d.join(format!("{name}-remote"));
        let c = patchgen(
            d,
            &["moe", "convert", &url, got.to_str().unwrap(), "--verify", "--format", "json", "--shard-size", "3KB"],
            &env,
        );
        ok(&c, "remote convert");
        let want2 = d.join(format!("{name}-local2"));
        ok(
            &patchgen(
                d,
                &["moe", "convert", local.to_str().unwrap(), want2.to_str().unwrap(), "--shard-size", "3KB"],
                &[],
            ),
            "local convert 3KB",
        );
        same_files(&want2, &got);
        let v: serde_json::Value = serde_json::from_str(&c.stdout).unwrap();
        assert!(v["bytes_read"].as_u64().unwrap() > 0);
        let one = d.join(format!("{name}-remote1"));
        ok(&patchgen(d, &["moe", "convert", &url, one.to_str().unwrap(), "-j", "2"], &env), "remote convert -j2");
        same_files(&want, &one);
    }
    no_leftovers(d);
}

/// A DeepSeek-V3-sized checkpoint (163 shards, 61 layers, 256 routed experts
/// in layers 3-60, ~1.3 TB) as sparse files: real headers, holes for data.
fn deepseek_v3_sized(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let (h, i, layers, experts, dense) = (7168u64, 2048u64, 61u64, 256u64, 3u64);
    let mut tensors: Vec<(String, Vec<u64>)> = Vec::new();
    tensors.push(("model.embed_tokens.weight".into(), vec![129280, h]));
    for l in 0..layers {
        let p = format!("model.layers.{l}");
        tensors.push((format!("{p}.input_layernorm.weight"), vec![h]));
        tensors.push((format!("{p}.self_attn.o_proj.weight"), vec![h, 16384]));
        if l < dense {
            for (proj, shape) in [("gate_proj", [18432, h]), ("up_proj", [18432, h]), ("down_proj", [h, 18432])] {
                tensors.push((format!("{p}.mlp.{proj}.weight"), shape.to_vec()));
            }
            continue;
        }
        tensors.push((format!("{p}.mlp.gate.weight"), vec![experts, h]));
        for j in 0..experts {
            for (proj, shape) in [("gate_proj", [i, h]), ("up_proj", [i, h]), ("down_proj", [h, i])] {
                tensors.push((format!("{p}.mlp.experts.{j}.{proj}.weight"), shape.to_vec()));
            }
        }
    }
    tensors.push(("model.norm.weight".into(), vec![h]));
    tensors.push(("lm_head.weight".into(), vec![129280, h]));
    let shards = 163;
    let per = tensors.len().div_ceil(shards);
    let mut weight_map = serde_json::Map::new();
    let mut total = 0u64;
    for (k, part) in tensors.chunks(per).enumerate() {
        let name = format!("model-{:05}-of-{shards:05}.safetensors", k + 1);
        let mut header = serde_json::Map::new();
        header.insert("__metadata__".into(), serde_json::json!({"format": "pt"}));
        let mut at = 0u64;
        for (t, shape) in part {
            let len = shape.iter().product::<u64>() * 2;
            header.insert(
                t.clone(),
                serde_json::json!({"dtype": "BF16", "shape": shape, "data_offsets": [at, at + len]}),
            );
            weight_map.insert(t.clone(), serde_json::Value::String(name.clone()));
            at += len;
        }
        total += at;
        let json = serde_json::to_vec(&serde_json::Value::Object(header)).unwrap();
        let mut f = std::fs::File::create(dir.join(&name)).unwrap();
        f.write_all(&(json.len() as u64).to_le_bytes()).unwrap();
        f.write_all(&json).unwrap();
        f.set_len(8 + json.len() as u64 + at).unwrap();
    }
    assert_eq!(tensors.chunks(per).count(), shards);
    let index = serde_json::json!({"metadata": {"total_size": total}, "weight_map": weight_map});
    std::fs::write(dir.join("model.safetensors.index.json"), serde_json::to_vec_pretty(&index).unwrap()).unwrap();
    let config = serde_json::json!({
        "model_type": "deepseek_v3", "hidden_size": h, "moe_intermediate_size": i, "intermediate_size": 18432,
        "n_routed_experts": experts, "num_hidden_layers": layers, "first_k_dense_replace": dense,
    });
    std::fs::write(dir.join("config.json"), serde_json::to_vec(&config).unwrap()).unwrap();
}

#[test]
fn inspecting_a_deepseek_v3_sized_index_reads_headers_only() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let root = d.join("hub");
    let local = root.join("deepseek-ai/DeepSeek-V3");
    deepseek_v3_sized(&local);
    let hub = Server::hub(&python, &root, &[]);
    let l = patchgen(d, &["moe", "inspect", local.to_str().unwrap(), "--format", "json"], &[]);
    ok(&l, "local inspect");
    let url = "hf://deepseek-ai/DeepSeek-V3";
    let r = patchgen(d, &["moe", "inspect", url, "--format", "json"], &[("HF_ENDPOINT", &hub.endpoint())]);
    ok(&r, "remote inspect");
    assert_eq!(normalised(&r.stdout, url), normalised(&l.stdout, local.to_str().unwrap()));
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["shards"], 163);
    assert!(v["total_bytes"].as_u64().unwrap() > 1_000_000_000_000);
    let (served, requests) = hub.stats();
    let (headers, shards) = header_bytes(&local);
    assert_eq!(shards, 163);
    let bound = headers
        + size(&local.join("model.safetensors.index.json"))
        + size(&local.join("config.json"))
        + 64 * 1024 * shards as u64;
    eprintln!("DeepSeek-V3-sized: {served} bytes in {requests} requests (headers {headers}, bound {bound})");
    assert!(served <= bound, "served {served} bytes, bound {bound}");
    assert_eq!(v["bytes_read"].as_u64(), Some(served));
    // One ranged read per shard whose header fits in 64 KiB, two otherwise.
    assert!(requests <= 2 + 2 * shards as u64, "{requests} requests");
}

#[test]
fn private_repos_need_the_token_and_the_error_names_its_source() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let root = d.join("hub");
    make(&python, "qwen3_moe", &root.join("org/private"), &["--shards", "2"]);
    let secret = "hf_s3cr3t_t0ken";
    let hub = Server::hub(&python, &root, &["--private", "org/private", "--token", secret]);
    let ep = hub.endpoint();
    let url = "hf://org/private";
    let args = ["moe", "inspect", url];

    let o = patchgen(d, &args, &[("HF_ENDPOINT", &ep)]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    // The index and config.json are fetched at once: either may be the first refused.
    let refused = ["model.safetensors.index.json", "config.json"].iter().any(|f| {
        o.stderr.contains(&format!("hf://org/private/{f}: 401 Unauthorized: no credential was sent: set HF_TOKEN"))
    });
    assert!(refused, "{}", o.stderr);

    let o = patchgen(d, &args, &[("HF_ENDPOINT", &ep), ("HF_TOKEN", "hf_wrong_value")]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("401 Unauthorized: the credential read from HF_TOKEN was refused"), "{}", o.stderr);
    assert!(!o.stderr.contains("hf_wrong_value") && !o.stdout.contains("hf_wrong_value"));

    ok(&patchgen(d, &args, &[("HF_ENDPOINT", &ep), ("HF_TOKEN", secret)]), "HF_TOKEN");

    let token = d.join(".cache/huggingface/token");
    std::fs::create_dir_all(token.parent().unwrap()).unwrap();
    std::fs::write(&token, format!("{secret}\n")).unwrap();
    ok(&patchgen(d, &args, &[("HF_ENDPOINT", &ep)]), "token file");
    std::fs::write(&token, "hf_stale").unwrap();
    let o = patchgen(d, &args, &[("HF_ENDPOINT", &ep)]);
    assert!(o.stderr.contains(&format!("the token read from {} was refused", token.display())), "{}", o.stderr);
    assert!(!o.stderr.contains("hf_stale"));
}

/// The four refusals of the Hub (`X-Error-Code`), each in its own words
/// (as `huggingface_hub`'s `RepositoryNotFoundError`, `GatedRepoError`,
/// `RevisionNotFoundError`, `EntryNotFoundError` tell them apart): for
/// `inspect` and `convert`, text and JSON, without a token and with one;
/// exit 1, nothing written, and the token in no output.
#[test]
fn hub_refusals_are_told_in_the_hubs_words() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let root = d.join("hub");
    make(&python, "qwen3_moe", &root.join("org/repo"), &[]);
    make(&python, "qwen3_moe", &root.join("org/gated"), &[]);
    let granted = "hf_gr4nted_t0ken";
    let other = "hf_0ther_t0ken_n0t_granted";
    let hub = Server::hub(&python, &root, &["--gated", "org/gated", "--grant", granted]);
    let ep = hub.endpoint();
    let dst = d.join("out");
    // (address, token, what the message must say)
    let cases: Vec<(&str, Option<&str>, Vec<String>)> = vec![
        (
            "hf://org/no_such_repo",
            None,
            vec![
                format!("repository not found: `org/no_such_repo` at {ep} (401 RepoNotFound)"),
                "check the repository name".into(),
                "set HF_TOKEN".into(),
            ],
        ),
        (
            "hf://org/no_such_repo",
            Some(other),
            vec![
                format!("repository not found: `org/no_such_repo` at {ep} (404 RepoNotFound)"),
                "the token read from HF_TOKEN cannot read it".into(),
            ],
        ),
        (
            "hf://org/gated",
            None,
            vec![
                "`org/gated` is a gated repository: access must be requested (401 GatedRepo".into(),
                format!("request access on {ep}/org/gated, then set HF_TOKEN"),
            ],
        ),
        (
            "hf://org/gated",
            Some(other),
            vec![
                "`org/gated` is a gated repository: access must be requested (403 GatedRepo".into(),
                "the account of the token read from HF_TOKEN has not been granted access".into(),
                format!("request it on {ep}/org/gated"),
            ],
        ),
        (
            "hf://org/repo@v9",
            Some(other),
            vec![
                format!("revision `v9` not found in `org/repo` at {ep} (404 RevisionNotFound"),
                "check the revision after `@`".into(),
            ],
        ),
        (
            "hf://org/repo/model-00009.safetensors",
            None,
            vec![
                format!(
                    "hf://org/repo/model-00009.safetensors: `model-00009.safetensors` not found in `org/repo` at revision `main` ({ep}) (404 EntryNotFound"
                ),
                format!("{ep}/org/repo/tree/main lists the repository's files"),
            ],
        ),
    ];
    for (url, token, words) in &cases {
        let mut env = vec![("HF_ENDPOINT", ep.as_str())];
        if let Some(t) = token {
            env.push(("HF_TOKEN", t));
        }
        for args in [
            vec!["moe", "inspect", url],
            vec!["moe", "inspect", url, "--format", "json"],
            vec!["moe", "convert", url, dst.to_str().unwrap()],
            vec!["moe", "convert", url, dst.to_str().unwrap(), "--format", "json"],
        ] {
            let o = patchgen(d, &args, &env);
            let what = format!("{args:?} token {token:?}: stdout {} stderr {}", o.stdout, o.stderr);
            assert_eq!(o.code, 1, "{what}");
            let message = if args.contains(&"json") {
                let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("one JSON document");
                assert_eq!(v["diagnostics"][0]["code"], "PGE010", "{what}");
                v["diagnostics"][0]["message"].as_str().unwrap().to_string()
            } else {
                o.stderr.clone()
            };
            for w in words {
                assert!(message.contains(w.as_str()), "`{w}` missing: {what}");
            }
            for t in [granted, other] {
                assert!(!o.stdout.contains(t) && !o.stderr.contains(t), "token in the output: {what}");
            }
            assert!(!dst.exists(), "{what}");
            no_leftovers(d);
        }
    }
    // The granted token reads the gated repository.
    let env = [("HF_ENDPOINT", ep.as_str()), ("HF_TOKEN", granted)];
    ok(&patchgen(d, &["moe", "inspect", "hf://org/gated"], &env), "granted");
    // A repository without a config.json is not an error (EntryNotFound on an optional file).
    std::fs::remove_file(root.join("org/repo/config.json")).unwrap();
    let o = patchgen(d, &["moe", "inspect", "hf://org/repo", "--format", "json"], &env[..1]);
    assert!(!o.stdout.contains("EntryNotFound") && !o.stderr.contains("EntryNotFound"), "{}", o.stderr);
}

#[test]
fn faults_are_located_errors_and_nothing_is_committed() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let root = d.join("hub");
    make(&python, "qwen3_moe", &root.join("org/repo"), &["--shards", "3"]);
    let hub = Server::hub(&python, &root, &[]);
    let ep = hub.endpoint();
    let env = [("HF_ENDPOINT", ep.as_str())];
    let url = "hf://org/repo";
    let shard = "model-00002-of-00003.safetensors";
    let dst = d.join("out");
    let convert = |extra: &[(&str, &str)]| {
        let mut e = env.to_vec();
        e.extend_from_slice(extra);
        let o = patchgen(d, &["moe", "convert", url, dst.to_str().unwrap()], &e);
        assert_eq!(o.code, 1, "{}", o.stdout);
        assert!(!dst.exists(), "{}", o.stderr);
        no_leftovers(d);
        o
    };

    // 404: the index names a file the server does not have.
    hub.fault(shard, "404", 0);
    let o = patchgen(d, &["moe", "inspect", url], &env);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains(&format!(
            "hf://org/repo/model.safetensors.index.json: the index names 1 missing file(s): {shard}"
        )),
        "{}",
        o.stderr
    );
    let o = convert(&[]);
    assert!(o.stderr.contains(shard), "{}", o.stderr);
    hub.reset();

    // A repository that is there but holds no checkpoint.
    std::fs::create_dir_all(root.join("org/nothing")).unwrap();
    let o = patchgen(d, &["moe", "inspect", "hf://org/nothing"], &env);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("hf://org/nothing: no model.safetensors.index.json, no model.safetensors"),
        "{}",
        o.stderr
    );

    // 401 on one shard.
    hub.fault(shard, "401", 0);
    let o = patchgen(d, &["moe", "inspect", url], &env);
    assert!(o.stderr.contains(&format!("hf://org/repo/{shard}: 401 Unauthorized")), "{}", o.stderr);
    hub.reset();

    // A range the server does not honour: refused, not downloaded.
    hub.fault(shard, "ignore-range", 0);
    let o = patchgen(d, &["moe", "inspect", url], &env);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains(&format!("hf://org/repo/{shard}: the server ignored the Range request")), "{}", o.stderr);
    convert(&[]);
    hub.reset();

    // A body shorter than its Content-Length, every time: retried, then an error.
    hub.fault(shard, "truncate", 0);
    let o = convert(&[]);
    assert!(o.stderr.contains(&format!("hf://org/repo/{shard}: the body ended early")), "{}", o.stderr);
    hub.reset();

    // A server that does not answer.
    hub.fault(shard, "hang", 0);
    let o = convert(&[("PATCHGEN_REMOTE_TIMEOUT", "1"), ("PATCHGEN_REMOTE_RETRIES", "0")]);
    assert!(o.stderr.contains(&format!("hf://org/repo/{shard}: timed out")), "{}", o.stderr);
    hub.reset();

    // 500, then OK: retried with backoff, and it works.
    hub.fault("model.safetensors.index.json", "500", 2);
    ok(&patchgen(d, &["moe", "inspect", url], &env), "500 then OK");
    let (_, requests) = hub.stats();
    assert_eq!(requests, 2 + 1 + 3 + 1, "two 500s, the index, three headers, config.json");
}

#[test]
fn offline_reads_the_hub_cache_and_nothing_else() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let cache = d.join("hub-cache");
    let snap = cache.join("models--org--repo/snapshots/0123abcd");
    make(&python, "qwen3_moe", &snap, &[]);
    std::fs::create_dir_all(cache.join("models--org--repo/refs")).unwrap();
    std::fs::write(cache.join("models--org--repo/refs/main"), "0123abcd").unwrap();
    let cache_env = [("HF_HUB_CACHE", cache.to_str().unwrap()), ("HF_ENDPOINT", "http://127.0.0.1:9")];
    let o = patchgen(d, &["moe", "inspect", "hf://org/repo", "--offline"], &cache_env);
    ok(&o, "offline inspect");
    assert!(o.stdout.contains("model.layers.*.mlp.experts: A per-expert split"), "{}", o.stdout);
    let o = patchgen(d, &["moe", "inspect", "hf://org/repo@0123abcd"], &[cache_env[0], ("HF_HUB_OFFLINE", "1")]);
    ok(&o, "HF_HUB_OFFLINE");
    let o = patchgen(d, &["moe", "inspect", "hf://org/other", "--offline"], &cache_env);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("hf://org/other: --offline: not in the local Hub cache"), "{}", o.stderr);
    let o = patchgen(d, &["moe", "convert", "s3://bucket/ckpt", d.join("x").to_str().unwrap(), "--offline"], &[]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("s3://bucket/ckpt: --offline: a remote address cannot be read"), "{}", o.stderr);
}

/// moto's S3 server on a free port, or `None` (with a message) when moto
/// is not installed outside CI.
fn moto(python: &str) -> Option<Server> {
    let has = Command::new(python).args(["-c", "import moto.server, boto3"]).output().unwrap();
    if !has.status.success() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("moto[server] is missing from the oracle venv (scripts/test-env.sh installs it)");
        }
        eprintln!("skipping the S3 test: moto[server] is not installed (scripts/test-env.sh installs it)");
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(python)
        .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start moto");
    let server = Server { child, port };
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(server);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("moto did not start on port {port}");
}

#[test]
fn s3_inspect_and_convert_in_every_direction() {
    let Some(python) = python() else { return };
    let Some(s3) = moto(&python) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let ep = s3.endpoint();
    let env = [
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT", ep.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
    ];
    let boto = |args: &[&str]| {
        let o =
            Command::new(&python).arg(script("s3.py")).args(args).env("AWS_ENDPOINT", &ep).envs(env).output().unwrap();
        assert!(o.status.success(), "s3.py {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let src = d.join("src");
    make(&python, "qwen3_moe", &src, &["--shards", "3"]);
    boto(&["mb", "models"]);
    boto(&["put", src.to_str().unwrap(), "models", "qwen/src"]);

    // inspect: the same report as on the local copy.
    let l = patchgen(d, &["moe", "inspect", src.to_str().unwrap(), "--format", "json"], &[]);
    let r = patchgen(d, &["moe", "inspect", "s3://models/qwen/src", "--format", "json"], &env);
    ok(&r, "s3 inspect");
    assert_eq!(normalised(&r.stdout, "s3://models/qwen/src"), normalised(&l.stdout, src.to_str().unwrap()));

    // Local reference conversion.
    let want = d.join("want");
    ok(
        &patchgen(d, &["moe", "convert", src.to_str().unwrap(), want.to_str().unwrap(), "--shard-size", "3KB"], &[]),
        "local",
    );
    let sz = ["--shard-size", "3KB", "--verify"];

    // s3 -> local.
    let got = d.join("got");
    let mut a = vec!["moe", "convert", "s3://models/qwen/src", got.to_str().unwrap()];
    a.extend(sz);
    ok(&patchgen(d, &a, &env), "s3 -> local");
    same_files(&want, &got);

    // local -> s3, read back with boto3.
    let mut a = vec!["moe", "convert", src.to_str().unwrap(), "s3://models/qwen/up"];
    a.extend(sz);
    let o = patchgen(d, &[&a[..], &["--format", "json"]].concat(), &env);
    ok(&o, "local -> s3");
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert!(v["bytes_written"].as_u64().unwrap() >= v["bytes"].as_u64().unwrap());
    boto(&["get", "models", "qwen/up", d.join("up").to_str().unwrap()]);
    same_files(&want, &d.join("up"));

    // s3 -> s3.
    let mut a = vec!["moe", "convert", "s3://models/qwen/src", "s3://models/qwen/s2s"];
    a.extend(sz);
    ok(&patchgen(d, &a, &env), "s3 -> s3");
    boto(&["get", "models", "qwen/s2s", d.join("s2s").to_str().unwrap()]);
    same_files(&want, &d.join("s2s"));

    // A non-empty destination and the source itself are refused.
    let o = patchgen(d, &["moe", "convert", "s3://models/qwen/src", "s3://models/qwen/s2s"], &env);
    assert!(o.stderr.contains("s3://models/qwen/s2s: exists and is not empty") && o.code == 2, "{}", o.stderr);
    let o = patchgen(d, &["moe", "convert", "s3://models/qwen/src", "s3://models/qwen/src/out"], &env);
    assert!(o.stderr.contains("DST is SRC or inside it") && o.code == 2, "{}", o.stderr);

    // A missing shard: a located error, and nothing left at DST.
    boto(&["put", src.to_str().unwrap(), "models", "qwen/broken"]);
    boto(&["rm", "models", "qwen/broken/model-00003-of-00003.safetensors"]);
    let o = patchgen(d, &["moe", "convert", "s3://models/qwen/broken", "s3://models/qwen/never"], &env);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("s3://models/qwen/broken/model.safetensors.index.json: the index names 1 missing file(s): model-00003-of-00003.safetensors"),
        "{}",
        o.stderr
    );
    assert_eq!(boto(&["ls", "models", "qwen/never"]), "");
    // A transfer that fails half-way (the Hub stand-in truncates the tensor
    // data of the last source shard): the shards already uploaded are
    // deleted and no index is written.
    let root = d.join("hub");
    make(&python, "qwen3_moe", &root.join("org/repo"), &["--shards", "3"]);
    let hub = Server::hub(&python, &root, &[]);
    hub.fault("model-00003-of-00003.safetensors", "truncate-data", 0);
    let hub_ep = hub.endpoint();
    let mut e = env.to_vec();
    e.push(("HF_ENDPOINT", hub_ep.as_str()));
    let o = patchgen(d, &["moe", "convert", "hf://org/repo", "s3://models/qwen/half", "--shard-size", "3KB"], &e);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(o.stderr.contains("hf://org/repo/model-00003-of-00003.safetensors: the body ended early"), "{}", o.stderr);
    assert_eq!(boto(&["ls", "models", "qwen/half"]), "");
    hub.reset();
    ok(
        &patchgen(d, &["moe", "convert", "hf://org/repo", "s3://models/qwen/half", "--shard-size", "3KB"], &e),
        "hub -> s3",
    );
    boto(&["get", "models", "qwen/half", d.join("half").to_str().unwrap()]);
    same_files(&want, &d.join("half"));
}

/// Azurite's blob service on a free port with its data in `dir`, or `None`
/// (with a message) when it is not installed outside CI.
fn azurite(dir: &Path) -> Option<Server> {
    let bin = std::env::var("PATCHGEN_TEST_AZURITE").unwrap_or_default();
    if bin.is_empty() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("PATCHGEN_TEST_AZURITE must name azurite-blob (scripts/test-env.sh installs it with npm)");
        }
        eprintln!("skipping the Azure test: Azurite is not installed (scripts/test-env.sh installs it with npm)");
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(&bin)
        .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string(), "--location"])
        .arg(dir)
        .args(["--silent", "--skipApiVersionCheck", "--disableTelemetry"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start azurite-blob");
    let server = Server { child, port };
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(server);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("azurite did not start on port {port}");
}

#[test]
fn azure_inspect_and_convert_in_every_direction() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let Some(az) = azurite(&d.join("azurite")) else { return };
    let ep = az.endpoint();
    // object_store's emulator mode: the well-known development account.
    let env = [("AZURE_STORAGE_USE_EMULATOR", "true"), ("AZURITE_BLOB_STORAGE_URL", ep.as_str())];
    let client = |args: &[&str]| {
        let o = Command::new(&python).arg(script("az.py")).args(args).envs(env).output().unwrap();
        assert!(o.status.success(), "az.py {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    client(&["mb", "models"]);
    let src = d.join("src");
    make(&python, "qwen3_moe", &src, &["--shards", "3"]);
    let want = d.join("want");
    ok(
        &patchgen(d, &["moe", "convert", src.to_str().unwrap(), want.to_str().unwrap(), "--shard-size", "3KB"], &[]),
        "local",
    );
    let sz = ["--shard-size", "3KB", "--verify"];

    // local -> az (per-expert to fused), read back with Microsoft's client.
    let mut a = vec!["moe", "convert", src.to_str().unwrap(), "az://models/qwen/up"];
    a.extend(sz);
    ok(&patchgen(d, &a, &env), "local -> az");
    client(&["get", "models", "qwen/up", d.join("up").to_str().unwrap()]);
    same_files(&want, &d.join("up"));
    // The index was written last: every blob is there.
    assert_eq!(client(&["ls", "models", "qwen/up"]).lines().count(), files(&want).len());

    // inspect: the same report as on the local copy of the same files.
    let l = patchgen(d, &["moe", "inspect", want.to_str().unwrap(), "--format", "json"], &[]);
    let r = patchgen(d, &["moe", "inspect", "az://models/qwen/up", "--format", "json"], &env);
    ok(&r, "az inspect");
    assert_eq!(normalised(&r.stdout, "az://models/qwen/up"), normalised(&l.stdout, want.to_str().unwrap()));

    // az -> local and az -> az: back to per-expert, as the local convert does.
    let back = d.join("back");
    ok(
        &patchgen(d, &["moe", "convert", want.to_str().unwrap(), back.to_str().unwrap(), "--to", "per-expert"], &[]),
        "local back",
    );
    let got = d.join("got");
    let o = patchgen(d, &["moe", "convert", "az://models/qwen/up", got.to_str().unwrap(), "--to", "per-expert"], &env);
    ok(&o, "az -> local");
    same_files(&back, &got);
    let o = patchgen(d, &["moe", "convert", "az://models/qwen/up", "az://models/qwen/a2a", "--to", "per-expert"], &env);
    ok(&o, "az -> az");
    client(&["get", "models", "qwen/a2a", d.join("a2a").to_str().unwrap()]);
    same_files(&back, &d.join("a2a"));

    // A missing container: an error naming it, nothing written.
    let o = patchgen(d, &["moe", "inspect", "az://nowhere/qwen"], &env);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(o.stderr.contains("az://nowhere/qwen/"), "{}", o.stderr);
    // A destination that is not empty is refused.
    let o = patchgen(d, &["moe", "convert", src.to_str().unwrap(), "az://models/qwen/up"], &env);
    assert!(o.stderr.contains("az://models/qwen/up: exists and is not empty"), "{}", o.stderr);
}

/// A per-expert checkpoint of sparse BF16 weights (zeros that take no
/// disk): `experts` experts of `i`×`h` gate/up and `h`×`i` down.
fn sparse_checkpoint(dir: &Path, experts: u64, i: u64, h: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let mut header = serde_json::Map::new();
    let mut at = 0u64;
    for j in 0..experts {
        for (p, shape) in [("gate_proj", [i, h]), ("up_proj", [i, h]), ("down_proj", [h, i])] {
            let len = shape[0] * shape[1] * 2;
            header.insert(
                format!("model.layers.0.mlp.experts.{j}.{p}.weight"),
                serde_json::json!({"dtype": "BF16", "shape": shape, "data_offsets": [at, at + len]}),
            );
            at += len;
        }
    }
    let mut json = serde_json::Value::Object(header).to_string().into_bytes();
    while !json.len().is_multiple_of(8) {
        json.push(b' ');
    }
    let mut f = std::fs::File::create(dir.join("model.safetensors")).unwrap();
    f.write_all(&(json.len() as u64).to_le_bytes()).unwrap();
    f.write_all(&json).unwrap();
    f.set_len(8 + json.len() as u64 + at).unwrap();
}

#[allow(unsafe_code)]
fn interrupt(pid: i32) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGINT) };
}

/// SIGINT while `moe convert` uploads to S3 (moto): exit 130, and nothing
/// is left under DST — no object, no multipart upload in progress
/// (issue 39: an interrupt cleans up a remote conversion too).
#[test]
fn an_interrupted_upload_leaves_nothing_in_the_bucket() {
    let Some(python) = python() else { return };
    let Some(s3) = moto(&python) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let ep = s3.endpoint();
    let env = [
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT", ep.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
    ];
    let boto = |args: &[&str]| {
        let o = Command::new(&python).arg(script("s3.py")).args(args).envs(env).output().unwrap();
        assert!(o.status.success(), "s3.py {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    boto(&["mb", "models"]);
    // 32 experts × 3 × 2048×1024 BF16: 384 MiB, written as 8 MB shards.
    sparse_checkpoint(&d.join("ck"), 32, 2048, 1024);
    let mut child = command(d, &["moe", "convert", "ck", "s3://models/out", "--shard-size", "8MB"], &env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once something is on its way into the bucket.
    let started = std::time::Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            panic!("the conversion ended before anything was uploaded: make the checkpoint larger");
        }
        // Anything in the bucket: a shard, a temporary object, an upload begun.
        if !boto(&["everything", "models"]).is_empty() {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "nothing uploaded within 60 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    interrupt(child.id() as i32);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(boto(&["everything", "models"]), "", "objects or multipart uploads left in the bucket");
}
