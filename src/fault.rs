//! Fault injection for tests: a documented test facility, off unless `GRANARY_FAULT` is set.
//!
//! `GRANARY_FAULT` is a comma-separated list of `ACTION:ARG`:
//! - `abort:LABEL`, `segv:LABEL`, `stack-overflow:LABEL`, `hang:LABEL` — when a harvest worker
//!   is about to compile the pipeline labelled `LABEL`, it aborts, raises SIGSEGV, overflows its
//!   stack, or sleeps forever. Used to prove that `harvest --isolate` survives a compiler that
//!   crashes or never returns.
//! - `slow-write:MS` — every atomic file write sleeps `MS` milliseconds after writing half of
//!   the temporary file, so that kill tests can land in the middle of an archive write.
//!
//! The variable is read once per process. Production use never sets it.

use std::sync::OnceLock;
use std::time::Duration;

/// What to do at a pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `std::process::abort()`.
    Abort,
    /// Raise SIGSEGV, as a crashing driver would.
    Segv,
    /// Recurse until the stack overflows.
    StackOverflow,
    /// Never return.
    Hang,
}

#[derive(Default)]
struct Faults {
    at: Vec<(Action, String)>,
    slow_write: Option<Duration>,
}

fn faults() -> &'static Faults {
    static F: OnceLock<Faults> = OnceLock::new();
    F.get_or_init(|| parse(&std::env::var("GRANARY_FAULT").unwrap_or_default()))
}

fn parse(spec: &str) -> Faults {
    let mut f = Faults::default();
    for item in spec.split(',').filter(|s| !s.is_empty()) {
        let Some((action, arg)) = item.split_once(':') else { continue };
        let a = match action {
            "abort" => Action::Abort,
            "segv" => Action::Segv,
            "stack-overflow" => Action::StackOverflow,
            "hang" => Action::Hang,
            "slow-write" => {
                f.slow_write = arg.parse().ok().map(Duration::from_millis);
                continue;
            }
            _ => continue,
        };
        f.at.push((a, arg.to_string()));
    }
    f
}

/// The injected fault for the pipeline labelled `label`, if any.
pub fn action_for(label: Option<&str>) -> Option<Action> {
    let label = label?;
    faults().at.iter().find(|(_, l)| l == label).map(|(a, _)| *a)
}

/// Carries out `action`. Only returns for none of them.
pub fn trigger(action: Action) {
    match action {
        Action::Abort => std::process::abort(),
        Action::Segv => {
            // SAFETY: `signal` and `raise` take no pointers. Restoring the default disposition
            // first (the Rust runtime installs a SIGSEGV handler for stack-overflow reports)
            // makes the raised SIGSEGV terminate the process, exactly like a crashing driver.
            // Exercised by tests/isolate.rs.
            #[cfg(unix)]
            unsafe {
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
                libc::raise(libc::SIGSEGV);
            }
            std::process::abort();
        }
        Action::StackOverflow => {
            #[allow(unconditional_recursion)]
            fn recurse(n: u64) -> u64 {
                let buf = std::hint::black_box([n; 512]);
                recurse(buf[7].wrapping_add(1)).wrapping_add(buf[0])
            }
            std::hint::black_box(recurse(0));
        }
        Action::Hang => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
    }
}

/// The mid-write delay for atomic writes, if set.
pub fn slow_write() -> Option<Duration> {
    faults().slow_write
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_the_documented_spellings() {
        let f = super::parse("abort:a/b,hang:x,slow-write:15,bogus,nope:1");
        assert_eq!(f.at.len(), 2);
        assert_eq!(f.at[0], (super::Action::Abort, "a/b".to_string()));
        assert_eq!(f.slow_write, Some(std::time::Duration::from_millis(15)));
    }
}
