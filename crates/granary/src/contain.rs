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
    /// Where it panicked (`file:line:column`), when the hook saw it.
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
                    location: info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column())),
                };
                LAST.with(|s| *s.borrow_mut() = Some(report));
            } else {
                previous(info);
            }
        }));
    });
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
    fn nested_and_sequential_catches_do_not_leak_reports() {
        assert_eq!(catch(|| catch(|| 1).unwrap() + 1), Ok(2));
        let inner = catch(|| catch(|| -> () { panic!("inner") }));
        assert_eq!(inner.unwrap().unwrap_err().message, "inner");
        assert_eq!(catch(|| 5), Ok(5));
    }
}
