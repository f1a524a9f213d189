//! Reading a file whole, but never more than a limit: the size is checked
//! before reading (a 1 GB sparse config costs nothing), and the read itself
//! stops one byte past the limit (a file that grows meanwhile, or reports
//! no size, cannot make it unbounded). Only regular files are read: a FIFO
//! or a device would block or never end.
//!
//! The limit is the `max-file-size` setting (`patchgen_core::settings`);
//! [`DEFAULT_MAX_FILE_SIZE`] where no setting reaches the reader.

use std::io::Read;
use std::path::Path;

/// 16 MiB: far above any config, modeling file, `config.json` or index.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 16 << 20;

/// Why a file was not read: too large, or not a regular file.
pub fn too_large(size: u64, limit: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("the file is {size} bytes, over the {limit}-byte limit (raise it with the `max-file-size` setting)"),
    )
}

/// The bytes of the regular file `path`, refused when over `limit` bytes.
pub fn read(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    // Looked at before opening: opening a FIFO blocks until a writer comes.
    check(&std::fs::metadata(path)?, limit)?;
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    check(&meta, limit)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64, limit));
    }
    Ok(bytes)
}

/// A regular file of at most `limit` bytes.
pub fn check(meta: &std::fs::Metadata, limit: u64) -> std::io::Result<()> {
    if !meta.is_file() {
        return Err(not_regular());
    }
    if meta.len() > limit {
        return Err(too_large(meta.len(), limit));
    }
    Ok(())
}

/// Why a FIFO, a device or a directory is not read.
pub fn not_regular() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file")
}

/// [`read`] as UTF-8 text.
pub fn read_to_string(path: &Path, limit: u64) -> std::io::Result<String> {
    String::from_utf8(read(path, limit)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not valid UTF-8: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_large_and_special_files_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        // Sparse: 1 GiB that reading would really allocate.
        std::fs::File::create(&p).unwrap().set_len(1 << 30).unwrap();
        let e = read(&p, 16 << 20).unwrap_err();
        assert!(e.to_string().contains("1073741824 bytes, over the 16777216-byte limit"), "{e}");
        std::fs::write(&p, "abc").unwrap();
        assert_eq!(read(&p, 3).unwrap(), b"abc");
        assert!(read(&p, 2).is_err());
        assert!(read(dir.path(), 10).is_err());
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        // Refused at once, not blocked in open(2).
        assert_eq!(read(&fifo, 10).unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    }
}
