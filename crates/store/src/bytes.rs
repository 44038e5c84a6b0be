//! A host file's bytes: copied, mapped, or inflated while they are read.

use super::*;

/// A file's bytes, decompressed if needed.
pub struct FileBytes {
    inner: Inner,
    pub path: PathBuf,
    /// Size on disk (compressed size for gzip files).
    pub stored_bytes: u64,
}

pub(super) enum Inner {
    Anon(memmap2::MmapMut),
    Heap(Vec<u8>),
    Mapped(memmap2::Mmap, Paging),
}

impl FileBytes {
    pub fn bytes(&self) -> &[u8] {
        match &self.inner {
            Inner::Anon(m) => m,
            Inner::Heap(v) => v,
            Inner::Mapped(m, _) => m,
        }
    }

    /// Whether bytes given back with [`FileBytes::release_range`] still read as they were (a file
    /// mapping faults them in again from the page cache; a copy's read as zeros).
    pub fn rereadable(&self) -> bool {
        !matches!(self.inner, Inner::Anon(_))
    }

    /// Brings the pages of `start..end` in at once, where they would otherwise come in one
    /// fault at a time (a mapping with [`Paging::OnDemand`]); a hint, a no-op elsewhere.
    pub fn bring_in(&self, start: usize, end: usize) {
        if let Inner::Mapped(m, Paging::OnDemand) = &self.inner {
            let page = 4096;
            let from = start / page * page;
            let to = end.min(m.len());
            if to > from {
                // Only a hint: on a kernel without it, the pages fault in as they are read.
                let _ = m.advise_range(memmap2::Advice::PopulateRead, from, to - from);
            }
        }
    }

    /// Gives back to the OS the memory of the whole pages inside `start..end`, which the caller
    /// will not read again (afterwards a copy reads as zeros, a mapped file as its contents, faulted
    /// in again). A no-op where that is not possible.
    /// Pages shared with bytes outside the range are kept, so disjoint ranges may be released
    /// from different threads while the rest is being read.
    pub fn release_range(&self, start: usize, end: usize) {
        let len = self.bytes().len();
        let page = 4096;
        let from = start.div_ceil(page) * page;
        let to = end.min(len) / page * page;
        if to <= from {
            return;
        }
        match &self.inner {
            // SAFETY: the mapping is private and anonymous; DONTNEED only makes the released
            // pages read as zeros, and callers promise not to read them again.
            Inner::Anon(m) => unsafe {
                let _ =
                    m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from);
            },
            // SAFETY: a read-only file mapping: DONTNEED only unmaps the pages from this process
            // (the page cache keeps them; a later read would fault them back in), and callers
            // promise not to read them again.
            Inner::Mapped(m, _) => unsafe {
                let _ =
                    m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from);
            },
            Inner::Heap(_) => {}
        }
    }
}

/// Reads a host file fully into memory (decompressing gzip).
pub fn read(file: &HostFile) -> Result<FileBytes, StoreError> {
    read_path(&file.path, file.format)
}

/// The local file holding `path`'s bytes: `path` itself, or for a bucket URL its copy in the
/// local cache, fetched first when missing or stale.
pub(super) fn local_copy(path: &Path) -> Result<PathBuf, StoreError> {
    match bucket_url(path) {
        #[cfg(feature = "cloud")]
        Some(url) => remote::fetch(url),
        #[cfg(not(feature = "cloud"))]
        Some(url) => Err(StoreError::NoCloud { url: url.into() }),
        None => Ok(local(path).to_path_buf()),
    }
}

/// Reads any path (or bucket URL) as a profile of `format`.
pub fn read_path(path: &Path, format: Format) -> Result<FileBytes, StoreError> {
    if format == Format::XSpaceRiegeli {
        return Err(StoreError::Unsupported {
            path: path.to_path_buf(),
            what: "Riegeli (.xplane.riegeli)",
        });
    }
    let copy = local_copy(path)?;
    let mut fb = read_local(&copy, format).map_err(|e| e.at(path))?;
    fb.path = path.to_path_buf();
    Ok(fb)
}

pub(super) fn read_local(path: &Path, format: Format) -> Result<FileBytes, StoreError> {
    if format == Format::XSpaceRiegeli {
        return Err(StoreError::Unsupported {
            path: path.to_path_buf(),
            what: "Riegeli (.xplane.riegeli)",
        });
    }
    let io = |e| StoreError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let (len, gz) = size_and_gzip(path, path)?;
    let mut f = fs::File::open(path).map_err(io)?;
    if gz {
        let mut out = Vec::with_capacity(gzip_size_hint(&mut f, len));
        gunzip::Gunzip::new(std::io::BufReader::with_capacity(GZ_READ, f))
            .read_to_end(&mut out)
            .map_err(|e| StoreError::Gzip {
                path: path.to_path_buf(),
                source: e,
            })?;
        return Ok(FileBytes {
            inner: Inner::Heap(out),
            path: path.to_path_buf(),
            stored_bytes: len,
        });
    }
    let size = usize::try_from(len).map_err(|_| {
        io(std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            "file too large for this platform",
        ))
    })?;
    let inner = if size == 0 {
        Inner::Heap(Vec::new())
    } else {
        let mut m = memmap2::MmapMut::map_anon(size).map_err(io)?;
        // Huge pages where the kernel offers them: a few hundred page faults fewer per 100 MB,
        // which is a good part of the read time. Only a hint; failure changes nothing.
        #[cfg(target_os = "linux")]
        let _ = m.advise(memmap2::Advice::HugePage);
        read_all(&mut f, &mut m[..]).map_err(io)?;
        Inner::Anon(m)
    };
    Ok(FileBytes {
        inner,
        path: path.to_path_buf(),
        stored_bytes: len,
    })
}

/// How a mapped file's pages come in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paging {
    /// All at once, as the file is mapped: fastest to read (on the 207 MB JAX profile, 11 ms
    /// for the mapping against 22 ms more decoding on demand), but the whole file is resident
    /// until the decoder gives pages back.
    Ahead,
    /// As the decoder reaches them: only the part being read is resident, as the decoder gives
    /// pages back behind it (for decoding host after host in bounded memory).
    OnDemand,
}

/// Maps a host file into memory instead of copying it ([`map_path`]).
///
/// # Safety
/// See [`map_path`].
pub unsafe fn map(file: &HostFile, paging: Paging) -> Result<FileBytes, StoreError> {
    map_path(&file.path, file.format, paging)
}

/// Maps `path` into memory instead of copying it: no copy and no fresh pages, so a large file is
/// ready in a fraction of [`read_path`]'s time. Compressed and empty files are read as by
/// [`read_path`].
///
/// # Safety
/// The bytes are the file's page cache: if another process truncates the file while they are
/// in use, touching a page past its new end raises SIGBUS, which ends the process unless it
/// handles that signal. Only for short-lived processes that install such a handler (the CLI turns
/// it into an error naming the file); a long-running server must use [`read`].
pub unsafe fn map_path(
    path: &Path,
    format: Format,
    paging: Paging,
) -> Result<FileBytes, StoreError> {
    let copy = local_copy(path)?;
    // SAFETY: passed on to the caller.
    let mut fb = unsafe { map_local(&copy, format, paging) }.map_err(|e| e.at(path))?;
    fb.path = path.to_path_buf();
    Ok(fb)
}

/// How much of a gzip file is read from disk at a time.
pub(super) const GZ_READ: usize = 64 << 10;

/// A gzip file opened to be inflated while it is read (see [`open_gzip`]).
pub struct Inflating {
    /// The inflated bytes, read as they are inflated.
    pub reader: gunzip::Gunzip<std::io::BufReader<fs::File>>,
    /// The uncompressed size the file states, when plausible; 0 otherwise.
    pub size: usize,
    /// The path (or bucket URL) asked for.
    pub path: PathBuf,
    /// Size on disk.
    pub stored_bytes: u64,
}

/// Opens `path` (a bucket URL through its local copy) to be inflated while it is read, so that
/// a decoder can work on the start of the file before the end is inflated; `None` when the file
/// is not gzip (read it with [`read_path`] or [`map_path`]).
pub fn open_gzip(path: &Path) -> Result<Option<Inflating>, StoreError> {
    let copy = local_copy(path)?;
    let io = |e| StoreError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let (len, gz) = size_and_gzip(&copy, path)?;
    if !gz {
        return Ok(None);
    }
    let mut f = fs::File::open(&copy).map_err(io)?;
    let size = gzip_size_hint(&mut f, len);
    // From the start, whatever the size's lookup left the position at.
    let f = fs::File::open(&copy).map_err(io)?;
    Ok(Some(Inflating {
        reader: gunzip::Gunzip::new(std::io::BufReader::with_capacity(GZ_READ, f)),
        size,
        path: path.to_path_buf(),
        stored_bytes: len,
    }))
}

/// The size of the local file `local` and whether it starts as gzip does; errors name `path`.
pub(super) fn size_and_gzip(local: &Path, path: &Path) -> Result<(u64, bool), StoreError> {
    let io = |e| StoreError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let mut f = fs::File::open(local).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => StoreError::NotFound {
            path: path.to_path_buf(),
        },
        _ => io(e),
    })?;
    let len = f.metadata().map_err(io)?.len();
    let mut magic = [0u8; 2];
    let n = f.read(&mut magic).map_err(io)?;
    Ok((len, n == 2 && magic == [0x1f, 0x8b]))
}

/// How many bytes a host file's decoder reads: for a local gzip file, the size its trailer states
/// (when plausible; modulo 4 GiB, so a larger text may count less), else its size as listed (a
/// bucket's gzip files too, whose trailer is not fetched for this).
pub fn inflated_size_hint(file: &HostFile) -> u64 {
    if bucket_url(&file.path).is_some() {
        return file.bytes;
    }
    let Ok((len, true)) = size_and_gzip(&file.path, &file.path) else {
        return file.bytes;
    };
    let Ok(mut f) = fs::File::open(&file.path) else {
        return file.bytes;
    };
    match gzip_size_hint(&mut f, len) {
        0 => file.bytes,
        n => n as u64,
    }
}

/// The uncompressed size a gzip file states in its last four bytes (modulo 4 GiB, of its last
/// member), when plausible, to size the output once instead of growing (and copying) it while
/// inflating; 0 otherwise. Leaves `f` at its start.
pub(super) fn gzip_size_hint(f: &mut fs::File, len: u64) -> usize {
    use std::io::{Seek, SeekFrom};
    let mut tail = [0u8; 4];
    let stated =
        if len >= 18 && f.seek(SeekFrom::End(-4)).is_ok() && f.read_exact(&mut tail).is_ok() {
            u64::from(u32::from_le_bytes(tail))
        } else {
            0
        };
    if f.seek(SeekFrom::Start(0)).is_err() {
        return 0;
    }
    // Deflate expands at most about 1032 times; a larger claim is not the size.
    if stated < len / 2 || stated > len.saturating_mul(1032) {
        return 0;
    }
    usize::try_from(stated).unwrap_or(0)
}

/// [`map_path`] of a local file.
///
/// # Safety
/// See [`map_path`].
pub(super) unsafe fn map_local(
    path: &Path,
    format: Format,
    paging: Paging,
) -> Result<FileBytes, StoreError> {
    let io = |e| StoreError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let f = fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => StoreError::NotFound {
            path: path.to_path_buf(),
        },
        _ => io(e),
    })?;
    let len = f.metadata().map_err(io)?.len();
    if format == Format::XSpaceRiegeli || len < 2 {
        return read_local(path, format);
    }
    let mut options = memmap2::MmapOptions::new();
    if paging == Paging::Ahead {
        options.populate();
    }
    // SAFETY: the caller guarantees a SIGBUS from a concurrent truncation is handled.
    let m = unsafe { options.map(&f) }.map_err(io)?;
    if m.get(..2) == Some(&[0x1f, 0x8b][..]) {
        return read_local(path, format);
    }
    Ok(FileBytes {
        inner: Inner::Mapped(m, paging),
        path: path.to_path_buf(),
        stored_bytes: len,
    })
}

/// Files at least this large are read by two threads, one half each: copying out of the page
/// cache (and faulting in the buffer) is most of the read time, and it scales with cores.
pub(super) const PARALLEL_READ_MIN: usize = 16 << 20;

/// Fills `buf` from the start of `f`, in two halves on two threads for large files.
pub(super) fn read_all(f: &mut fs::File, buf: &mut [u8]) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if buf.len() >= PARALLEL_READ_MIN && cores > 1 {
            let half = buf.len() / 2;
            let (a, b) = buf.split_at_mut(half);
            let file: &fs::File = f;
            // The second half waits in a cell, so that it can still be read here if no thread
            // can be started.
            let cell = std::sync::Mutex::new(Some(b));
            return std::thread::scope(|s| {
                let cell = &cell;
                let read_b = move || match cell.lock().ok().and_then(|mut g| g.take()) {
                    Some(b) => file.read_exact_at(b, half as u64),
                    None => Ok(()),
                };
                let other = std::thread::Builder::new().spawn_scoped(s, read_b);
                let here = file.read_exact_at(a, 0);
                let there = match other {
                    Ok(h) => h
                        .join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("reading thread panicked"))),
                    Err(_) => read_b(),
                };
                here.and(there)
            });
        }
    }
    f.read_exact(buf)
}
