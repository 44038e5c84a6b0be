//! [`Bytes::Map`](crate::Bytes::Map): one-shot commands read profiles through a memory mapping
//! rather than a copy (no copy, no fresh pages: a large file is ready in a fraction of the
//! time). A mapped file that another process truncates while it is decoded raises SIGBUS; the
//! handler here turns that into an error naming the file and a clean exit instead of a crash.
//! The server, a long-running process serving several runs, copies files instead
//! ([`Bytes::Copy`](crate::Bytes::Copy)).

use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Once;
use xlens_store::{FileBytes, Format, Paging, StoreError};

/// The path of the file being mapped, for the handler's message (a leaked, never-freed string:
/// a one-shot process maps a few files).
static CURRENT: AtomicPtr<Vec<u8>> = AtomicPtr::new(std::ptr::null_mut());

#[cfg(unix)]
extern "C" fn on_sigbus(_: libc::c_int) {
    // Only async-signal-safe calls: write(2) and _exit(2).
    let put = |b: &[u8]| {
        // SAFETY: writes `b.len()` bytes from a valid slice to stderr.
        unsafe {
            libc::write(2, b.as_ptr().cast(), b.len());
        }
    };
    put(b"error: ");
    let p = CURRENT.load(Ordering::Acquire);
    if p.is_null() {
        put(b"a profile file");
    } else {
        // SAFETY: `CURRENT` only ever holds leaked, never-freed vectors.
        put(unsafe { &*p });
    }
    put(b": the file changed while xlens read it (truncated by another process?); run again once the writer has finished\n");
    // SAFETY: ends the process at once, as the signal's default action would, with status 1.
    unsafe { libc::_exit(1) }
}

fn install_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        #[cfg(unix)]
        // SAFETY: installs a handler that only calls async-signal-safe functions.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
        }
    });
}

/// Maps a profile file, with the SIGBUS handler in place.
pub(crate) fn map(path: &Path, format: Format, paging: Paging) -> Result<FileBytes, StoreError> {
    install_handler();
    let shown = Box::new(path.to_string_lossy().into_owned().into_bytes());
    CURRENT.store(Box::into_raw(shown), Ordering::Release);
    // SAFETY: a truncation while mapped raises SIGBUS, which the handler above turns into an
    // error message and exit.
    unsafe { xlens_store::map_path(path, format, paging) }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use xlens_store::Paging;

    const CHILD_FILE: &str = "XLENS_MAPPED_TEST_FILE";

    /// The child's half of the test below, in a process of its own: it maps the file, truncates
    /// it to a quarter under the mapping and decodes it. The SIGBUS handler ends the process.
    #[test]
    #[ignore = "run by a_file_truncated_while_mapped_is_an_error_naming_it in a child process"]
    fn child_truncates_the_file_under_its_mapping() {
        let Some(path) = std::env::var_os(CHILD_FILE).map(PathBuf::from) else {
            return;
        };
        let session = &xlens_store::discover(&path).unwrap()[0];
        let host = &session.hosts[0];
        let bytes = super::map(&host.path, host.format, Paging::Ahead).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(bytes.bytes().len() as u64 / 4).unwrap();
        let _ = crate::decode(&bytes, host.format, crate::Reads::default());
        panic!("decoding a file truncated under its mapping did not raise SIGBUS");
    }

    #[test]
    fn a_file_truncated_while_mapped_is_an_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("xlens-sigbus-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("vm.xplane.pb");
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/logdir/plugins/profile/jax_mlp_small/vm.xplane.pb");
        std::fs::copy(fixture, &f).unwrap();
        let before = std::fs::metadata(&f).unwrap().len();
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "--include-ignored", "--nocapture"])
            .arg("sigbus::tests::child_truncates_the_file_under_its_mapping")
            .env(CHILD_FILE, &f)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(f.to_str().unwrap()), "{err}");
        assert!(err.contains("changed while xlens read it"), "{err}");
        assert_eq!(std::fs::metadata(&f).unwrap().len(), before / 4);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
