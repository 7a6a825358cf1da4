//! A test-only observer of every byte slice granary hands to a driver entry point that takes
//! data (`vkCreatePipelineBinariesKHR`, `vkCreatePipelineCache`, `vkCreateShaderModule`), so
//! the fuzz harness can assert that nothing unchecked reaches a driver. Exists only with the
//! `fault` feature (the test suite's); elsewhere every call is an empty inline function.

/// Which entry point a slice went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Data {
    /// `vkCreatePipelineBinariesKHR` data.
    Binary,
    /// `vkCreatePipelineCache` initial data.
    CacheInitial,
    /// `vkCreateShaderModule` code.
    Spirv,
}

#[cfg(feature = "fault")]
mod imp {
    use super::Data;
    use std::sync::Mutex;

    /// The observer: called with every slice before the driver sees it.
    pub type Observer = Box<dyn Fn(Data, &[u8]) + Send + Sync>;
    static OBSERVER: Mutex<Option<Observer>> = Mutex::new(None);

    /// Installs `f` (replacing any other) until [`clear`] is called.
    pub fn set(f: Observer) {
        *OBSERVER.lock().unwrap_or_else(|p| p.into_inner()) = Some(f);
    }
    /// Removes the observer.
    pub fn clear() {
        *OBSERVER.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
    pub(crate) fn observe(kind: Data, bytes: &[u8]) {
        if let Some(f) = OBSERVER.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            f(kind, bytes);
        }
    }
}

#[cfg(feature = "fault")]
pub use imp::{clear, set, Observer};

#[cfg(feature = "fault")]
pub(crate) use imp::observe;

/// No observer without the `fault` feature.
#[cfg(not(feature = "fault"))]
#[inline(always)]
pub(crate) fn observe(_kind: Data, _bytes: &[u8]) {}

/// Every binary of one `vkCreatePipelineBinariesKHR` call.
#[inline]
pub(crate) fn observe_binaries(binaries: &[(&[u8], &[u8])]) {
    for (_, data) in binaries {
        observe(Data::Binary, data);
    }
}
