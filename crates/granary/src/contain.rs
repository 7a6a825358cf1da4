//! Containing panics of code granary does not control (naga, a driver) at a task boundary.
//!
//! [`catch`] runs a closure and turns an unwind into a [`PanicReport`] carrying the panic's
//! message and source location. The location is only known to the panic hook, so the first
//! call installs a hook that, on a thread currently inside [`catch`], records message and
//! location instead of printing them, and otherwise defers to the hook that was installed
//! before it (the default one prints as usual). An application that later replaces the hook
//! still gets contained panics, with the message but without the location.

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, PanicHookInfo};
use std::sync::Once;

/// A panic caught at a task boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanicReport {
    /// The panic message (`"Expression [3] is not cached!"`).
    pub message: String,
    /// Where it panicked (`file:line:column`), when the hook saw it, with the file relative
    /// to its crate (`naga-30.0.2/src/back/hlsl/writer.rs`), never a path of the machine that
    /// built granary.
    pub location: Option<String>,
}

impl std::fmt::Display for PanicReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.location {
            Some(at) => write!(f, "panicked at {at}: {}", self.message),
            None => write!(f, "panicked: {}", self.message),
        }
    }
}

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static LAST: RefCell<Option<PanicReport>> = const { RefCell::new(None) };
}

fn message_of(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
            if DEPTH.with(Cell::get) > 0 {
                let report = PanicReport {
                    message: message_of(info.payload()),
                    location: info
                        .location()
                        .map(|l| format!("{}:{}:{}", crate_relative(l.file()), l.line(), l.column())),
                };
                LAST.with(|s| *s.borrow_mut() = Some(report));
            } else {
                previous(info);
            }
        }));
    });
}

/// `file` (a panic location, as the compiler wrote it) relative to its crate's source: a
/// dependency's path below Cargo's registry or git checkouts starts at the crate's folder
/// (`naga-30.0.2/src/…`), the standard library's below `/rustc/<hash>/` at `library/…`, a
/// workspace crate's at `crates/…`. Other paths are kept.
fn crate_relative(file: &str) -> String {
    let f = file.replace('\\', "/");
    if let Some(i) = f.find("/registry/src/") {
        // `…/registry/src/<index folder>/<crate>-<version>/…`
        if let Some((_, rest)) = f[i + "/registry/src/".len()..].split_once('/') {
            return rest.to_string();
        }
    }
    if let Some(i) = f.find("/git/checkouts/") {
        // `…/git/checkouts/<repository>-<hash>/<revision>/…`
        let mut parts = f[i + "/git/checkouts/".len()..].splitn(3, '/');
        if let (Some(repo), Some(_), Some(rest)) = (parts.next(), parts.next(), parts.next()) {
            return format!("{repo}/{rest}");
        }
    }
    if let Some(rest) = f.strip_prefix("/rustc/") {
        if let Some((_, rest)) = rest.split_once('/') {
            return rest.to_string();
        }
    }
    if f.starts_with('/') {
        if let Some(i) = f.rfind("/crates/") {
            return f[i + 1..].to_string();
        }
    }
    f
}

/// Runs `f`; a panic inside it (on this thread) becomes `Err` with its message and location.
///
/// `f` is treated as unwind safe: callers only use it where a panicked computation's state is
/// discarded (a stage function's result cell stores the error; nothing half-built escapes).
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, PanicReport> {
    install_hook();
    DEPTH.with(|d| d.set(d.get() + 1));
    let r = std::panic::catch_unwind(AssertUnwindSafe(f));
    DEPTH.with(|d| d.set(d.get() - 1));
    r.map_err(|payload| {
        let seen = LAST.with(|s| s.borrow_mut().take());
        seen.unwrap_or_else(|| PanicReport { message: message_of(&*payload), location: None })
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn catches_message_and_location() {
        let r = catch(|| -> u32 { panic!("Expression [{}] is not cached!", 3) });
        let e = r.unwrap_err();
        assert_eq!(e.message, "Expression [3] is not cached!");
        let at = e.location.clone().expect("the hook saw the location");
        assert!(at.contains("contain.rs:"), "{at}");
        assert!(e.to_string().starts_with("panicked at "), "{e}");
    }

    #[test]
    fn locations_are_relative_to_their_crate() {
        let cases = [
            (
                "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/naga-30.0.2/src/back/hlsl/writer.rs",
                "naga-30.0.2/src/back/hlsl/writer.rs",
            ),
            (
                "/home/ci/.cargo/git/checkouts/wgpu-4ce5ef1bd8a1f4ed/a1b2c3d/naga/src/lib.rs",
                "wgpu-4ce5ef1bd8a1f4ed/naga/src/lib.rs",
            ),
            (
                "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/slice/index.rs",
                "library/core/src/slice/index.rs",
            ),
            ("/work/main/crates/granary/src/contain.rs", "crates/granary/src/contain.rs"),
            ("crates/granary/src/contain.rs", "crates/granary/src/contain.rs"),
            ("C:\\Users\\me\\.cargo\\registry\\src\\index\\naga-30.0.2\\src\\lib.rs", "naga-30.0.2/src/lib.rs"),
        ];
        for (file, want) in cases {
            assert_eq!(crate_relative(file), want, "{file}");
        }
    }

    #[test]
    fn nested_and_sequential_catches_do_not_leak_reports() {
        assert_eq!(catch(|| catch(|| 1).unwrap() + 1), Ok(2));
        let inner = catch(|| catch(|| -> () { panic!("inner") }));
        assert_eq!(inner.unwrap().unwrap_err().message, "inner");
        assert_eq!(catch(|| 5), Ok(5));
    }
}
