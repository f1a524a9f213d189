//! Writing files so a failure never leaves a half-written one: a temporary
//! file in the same directory, then a rename.

use std::io::Write;
use std::path::Path;

pub fn write(path: &Path, contents: &str) -> std::io::Result<()> {
    write_bytes(path, contents.as_bytes())
}

pub fn write_bytes(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    if path.is_dir() {
        return Err(std::io::Error::other(format!("{} is a directory", path.display())));
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all().ok();
    // Keep the mode of the file being replaced (new files get the default).
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(tmp.path(), meta.permissions());
    } else {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644));
        }
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
