//! The Khronos validation layer on granary's own Vulkan work: a `VK_EXT_debug_utils`
//! messenger whose messages are collected, per pipeline, into a [`ValidationLog`].
//!
//! [`Driver::load_with`](super::Driver::load_with) with [`DriverOptions::validation`]
//! enables `VK_LAYER_KHRONOS_validation` and `VK_EXT_debug_utils` (refusing with
//! [`VulkanError::NoValidationLayer`](super::VulkanError::NoValidationLayer), which names the
//! package to install, where the layer or the extension is missing), chains a messenger create
//! info into `VkInstanceCreateInfo` (so `vkCreateInstance` and `vkDestroyInstance` are
//! validated too) and registers a messenger for WARNING and ERROR messages of every type
//! (INFO and VERBOSE are off: the layer's INFO messages are progress notes, not findings).
//! Every message lands in the driver's log ([`Driver::validation`](super::Driver::validation)).
//! A registered messenger also turns off the layer's own printing on standard output, so a
//! command's `--json` output stays clean (checked on Debian 12's layer, 1.3.239).
//!
//! # Attribution
//!
//! The layer calls the messenger synchronously, on the thread making the Vulkan call. A
//! caller marks the work of one pipeline with [`scope`] (or the guard [`enter`]): a
//! thread-local stack of scopes holds the messages arriving on that thread while the scope is
//! open, and when it closes they are recorded under the scope's name, which is computed then
//! and only if a message arrived (so a name that is costly to find, such as a label looked up
//! in an archive, costs nothing on the valid path). Messages on a thread with no open scope
//! are recorded under [`DEVICE`]. The harvest backend opens a scope around each pipeline's
//! creation and the run-time loader around each `load`; shader modules and layouts are created
//! once, inside the scope of the first pipeline that needs them, so their messages are that
//! pipeline's. When no log exists in the process, a scope is one atomic load.
//!
//! # Object lifetime rules
//!
//! 1. The messenger's user data points at the `Arc<ValidationLog>` inside a
//!    [`MessengerData`], whose heap box never moves. [`Driver`](super::Driver) owns its
//!    `MessengerData` and destroys its messenger (`vkDestroyDebugUtilsMessengerEXT`) first in
//!    its `Drop`, then the instance (the messenger chained at instance creation stays valid
//!    through `vkDestroyInstance`); the `MessengerData` is a field, dropped only after `drop`
//!    returns. So the callback never runs with a dangling user-data pointer.
//! 2. An application that registers granary's callback itself ([`MessengerData::create_info`])
//!    keeps the `MessengerData` alive until it has destroyed that messenger and, where it
//!    chained the create info into `VkInstanceCreateInfo`, the instance.
//! 3. A log outlives every messenger pointing at it (rules 1 and 2) and is shared as an `Arc`
//!    by whoever reads it (a driver, a backend, a command).
//!
//! # Thread safety
//!
//! The callback runs on any number of threads at once. It reads its arguments, takes the
//! log's mutex for a push (or pushes to its own thread's scope stack), calls no Vulkan command
//! and never unwinds into the layer: its body runs under `catch_unwind`, and nothing in it
//! panics on input (null pointers and non-UTF-8 text are handled). This module's `unsafe`
//! blocks are the callback's reads of the pointers the layer passes; every Vulkan call
//! (creating and destroying the messenger) stays in the driver-calling modules (see [`super`]).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_void, CStr};
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use vulkanalia::vk;

/// The layer's name.
pub const LAYER: &str = "VK_LAYER_KHRONOS_validation";

/// The pipeline name of a message that arrived outside any [`scope`] (device creation,
/// instance destruction, another thread).
pub const DEVICE: &str = "(device)";

/// How many messages a log keeps whole; beyond that it only counts them ([`ValidationLog::counts`]
/// stays exact, [`ValidationLog::dropped`] says how many were not kept).
pub const MAX_KEPT: usize = 10_000;

/// What [`Driver::load_with`](super::Driver::load_with) sets up.
///
/// Thread safety: plain data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriverOptions {
    /// Enable `VK_LAYER_KHRONOS_validation` with a messenger collecting its WARNING and ERROR
    /// messages into a [`ValidationLog`] (default off: a game or a harvest pays nothing).
    pub validation: bool,
}

/// A message's severity.
///
/// Thread safety: plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// `VERBOSE` (not requested by granary's messenger).
    Verbose,
    /// `INFO` (not requested by granary's messenger).
    Info,
    /// `WARNING`: legal but probably not what was meant.
    Warning,
    /// `ERROR`: a violation of the specification's valid-usage rules.
    Error,
}

impl Severity {
    /// `verbose`, `info`, `warning` or `error`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Verbose => "verbose",
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    /// The severity [`Severity::name`] spells.
    pub fn parse(s: &str) -> Option<Severity> {
        [Severity::Verbose, Severity::Info, Severity::Warning, Severity::Error].into_iter().find(|v| v.name() == s)
    }

    fn of(flags: vk::DebugUtilsMessageSeverityFlagsEXT) -> Severity {
        use vk::DebugUtilsMessageSeverityFlagsEXT as F;
        if flags.contains(F::ERROR) {
            Severity::Error
        } else if flags.contains(F::WARNING) {
            Severity::Warning
        } else if flags.contains(F::INFO) {
            Severity::Info
        } else {
            Severity::Verbose
        }
    }
}

/// One message of the layer.
///
/// Thread safety: plain data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationMessage {
    /// Its severity.
    pub severity: Severity,
    /// `VkDebugUtilsMessageTypeFlagsEXT` bits (general, validation, performance).
    pub types: u32,
    /// The message id name (the VUID for a valid-usage error, e.g.
    /// `VUID-VkGraphicsPipelineCreateInfo-pDynamicStates-00754`); where the layer gave none,
    /// the id number as `0x%08x`.
    pub id: String,
    /// The message id number.
    pub id_number: i32,
    /// The layer's text.
    pub text: String,
    /// The pipeline it belongs to: the name of the [`scope`] open on the thread that made the
    /// call, or [`DEVICE`].
    pub pipeline: String,
}

/// Exact counts of one message id.
///
/// Thread safety: plain data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdCount {
    /// ERROR messages with this id.
    pub errors: u64,
    /// WARNING messages with this id.
    pub warnings: u64,
    /// INFO and VERBOSE messages with this id (none from granary's messenger).
    pub other: u64,
}

impl IdCount {
    /// Every message with this id.
    pub fn total(&self) -> u64 {
        self.errors + self.warnings + self.other
    }
}

/// A hook called with every message a log records ([`ValidationLog::set_sink`]).
type Sink = Box<dyn Fn(&ValidationMessage) + Send + Sync>;

#[derive(Default)]
struct State {
    kept: Vec<ValidationMessage>,
    dropped: u64,
    counts: BTreeMap<String, IdCount>,
    sink: Option<Sink>,
}

/// Every message the layer reported through one messenger, with its pipeline.
///
/// Thread safety: `Send + Sync`. The layer's callback records into it from any number of
/// threads at once (one short mutex section per message); every reader takes a consistent
/// snapshot under the same mutex.
pub struct ValidationLog {
    state: Mutex<State>,
}

/// Logs alive in the process: while there are none, [`scope`] does nothing but run its body.
static LIVE_LOGS: AtomicUsize = AtomicUsize::new(0);

impl ValidationLog {
    /// An empty log.
    pub fn new() -> Arc<ValidationLog> {
        LIVE_LOGS.fetch_add(1, Ordering::SeqCst);
        Arc::new(ValidationLog { state: Mutex::default() })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves counts that are still counts.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records `message` (what the callback does; also how a command adds the messages its
    /// worker processes reported). The sink, if any, is called under the log's lock.
    pub fn record(&self, message: ValidationMessage) {
        let mut s = self.state();
        let c = s.counts.entry(message.id.clone()).or_default();
        match message.severity {
            Severity::Error => c.errors += 1,
            Severity::Warning => c.warnings += 1,
            Severity::Info | Severity::Verbose => c.other += 1,
        }
        if let Some(sink) = &s.sink {
            sink(&message);
        }
        if s.kept.len() < MAX_KEPT {
            s.kept.push(message);
        } else {
            s.dropped += 1;
        }
    }

    /// Calls `sink` with every message recorded so far, in order, then with every later one
    /// as it is recorded, replacing any sink set before (a `granary worker` writes each
    /// message to its parent this way). The sink runs under the log's lock, so it sees each
    /// message once and in order, and must not call back into this log.
    pub fn set_sink(&self, sink: impl Fn(&ValidationMessage) + Send + Sync + 'static) {
        let mut s = self.state();
        for m in &s.kept {
            sink(m);
        }
        s.sink = Some(Box::new(sink));
    }

    /// The messages kept, in the order they were recorded (at most [`MAX_KEPT`]).
    pub fn messages(&self) -> Vec<ValidationMessage> {
        self.state().kept.clone()
    }

    /// Exact counts per message id, by id.
    pub fn counts(&self) -> BTreeMap<String, IdCount> {
        self.state().counts.clone()
    }

    /// Every message recorded.
    pub fn total(&self) -> u64 {
        self.state().counts.values().map(IdCount::total).sum()
    }

    /// ERROR messages recorded.
    pub fn errors(&self) -> u64 {
        self.state().counts.values().map(|c| c.errors).sum()
    }

    /// WARNING messages recorded.
    pub fn warnings(&self) -> u64 {
        self.state().counts.values().map(|c| c.warnings).sum()
    }

    /// Messages counted but not kept (beyond [`MAX_KEPT`]).
    pub fn dropped(&self) -> u64 {
        self.state().dropped
    }
}

impl Drop for ValidationLog {
    fn drop(&mut self) {
        LIVE_LOGS.fetch_sub(1, Ordering::SeqCst);
    }
}

impl std::fmt::Debug for ValidationLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state();
        f.debug_struct("ValidationLog").field("kept", &s.kept.len()).field("counts", &s.counts).finish()
    }
}

/// The user data of granary's callback: one log, in a box whose address the messenger holds.
///
/// Thread safety: `Send + Sync`. Keep it alive until every messenger made from
/// [`MessengerData::create_info`] is destroyed (the module's lifetime rules).
pub struct MessengerData {
    /// The box gives the `Arc` itself a fixed address (the user data), which the callback
    /// clones for the messages it holds until their scope closes.
    #[allow(clippy::redundant_allocation)]
    log: Box<Arc<ValidationLog>>,
}

impl MessengerData {
    /// User data for a messenger recording into `log`.
    pub fn new(log: Arc<ValidationLog>) -> MessengerData {
        MessengerData { log: Box::new(log) }
    }

    /// The log the messenger records into.
    pub fn log(&self) -> &Arc<ValidationLog> {
        &self.log
    }

    /// A messenger create info for WARNING and ERROR messages of the general, validation and
    /// performance types (`DEVICE_ADDRESS_BINDING` needs `VK_EXT_device_address_binding_report`,
    /// which granary does not enable: asking for it is itself a validation error, as the
    /// layer's 1.4 releases report), with granary's
    /// callback and a pointer to this value's log as user data: valid to pass to
    /// `vkCreateDebugUtilsMessengerEXT` (or to chain into `VkInstanceCreateInfo`) while `self`
    /// lives, and `self` must outlive the messenger.
    pub fn create_info(&self) -> vk::DebugUtilsMessengerCreateInfoEXT {
        use vk::DebugUtilsMessageSeverityFlagsEXT as S;
        use vk::DebugUtilsMessageTypeFlagsEXT as T;
        let log: *const Arc<ValidationLog> = &*self.log;
        vk::DebugUtilsMessengerCreateInfoEXT {
            message_severity: S::WARNING | S::ERROR,
            message_type: T::GENERAL | T::VALIDATION | T::PERFORMANCE,
            user_callback: Some(on_message),
            user_data: log.cast_mut().cast(),
            ..Default::default()
        }
    }
}

impl std::fmt::Debug for MessengerData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessengerData").field("log", &self.log).finish()
    }
}

/// A message that arrived inside a scope, waiting for the scope's name.
struct Pending {
    log: Arc<ValidationLog>,
    message: ValidationMessage,
}

thread_local! {
    /// The thread's open scopes, innermost last, each with the messages that arrived in it.
    static SCOPES: RefCell<Vec<Vec<Pending>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `body` as the work of one pipeline: every message the layer reports on this thread
/// while it runs is recorded under `name()`, called once after `body` returns (or unwinds),
/// and only if a message arrived. Scopes nest (the innermost gets the message).
///
/// Thread safety: the scope is this thread's; other threads' messages are not in it.
pub fn scope<R>(name: impl FnOnce() -> String, body: impl FnOnce() -> R) -> R {
    let _scope = enter(name);
    body()
}

/// Opens a scope on this thread until the guard is dropped (see [`scope`]). Drop guards in the
/// reverse order of their creation, on the thread that made them (the guard is not `Send`);
/// a guard that is leaked leaves its messages unrecorded.
pub fn enter<F: FnOnce() -> String>(name: F) -> Scope<F> {
    let depth = if LIVE_LOGS.load(Ordering::Relaxed) == 0 {
        None
    } else {
        SCOPES
            .try_with(|s| {
                let mut s = s.try_borrow_mut().ok()?;
                s.push(Vec::new());
                Some(s.len() - 1)
            })
            .ok()
            .flatten()
    };
    Scope { name: Some(name), depth, _not_send: PhantomData }
}

/// An open [`scope`]: see [`enter`].
///
/// Thread safety: neither `Send` nor `Sync`; it belongs to the thread that opened it.
#[must_use = "the scope closes when the guard is dropped"]
pub struct Scope<F: FnOnce() -> String> {
    name: Option<F>,
    /// Index of its frame on the thread's stack; `None` when no log existed at `enter`.
    depth: Option<usize>,
    _not_send: PhantomData<*const ()>,
}

impl<F: FnOnce() -> String> Drop for Scope<F> {
    fn drop(&mut self) {
        let Some(depth) = self.depth else { return };
        // This frame and any a leaked inner guard left above it.
        let pending: Vec<Pending> = SCOPES
            .try_with(|s| match s.try_borrow_mut() {
                Ok(mut s) if depth < s.len() => s.drain(depth..).flatten().collect(),
                _ => Vec::new(),
            })
            .unwrap_or_default();
        if pending.is_empty() {
            return;
        }
        let name = self.name.take().and_then(|f| std::panic::catch_unwind(AssertUnwindSafe(f)).ok());
        let name = name.unwrap_or_else(|| "(unnamed pipeline)".to_string());
        for p in pending {
            p.log.record(ValidationMessage { pipeline: name.clone(), ..p.message });
        }
    }
}

/// Records a message: into the innermost scope open on this thread, else under [`DEVICE`].
fn deliver(log: &Arc<ValidationLog>, message: ValidationMessage) {
    let mut message = Some(message);
    // No frame (no open scope, the stack being changed — which no Vulkan call does — or the
    // thread's storage already gone at its exit): the message is recorded as the device's.
    let _ = SCOPES.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            if let Some(frame) = s.last_mut() {
                if let Some(m) = message.take() {
                    frame.push(Pending { log: log.clone(), message: m });
                }
            }
        }
    });
    if let Some(m) = message {
        log.record(m);
    }
}

/// Text of a NUL-terminated string the layer passed; empty for null.
///
/// # Safety
///
/// `p` is null or points at a NUL-terminated string valid for the duration of the call.
unsafe fn text_of(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-null, and NUL-terminated and live for this call (the caller's contract).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Granary's `PFN_vkDebugUtilsMessengerCallbackEXT`. Never unwinds and always returns
/// `VK_FALSE` (the specification reserves `VK_TRUE` for layer development).
///
/// # Safety
///
/// Called only by the Vulkan loader or a layer, with `data` pointing at a valid callback
/// data structure for the duration of the call and `user` the pointer
/// [`MessengerData::create_info`] set, whose `MessengerData` is alive (lifetime rules).
unsafe extern "system" fn on_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT,
    user: *mut c_void,
) -> vk::Bool32 {
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
        if user.is_null() || data.is_null() {
            return;
        }
        // SAFETY: `user` is the address of the `Arc<ValidationLog>` boxed in a live
        // `MessengerData` (set by `create_info`; the messenger is destroyed before that value
        // is dropped, rules 1 and 2), and only read here.
        let log = unsafe { &*user.cast_const().cast::<Arc<ValidationLog>>() };
        // SAFETY: the layer passes a valid structure for the duration of the call.
        let data = unsafe { &*data };
        // SAFETY: both strings are null or NUL-terminated and valid for the call (the
        // specification of VkDebugUtilsMessengerCallbackDataEXT).
        let (id, text) = unsafe { (text_of(data.message_id_name), text_of(data.message)) };
        let id = if id.is_empty() { format!("0x{:08x}", data.message_id_number as u32) } else { id };
        let message = ValidationMessage {
            severity: Severity::of(severity),
            types: types.bits(),
            id,
            id_number: data.message_id_number,
            text,
            pipeline: DEVICE.to_string(),
        };
        deliver(log, message);
    }));
    vk::FALSE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: &str) -> ValidationMessage {
        ValidationMessage {
            severity: Severity::Error,
            types: 0,
            id: id.into(),
            id_number: 1,
            text: format!("text of {id}"),
            pipeline: DEVICE.into(),
        }
    }

    /// The callback as the layer calls it, on this thread.
    fn call(data: &MessengerData, id: &CStr, severity: vk::DebugUtilsMessageSeverityFlagsEXT) {
        let info = data.create_info();
        let cb = vk::DebugUtilsMessengerCallbackDataEXT {
            message_id_name: id.as_ptr(),
            message_id_number: 7,
            message: c"a message".as_ptr(),
            ..Default::default()
        };
        let f = info.user_callback.expect("callback");
        // SAFETY: `cb` and the strings live for the call; `info.user_data` points into `data`.
        let r = unsafe { f(severity, vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION, &cb, info.user_data) };
        assert_eq!(r, vk::FALSE);
    }

    #[test]
    fn messages_are_attributed_to_the_innermost_scope_of_their_thread_and_named_lazily() {
        let data = MessengerData::new(ValidationLog::new());
        let log = data.log().clone();
        call(&data, c"VUID-outside", vk::DebugUtilsMessageSeverityFlagsEXT::ERROR);
        let mut named = 0;
        scope(
            || {
                named += 1;
                "outer".to_string()
            },
            || {
                call(&data, c"VUID-outer", vk::DebugUtilsMessageSeverityFlagsEXT::WARNING);
                scope(|| "inner".into(), || call(&data, c"VUID-inner", vk::DebugUtilsMessageSeverityFlagsEXT::ERROR));
                // Another thread's message is not this scope's.
                std::thread::scope(|s| {
                    s.spawn(|| call(&data, c"VUID-other-thread", vk::DebugUtilsMessageSeverityFlagsEXT::ERROR));
                });
            },
        );
        assert_eq!(named, 1);
        let mut never = false;
        scope(
            || {
                never = true;
                "clean".into()
            },
            || (),
        );
        assert!(!never, "a scope without messages never computes its name");
        let got: Vec<(String, String, Severity)> =
            log.messages().into_iter().map(|m| (m.id, m.pipeline, m.severity)).collect();
        let want = |id: &str, p: &str, s| (id.to_string(), p.to_string(), s);
        assert_eq!(
            got,
            [
                want("VUID-outside", DEVICE, Severity::Error),
                want("VUID-inner", "inner", Severity::Error),
                want("VUID-other-thread", DEVICE, Severity::Error),
                want("VUID-outer", "outer", Severity::Warning),
            ]
        );
        assert_eq!((log.total(), log.errors(), log.warnings()), (4, 3, 1));
        assert_eq!(log.messages()[0].text, "a message");
    }

    #[test]
    fn a_panicking_body_still_records_its_messages_and_a_panicking_name_is_contained() {
        let data = MessengerData::new(ValidationLog::new());
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
            scope(
                || "p".into(),
                || {
                    call(&data, c"VUID-before-panic", vk::DebugUtilsMessageSeverityFlagsEXT::ERROR);
                    panic!("the body panics");
                },
            )
        }));
        assert!(r.is_err());
        scope(|| panic!("the name panics"), || call(&data, c"VUID-x", vk::DebugUtilsMessageSeverityFlagsEXT::ERROR));
        let pipelines: Vec<String> = data.log().messages().into_iter().map(|m| m.pipeline).collect();
        assert_eq!(pipelines, ["p", "(unnamed pipeline)"]);
    }

    #[test]
    fn null_arguments_and_missing_ids_do_not_panic() {
        let data = MessengerData::new(ValidationLog::new());
        let info = data.create_info();
        let f = info.user_callback.expect("callback");
        let sev = vk::DebugUtilsMessageSeverityFlagsEXT::WARNING;
        let types = vk::DebugUtilsMessageTypeFlagsEXT::GENERAL;
        // SAFETY: null data and user pointers are what the callback must survive.
        unsafe {
            assert_eq!(f(sev, types, std::ptr::null(), info.user_data), vk::FALSE);
            let cb = vk::DebugUtilsMessengerCallbackDataEXT { message_id_number: -2, ..Default::default() };
            assert_eq!(f(sev, types, &cb, std::ptr::null_mut()), vk::FALSE);
            assert_eq!(f(sev, types, &cb, info.user_data), vk::FALSE);
        }
        let m = data.log().messages();
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].id.as_str(), m[0].text.as_str(), m[0].severity), ("0xfffffffe", "", Severity::Warning));
    }

    #[test]
    fn counts_stay_exact_beyond_the_kept_messages_and_a_sink_sees_each_once() {
        let log = ValidationLog::new();
        log.record(message("VUID-a"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        log.set_sink(move |m| s.lock().unwrap().push(m.id.clone()));
        for _ in 0..MAX_KEPT + 5 {
            log.record(message("VUID-b"));
        }
        assert_eq!(log.messages().len(), MAX_KEPT);
        assert_eq!(log.dropped(), 6);
        assert_eq!(log.counts()["VUID-b"].errors, MAX_KEPT as u64 + 5);
        assert_eq!(log.total(), MAX_KEPT as u64 + 6);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), MAX_KEPT + 6);
        assert_eq!(seen[0], "VUID-a");
        assert_eq!(Severity::parse("warning"), Some(Severity::Warning));
        assert_eq!(Severity::parse("loud"), None);
    }
}
