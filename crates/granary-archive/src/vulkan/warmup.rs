//! [`Warmup`]: progressive pipeline creation that never blocks the caller.
//!
//! An engine asks for pipelines ([`Warmup::request`], by key, label, label prefix or list) with
//! a [`Priority`] and gets a [`Ticket`]; the frame asks [`Warmup::try_get`], which never waits
//! and never compiles; the engine's own job system runs the creations with
//! [`Warmup::pump`] (for at most a time budget, spawning nothing), or [`Warmup::spawn_workers`]
//! owns threads that do. A loading screen waits with [`Warmup::wait`].
//!
//! Invariants:
//! - A request is deduplicated by (pipeline key, link formats): asking again returns the same
//!   ticket (raising its priority if the new one is higher), so a pipeline is created once.
//! - The queue runs the highest priority first, first come first served within a priority;
//!   [`Warmup::boost`] moves a queued request up.
//! - `try_get` reads one atomic and a once-cell: it takes no lock, so a creation in flight on
//!   another thread (the driver may hold its own lock for milliseconds) cannot delay it.
//! - The queue's lock is held only to push and pop, never during a creation.
//! - A ticket's result is set once and kept: the pipeline lives as long as the `Warmup` or
//!   any `Arc<Loaded>` handed out, whichever is longer.
//! - With [`Warmup::optimize_linked`], a pipeline that was fast-linked from library parts gets
//!   a second generation, the same pipeline created whole in the background at a low
//!   priority; once that is made `try_get` returns it (still one lock-free read: its slot is a
//!   once-cell of the first), and the first generation is kept alive beside it, never
//!   destroyed while the warm-up lives (a command buffer may still use it). Those re-creations
//!   are not requests: they count apart ([`WarmupStats::optimized`]), so progress and `wait`
//!   are the engine's requests only.

use super::loader::{LoadError, Loaded, PipelineLoader};
use crate::key::PipelineKey;
use crate::render_state::TextureFormat;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// How soon a request should run: higher first. Requests of one priority run in the order
/// they were made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Priority(pub u32);

impl Priority {
    /// Background warm-up of what may be needed later.
    pub const LOW: Priority = Priority(0);
    /// The default.
    pub const NORMAL: Priority = Priority(100);
    /// Needed soon (the next level, the next area).
    pub const HIGH: Priority = Priority(200);
    /// A draw is waiting for it now.
    pub const CRITICAL: Priority = Priority(300);
}

/// One requested pipeline: poll it with [`Warmup::try_get`]. Cloning is cheap (an `Arc`).
///
/// Thread safety: `Send + Sync`.
#[derive(Clone)]
pub struct Ticket(Arc<Slot<Arc<Loaded>>>);

impl Ticket {
    /// The pipeline's key.
    pub fn key(&self) -> PipelineKey {
        self.0.request.key
    }
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket").field("key", &self.0.request.key.to_hex()).finish()
    }
}

/// Where a request stands ([`Warmup::try_get`]).
#[derive(Clone)]
pub enum Status {
    /// Created: bind `Loaded::pipeline`.
    Ready(Arc<Loaded>),
    /// Queued or being created.
    Pending,
    /// Creating it failed (the error says why; [`LoadError::kind`] for code).
    Failed(Arc<LoadError>),
    /// The archive holds no pipeline with this key.
    Absent,
}

impl std::fmt::Debug for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Ready(l) => write!(f, "Ready({:?})", l.source),
            Status::Pending => f.write_str("Pending"),
            Status::Failed(e) => write!(f, "Failed({e})"),
            Status::Absent => f.write_str("Absent"),
        }
    }
}

/// How far a warm-up has come ([`Warmup::progress`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WarmupProgress {
    /// Distinct requests made.
    pub requested: u64,
    /// Created.
    pub ready: u64,
    /// Failed.
    pub failed: u64,
    /// Not in the archive.
    pub absent: u64,
}

impl WarmupProgress {
    /// Requests not finished yet (queued or being created).
    pub fn pending(&self) -> u64 {
        self.requested - self.ready - self.failed - self.absent
    }

    /// Whether every request has finished.
    pub fn done(&self) -> bool {
        self.pending() == 0
    }
}

/// The warm-up's own counters ([`Warmup::stats`]); the loader's are in
/// [`PipelineLoader::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WarmupStats {
    /// Where the requests stand.
    pub progress: WarmupProgress,
    /// Requests whose first `try_get` found them not ready (each counted once): a frame that
    /// needed a pipeline before the warm-up had it.
    pub requested_too_late: u64,
    /// Requests being created now.
    pub in_flight: u64,
    /// Requests made again for a pipeline already requested (deduplicated).
    pub deduplicated: u64,
    /// Fast-linked pipelines made again whole ([`Warmup::optimize_linked`]) and swapped in.
    pub optimized: u64,
    /// Of those re-creations, the ones that failed (the fast-linked pipeline stays).
    pub optimize_failed: u64,
    /// Re-creations queued or running.
    pub optimize_pending: u64,
}

/// What one [`Warmup::pump`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pumped {
    /// Requests finished by this call (created, failed or absent).
    pub finished: usize,
    /// Whether requests are still queued.
    pub more: bool,
}

/// Progressive, deduplicated, prioritized creation of an archive's pipelines on top of a
/// [`PipelineLoader`]; see the module's invariants.
///
/// Thread safety: `Send + Sync`, and `Clone` (a handle: clones share one queue). Every method
/// may be called from any thread; [`pump`](Self::pump) from any number at once.
///
/// ```no_run
/// # use granary_archive::vulkan::{PipelineLoader, Priority, Status, Warmup};
/// # use std::{sync::Arc, time::Duration};
/// # fn f(loader: PipelineLoader) {
/// let warmup = Warmup::new(Arc::new(loader));
/// let tickets = warmup.request_prefix("forest/", Priority::NORMAL).unwrap();
/// // Each frame, on a job thread: at most 2 ms of creation.
/// warmup.pump(Duration::from_millis(2));
/// // On the render thread: never waits.
/// match warmup.try_get(&tickets[0]) {
///     Status::Ready(p) => { /* bind p.pipeline.handle() */ }
///     Status::Pending => { warmup.boost(&tickets[0], Priority::CRITICAL); /* skip the draw */ }
///     Status::Failed(_) | Status::Absent => { /* the engine's own fallback */ }
/// }
/// # }
/// ```
#[derive(Clone)]
pub struct Warmup {
    core: Arc<Core<PipelineLoader>>,
    /// What [`Warmup::refresh_sidecar`]'s write came to, once it ran.
    sidecar: Arc<Mutex<Option<SidecarSaved>>>,
}

/// What a sidecar write came to: the bytes of cache data written, or why not.
type SidecarSaved = Result<u64, Arc<LoadError>>;

impl Warmup {
    /// A warm-up over `loader` with an empty queue.
    pub fn new(loader: Arc<PipelineLoader>) -> Self {
        Warmup { core: Arc::new(Core::new(loader)), sidecar: Arc::default() }
    }

    /// After a driver update (the archive holds nothing for this device,
    /// [`PipelineLoader::needs_sidecar`]): requests every pipeline of the archive at `priority`
    /// (a background one, [`Priority::LOW`], so that what frames ask for goes first), and once
    /// every request of this warm-up has finished, the thread that finished the last one —
    /// a worker or a [`pump`](Self::pump) caller, never [`try_get`](Self::try_get) — writes the
    /// sidecar ([`PipelineLoader::save_sidecar`]); [`sidecar_saved`](Self::sidecar_saved) then
    /// says how it went. On the next launch the loader reads it and those compiles are cache
    /// hits. `Ok(None)` when nothing is needed (no sidecar configured, the archive has this
    /// device, or this archive's sidecar was loaded). If everything requested has already
    /// finished, the sidecar is written before this returns.
    pub fn refresh_sidecar(&self, priority: Priority) -> Result<Option<Vec<Ticket>>, LoadError> {
        let loader = self.core.creator.clone();
        if !loader.needs_sidecar() {
            return Ok(None);
        }
        let archive = loader.archive().clone();
        let mut tickets = Vec::with_capacity(archive.len());
        for i in 0..archive.len() {
            tickets.push(self.request(archive.pipeline(i)?.key(), priority));
        }
        let result = self.sidecar.clone();
        self.core.when_done(Box::new(move || {
            // A panic while writing (the driver's `vkGetPipelineCacheData`, the file system) is
            // this write's failure, not the worker's.
            let saved = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| loader.save_sidecar()))
                .unwrap_or_else(|_| {
                    Err(LoadError::Sidecar {
                        path: loader.options.sidecar.clone().unwrap_or_default(),
                        message: "the write panicked".into(),
                        source: None,
                    })
                })
                .map_err(Arc::new);
            *result.lock().unwrap_or_else(|p| p.into_inner()) = Some(saved);
        }));
        Ok(Some(tickets))
    }

    /// What the sidecar write of [`refresh_sidecar`](Self::refresh_sidecar) came to: `None`
    /// until it ran, then the bytes of cache data written or why not.
    pub fn sidecar_saved(&self) -> Option<SidecarSaved> {
        self.sidecar.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Turns the optimized re-creation of linked pipelines on (`Some(priority)`) or off. A
    /// pipeline archived as a graphics pipeline library is fast-linked with its fragment-output
    /// part when requested: quick to make, but a fast-linked pipeline may cost GPU time on every
    /// draw. With this on, each such request that becomes ready queues the same pipeline
    /// created whole (its link formats known, so the driver optimizes across every stage, as
    /// link-time optimization would) at `priority` — a background one, [`Priority::LOW`], so
    /// that what frames ask for goes first — and once it is made, [`try_get`](Self::try_get)
    /// returns it instead ([`Loaded::generation`] 1, `linked` false). The fast-linked one stays
    /// alive as long as this warm-up (or any `Arc` of it) does. It applies to requests that
    /// become ready after the call; a failed re-creation leaves the fast-linked pipeline
    /// ([`WarmupStats::optimize_failed`]).
    pub fn optimize_linked(&self, priority: Option<Priority>) {
        self.core.optimize.store(priority.map_or(NO_OPTIMIZE, |p| p.0), Ordering::Relaxed);
    }

    /// The loader it creates with.
    pub fn loader(&self) -> &Arc<PipelineLoader> {
        &self.core.creator
    }

    /// Asks for the pipeline with `key`, linked (if it was archived as a library) with the
    /// loader's [`link_formats`](super::LoaderOptions::link_formats). Never blocks on a
    /// creation; returns the existing ticket if it was asked for before.
    pub fn request(&self, key: PipelineKey, priority: Priority) -> Ticket {
        let formats = self.core.creator.options.link_formats.clone();
        self.request_formats(key, formats, priority)
    }

    /// [`request`](Self::request) with link formats of its own (one request per distinct
    /// key and formats).
    pub fn request_formats(&self, key: PipelineKey, link_formats: Vec<TextureFormat>, priority: Priority) -> Ticket {
        Ticket(self.core.request(Request { key, formats: link_formats, whole: false }, priority))
    }

    /// Asks for every pipeline whose label starts with `prefix` (all of them for `""`), in
    /// label order. Fails only if the archive's label index is damaged.
    pub fn request_prefix(&self, prefix: &str, priority: Priority) -> Result<Vec<Ticket>, LoadError> {
        let archive = self.core.creator.archive.clone();
        let mut keys = Vec::new();
        for (label, index) in archive.labels()? {
            if label.starts_with(prefix) {
                keys.push(archive.pipeline(index)?.key());
            }
        }
        Ok(keys.into_iter().map(|k| self.request(k, priority)).collect())
    }

    /// Asks for the pipelines labelled `labels`, in that order (each one's ticket, or
    /// [`LoadError::NotFound`] for a label the archive does not hold).
    pub fn request_labels<S: AsRef<str>>(&self, labels: &[S], priority: Priority) -> Vec<Result<Ticket, LoadError>> {
        let archive = self.core.creator.archive.clone();
        labels
            .iter()
            .map(|l| {
                let l = l.as_ref();
                match archive.lookup_label(l)? {
                    Some(p) => Ok(self.request(p.key(), priority)),
                    None => {
                        self.core.creator.note_missed(None, Some(l));
                        Err(LoadError::NotFound(format!("labelled '{l}'")))
                    }
                }
            })
            .collect()
    }

    /// Raises a queued request to `priority` (a lower one, or a request already running or
    /// done, is left as it is).
    pub fn boost(&self, ticket: &Ticket, priority: Priority) {
        self.core.boost(&ticket.0, priority)
    }

    /// Where the request stands, without waiting and without creating anything: one atomic
    /// load and a once-cell read, no lock.
    pub fn try_get(&self, ticket: &Ticket) -> Status {
        let got = self.core.try_get(&ticket.0);
        if self.core.creator.options.recorder.is_some() && ticket.0.first_use() {
            let key = ticket.0.request.key;
            // Still pending, it may yet turn out absent: the archive says (one lookup, once).
            let archived = match &got {
                Got::Absent => false,
                Got::Pending => self.core.creator.archive().get(key).ok().flatten().is_some(),
                _ => true,
            };
            if archived {
                self.core.creator.note_used(key, None)
            } else {
                self.core.creator.note_missed(Some(key), None)
            }
        }
        match got {
            Got::Ready(l) => Status::Ready(l.clone()),
            Got::Pending => Status::Pending,
            Got::Failed(e) => Status::Failed(e.clone()),
            Got::Absent => Status::Absent,
        }
    }

    /// Runs queued creations, highest priority first, until the queue is empty or `budget`
    /// has passed, checked after each creation: a creation cannot be interrupted, so the last
    /// one may end past the budget, and one runs even with a zero budget (`pump(ZERO)` is
    /// "create the most urgent pipeline"). Spawns nothing; may run on any number of threads at
    /// once.
    pub fn pump(&self, budget: Duration) -> Pumped {
        self.core.pump(budget)
    }

    /// Waits until every ticket has finished or `timeout` has passed; `true` if all finished.
    /// For loading screens: never call it on a frame's path.
    pub fn wait(&self, tickets: &[Ticket], timeout: Duration) -> bool {
        let slots: Vec<&Slot<Arc<Loaded>>> = tickets.iter().map(|t| &*t.0).collect();
        self.core.wait(&slots, timeout)
    }

    /// Where every request made so far stands.
    pub fn progress(&self) -> WarmupProgress {
        self.core.progress()
    }

    /// The warm-up's counters (cheap: relaxed atomic loads).
    pub fn stats(&self) -> WarmupStats {
        self.core.stats()
    }

    /// Threads that pump this warm-up until the returned [`Workers`] is dropped or
    /// [`shut down`](Workers::shutdown): each waits for work, runs one creation at a time and
    /// never spins. For an engine without a job system of its own.
    pub fn spawn_workers(&self, threads: usize) -> std::io::Result<Workers> {
        self.core.clone().spawn(threads)
    }
}

/// Worker threads of [`Warmup::spawn_workers`]. Dropping it stops them: each finishes the
/// creation it is in (a driver call cannot be interrupted) and exits; queued requests stay
/// queued for [`Warmup::pump`] or new workers.
pub struct Workers {
    stop: Arc<AtomicBool>,
    wake: Arc<dyn Fn() + Send + Sync>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Workers {
    /// Stops the threads and waits for them (what drop does).
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        (self.wake)();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

// ---------------------------------------------------------------------------------------------
// The scheduling core, generic over what creates, so that its invariants are tested without a
// driver (a creator that sleeps or blocks).

/// What the core asks for: a pipeline key and the link formats; `whole` for the optimized
/// re-creation of a fast-linked pipeline.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Request {
    pub(super) key: PipelineKey,
    pub(super) formats: Vec<TextureFormat>,
    pub(super) whole: bool,
}

/// What creates a request's value.
pub(super) trait Create: Send + Sync + 'static {
    type Out: Send + Sync + 'static;
    /// Creates it; [`LoadError::NotFound`] makes the request absent.
    fn create(&self, request: &Request) -> Result<Self::Out, LoadError>;
    /// Whether `out` was fast-linked, so that a whole re-creation would be an optimized
    /// version of it.
    fn linked(&self, out: &Self::Out) -> bool;
}

impl Create for PipelineLoader {
    type Out = Arc<Loaded>;
    fn create(&self, request: &Request) -> Result<Arc<Loaded>, LoadError> {
        let p = self.archive.get(request.key)?;
        let p = p.ok_or_else(|| LoadError::NotFound(format!("with key {}", request.key.to_hex())))?;
        let mut made = self.load_with(&p, &request.formats, false, request.whole)?;
        made.generation = u32::from(request.whole);
        Ok(Arc::new(made))
    }
    fn linked(&self, out: &Arc<Loaded>) -> bool {
        out.linked
    }
}

/// [`Core::optimize`] when re-creation is off.
const NO_OPTIMIZE: u32 = u32::MAX;

const QUEUED: u8 = 0;
const RUNNING: u8 = 1;
const DONE: u8 = 2;

/// One request's state.
pub(super) struct Slot<O> {
    request: Request,
    priority: AtomicU32,
    state: AtomicU8,
    late: AtomicBool,
    /// Set by the first `try_get` (recorded as the pipeline's first use).
    used: AtomicBool,
    result: OnceLock<Result<O, Arc<LoadError>>>,
    /// The whole re-creation of a fast-linked result, once queued ([`Warmup::optimize_linked`]).
    next: OnceLock<Arc<Slot<O>>>,
}

impl<O> Slot<O> {
    /// Whether this is the first call (one relaxed load after that).
    fn first_use(&self) -> bool {
        !self.used.load(Ordering::Relaxed) && !self.used.swap(true, Ordering::Relaxed)
    }
}

/// A queue entry (lazily deleted: an entry whose priority is no longer its slot's, or whose
/// slot is not queued, is skipped).
struct Queued<O> {
    priority: u32,
    seq: u64,
    slot: Arc<Slot<O>>,
}

impl<O> PartialEq for Queued<O> {
    fn eq(&self, other: &Self) -> bool {
        (self.priority, self.seq) == (other.priority, other.seq)
    }
}
impl<O> Eq for Queued<O> {}
impl<O> PartialOrd for Queued<O> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<O> Ord for Queued<O> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Max-heap: higher priority first, then the earlier request.
        self.priority.cmp(&other.priority).then(other.seq.cmp(&self.seq))
    }
}

struct Queue<O> {
    heap: BinaryHeap<Queued<O>>,
    slots: HashMap<Request, Arc<Slot<O>>>,
    seq: u64,
}

/// What `try_get` found.
pub(super) enum Got<'s, O> {
    Ready(&'s O),
    Pending,
    Failed(&'s Arc<LoadError>),
    Absent,
}

pub(super) struct Core<C: Create> {
    pub(super) creator: Arc<C>,
    queue: Mutex<Queue<C::Out>>,
    /// Signalled when a request is queued, when one finishes, and on shutdown.
    changed: Condvar,
    requested: AtomicU64,
    ready: AtomicU64,
    failed: AtomicU64,
    absent: AtomicU64,
    late: AtomicU64,
    running: AtomicU64,
    deduplicated: AtomicU64,
    /// The priority of whole re-creations of fast-linked results, or [`NO_OPTIMIZE`].
    pub(super) optimize: AtomicU32,
    optimize_requested: AtomicU64,
    optimized: AtomicU64,
    optimize_failed: AtomicU64,
    /// Run once by the thread that finishes the last pending request after `armed` is set.
    when_done: Mutex<Option<DoneHook>>,
    armed: AtomicBool,
}

/// What [`Core::when_done`] runs.
type DoneHook = Box<dyn FnOnce() + Send>;

impl<C: Create> Core<C> {
    pub(super) fn new(creator: Arc<C>) -> Self {
        Core {
            creator,
            queue: Mutex::new(Queue { heap: BinaryHeap::new(), slots: HashMap::new(), seq: 0 }),
            changed: Condvar::new(),
            requested: AtomicU64::new(0),
            ready: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            absent: AtomicU64::new(0),
            late: AtomicU64::new(0),
            running: AtomicU64::new(0),
            deduplicated: AtomicU64::new(0),
            optimize: AtomicU32::new(NO_OPTIMIZE),
            optimize_requested: AtomicU64::new(0),
            optimized: AtomicU64::new(0),
            optimize_failed: AtomicU64::new(0),
            when_done: Mutex::new(None),
            armed: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue<C::Out>> {
        // A panic while holding the lock leaves the queue consistent (every change is one
        // push or pop), so a poisoned lock is taken as it is.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn request(&self, request: Request, priority: Priority) -> Arc<Slot<C::Out>> {
        let mut q = self.lock();
        if let Some(slot) = q.slots.get(&request).cloned() {
            self.deduplicated.fetch_add(1, Ordering::Relaxed);
            drop(q);
            self.boost(&slot, priority);
            return slot;
        }
        let slot = Arc::new(Slot {
            request: request.clone(),
            priority: AtomicU32::new(priority.0),
            state: AtomicU8::new(QUEUED),
            late: AtomicBool::new(false),
            used: AtomicBool::new(false),
            result: OnceLock::new(),
            next: OnceLock::new(),
        });
        q.seq += 1;
        let seq = q.seq;
        q.heap.push(Queued { priority: priority.0, seq, slot: slot.clone() });
        let counter = if request.whole { &self.optimize_requested } else { &self.requested };
        q.slots.insert(request, slot.clone());
        counter.fetch_add(1, Ordering::Relaxed);
        drop(q);
        self.changed.notify_all();
        slot
    }

    pub(super) fn boost(&self, slot: &Arc<Slot<C::Out>>, priority: Priority) {
        let mut q = self.lock();
        if slot.state.load(Ordering::Acquire) != QUEUED || slot.priority.load(Ordering::Relaxed) >= priority.0 {
            return;
        }
        slot.priority.store(priority.0, Ordering::Relaxed);
        q.seq += 1;
        let seq = q.seq;
        q.heap.push(Queued { priority: priority.0, seq, slot: slot.clone() });
    }

    pub(super) fn try_get<'s>(&self, slot: &'s Slot<C::Out>) -> Got<'s, C::Out> {
        match slot.result.get() {
            Some(Ok(v)) => match slot.next.get().and_then(|n| n.result.get()) {
                // The whole re-creation, once made; the fast-linked one until then (or if it
                // failed).
                Some(Ok(whole)) => Got::Ready(whole),
                _ => Got::Ready(v),
            },
            Some(Err(e)) if matches!(**e, LoadError::NotFound(_)) => Got::Absent,
            Some(Err(e)) => Got::Failed(e),
            None => {
                if !slot.late.swap(true, Ordering::Relaxed) {
                    self.late.fetch_add(1, Ordering::Relaxed);
                }
                Got::Pending
            }
        }
    }

    /// The next queued slot, marked running; `None` when the queue is empty.
    fn pop(&self, q: &mut Queue<C::Out>) -> Option<Arc<Slot<C::Out>>> {
        while let Some(e) = q.heap.pop() {
            if e.priority != e.slot.priority.load(Ordering::Relaxed) {
                continue; // an older entry of a boosted request
            }
            if e.slot.state.compare_exchange(QUEUED, RUNNING, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                return Some(e.slot);
            }
        }
        None
    }

    /// Creates `slot`'s value and publishes it. A panic in the creator (code we do not control)
    /// is the request's failure, not the caller's.
    fn run(&self, slot: &Slot<C::Out>) {
        self.running.fetch_add(1, Ordering::Relaxed);
        let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.creator.create(&slot.request)))
            .unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                Err(LoadError::Pipeline {
                    pipeline: slot.request.key.to_hex(),
                    kind: super::loader::LoadErrorKind::Driver,
                    message: format!("creation panicked: {what}"),
                    source: None,
                })
            });
        let counter = match (&made, slot.request.whole) {
            (Ok(_), false) => &self.ready,
            (Err(LoadError::NotFound(_)), false) => &self.absent,
            (Err(_), false) => &self.failed,
            (Ok(_), true) => &self.optimized,
            (Err(_), true) => &self.optimize_failed,
        };
        let optimize = self.optimize.load(Ordering::Relaxed);
        let relink =
            optimize != NO_OPTIMIZE && !slot.request.whole && made.as_ref().is_ok_and(|out| self.creator.linked(out));
        let _ = slot.result.set(made.map_err(Arc::new));
        if relink {
            let whole = Request { whole: true, ..slot.request.clone() };
            let _ = slot.next.set(self.request(whole, Priority(optimize)));
        }
        counter.fetch_add(1, Ordering::Relaxed);
        self.running.fetch_sub(1, Ordering::Relaxed);
        // The done hook runs before the last request is marked done, so a `wait` for it
        // returns only once the hook has run.
        self.fire_if_done();
        slot.state.store(DONE, Ordering::Release);
        // Under the lock, so that a waiter between its check and its wait cannot miss it.
        drop(self.lock());
        self.changed.notify_all();
    }

    /// Runs `hook` once every request made so far has finished: here if they all have, else on
    /// the thread that finishes the last one, before that request is marked done (so a `wait`
    /// for it returns after the hook).
    pub(super) fn when_done(&self, hook: DoneHook) {
        *self.when_done.lock().unwrap_or_else(|p| p.into_inner()) = Some(hook);
        self.armed.store(true, Ordering::SeqCst);
        self.fire_if_done();
    }

    fn fire_if_done(&self) {
        // Between this thread's counter increment and its reads of the others' counters: two
        // requests finishing at once on two threads (one ready, one failed) cannot both miss
        // the other's increment and leave the hook unrun.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.armed.load(Ordering::SeqCst) && self.progress().done() && self.armed.swap(false, Ordering::AcqRel) {
            let hook = self.when_done.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(hook) = hook {
                // Contained: the request it runs beside must still be marked done.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(hook));
            }
        }
    }

    pub(super) fn pump(&self, budget: Duration) -> Pumped {
        let start = Instant::now();
        let mut finished = 0;
        loop {
            let Some(slot) = self.pop(&mut self.lock()) else { break };
            self.run(&slot);
            finished += 1;
            if start.elapsed() >= budget {
                break;
            }
        }
        Pumped { finished, more: !self.lock().heap.is_empty() }
    }

    pub(super) fn wait(&self, slots: &[&Slot<C::Out>], timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut q = self.lock();
        loop {
            if slots.iter().all(|s| s.state.load(Ordering::Acquire) == DONE) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            q = self.changed.wait_timeout(q, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    pub(super) fn progress(&self) -> WarmupProgress {
        // `requested` last: a request finishing between the loads is never counted before
        // it was requested.
        let (ready, failed, absent) = (
            self.ready.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
            self.absent.load(Ordering::Relaxed),
        );
        let requested = self.requested.load(Ordering::Relaxed).max(ready + failed + absent);
        WarmupProgress { requested, ready, failed, absent }
    }

    pub(super) fn stats(&self) -> WarmupStats {
        WarmupStats {
            progress: self.progress(),
            requested_too_late: self.late.load(Ordering::Relaxed),
            in_flight: self.running.load(Ordering::Relaxed),
            deduplicated: self.deduplicated.load(Ordering::Relaxed),
            optimized: self.optimized.load(Ordering::Relaxed),
            optimize_failed: self.optimize_failed.load(Ordering::Relaxed),
            optimize_pending: self
                .optimize_requested
                .load(Ordering::Relaxed)
                .saturating_sub(self.optimized.load(Ordering::Relaxed) + self.optimize_failed.load(Ordering::Relaxed)),
        }
    }

    /// The worker loop: waits for work, runs it, until `stop`.
    fn work(&self, stop: &AtomicBool) {
        loop {
            let slot = {
                let mut q = self.lock();
                loop {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    if let Some(s) = self.pop(&mut q) {
                        break s;
                    }
                    q = self.changed.wait(q).unwrap_or_else(|p| p.into_inner());
                }
            };
            self.run(&slot);
        }
    }

    fn spawn(self: Arc<Self>, threads: usize) -> std::io::Result<Workers> {
        let stop = Arc::new(AtomicBool::new(false));
        let core = self.clone();
        let wake: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
            drop(core.lock());
            core.changed.notify_all();
        });
        let mut workers = Workers { stop: stop.clone(), wake, threads: Vec::new() };
        for i in 0..threads.max(1) {
            let (core, stop) = (self.clone(), stop.clone());
            let t = std::thread::Builder::new().name(format!("granary-warmup-{i}")).spawn(move || core.work(&stop))?;
            workers.threads.push(t);
        }
        Ok(workers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A creator that records the order it was asked in, sleeps `sleep`, and can be held at a
    /// gate; key bytes starting with 0xab are absent, 0xee fail, 0xff panic.
    #[derive(Default)]
    struct Fake {
        order: Mutex<Vec<u8>>,
        sleep: Duration,
        gate: Mutex<bool>,
        opened: Condvar,
        calls: AtomicUsize,
    }

    impl Fake {
        fn open(&self) {
            *self.gate.lock().unwrap() = true;
            self.opened.notify_all();
        }
    }

    impl Create for Fake {
        type Out = u8;
        fn create(&self, r: &Request) -> Result<u8, LoadError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let mut open = self.gate.lock().unwrap();
            while !*open {
                open = self.opened.wait(open).unwrap();
            }
            drop(open);
            std::thread::sleep(self.sleep);
            let b = r.key.0 as u8;
            self.order.lock().unwrap().push(b);
            match (b, r.whole) {
                (0xab, _) => Err(LoadError::NotFound("absent".into())),
                (0xee, _) | (0x2e, true) => Err(LoadError::WouldCompile("failed".into())),
                (0xff, _) => panic!("the driver crashed"),
                // A whole re-creation: the same pipeline, another value.
                (_, true) => Ok(b.wrapping_add(100)),
                _ => Ok(b),
            }
        }
        /// Even keys stand for fast-linked pipelines.
        fn linked(&self, out: &u8) -> bool {
            out.is_multiple_of(2)
        }
    }

    fn req(b: u8) -> Request {
        Request { key: PipelineKey(u128::from(b)), formats: Vec::new(), whole: false }
    }

    #[test]
    fn a_linked_result_is_made_again_whole_in_the_background_and_swapped_in() {
        let c = core(Duration::ZERO, true);
        // Off: nothing is re-created.
        let before = c.request(req(2), Priority::NORMAL);
        c.pump(Duration::from_secs(10));
        assert!(matches!(c.try_get(&before), Got::Ready(2)));
        c.optimize.store(Priority::LOW.0, Ordering::Relaxed);
        let linked = c.request(req(4), Priority::NORMAL);
        let whole = c.request(req(5), Priority::NORMAL);
        let fails = c.request(req(0x2e), Priority::NORMAL);
        let urgent = c.request(req(7), Priority::HIGH);
        // One pump: the requests run first (HIGH, then NORMAL), the re-creations they queued
        // after them, at LOW.
        assert_eq!(c.pump(Duration::ZERO).finished, 1);
        assert_eq!(c.pump(Duration::ZERO).finished, 1);
        assert!(matches!(c.try_get(&linked), Got::Ready(4)), "the fast-linked one first");
        assert_eq!(c.stats().optimize_pending, 1);
        c.pump(Duration::from_secs(10));
        assert_eq!(*c.creator.order.lock().unwrap(), vec![2, 7, 4, 5, 0x2e, 4, 0x2e]);
        assert!(matches!(c.try_get(&linked), Got::Ready(104)), "the whole one once made");
        assert!(matches!(c.try_get(&whole), Got::Ready(5)), "not linked: not re-created");
        assert!(matches!(c.try_get(&fails), Got::Ready(0x2e)), "a failed re-creation keeps the first");
        assert!(matches!(c.try_get(&urgent), Got::Ready(7)));
        // Re-creations are not requests: progress is the engine's requests only.
        let s = c.stats();
        assert_eq!((s.progress.requested, s.progress.ready, s.progress.failed), (5, 5, 0));
        assert_eq!((s.optimized, s.optimize_failed, s.optimize_pending), (1, 1, 0));
        // The first generation is kept alive beside the second.
        assert!(matches!(linked.result.get(), Some(Ok(4))));
    }

    fn core(sleep: Duration, open: bool) -> Arc<Core<Fake>> {
        let fake = Fake { sleep, ..Fake::default() };
        *fake.gate.lock().unwrap() = open;
        Arc::new(Core::new(Arc::new(fake)))
    }

    #[test]
    fn the_highest_priority_runs_first_then_first_come_first_served_and_boost_moves_a_request_up() {
        let c = core(Duration::ZERO, true);
        let _a = c.request(req(1), Priority::LOW);
        let _b = c.request(req(2), Priority::NORMAL);
        let _c = c.request(req(3), Priority::HIGH);
        let _d = c.request(req(4), Priority::NORMAL);
        let e = c.request(req(5), Priority::LOW);
        c.boost(&e, Priority::CRITICAL);
        // A lower boost changes nothing.
        c.boost(&e, Priority::LOW);
        let p = c.pump(Duration::from_secs(10));
        assert_eq!(p, Pumped { finished: 5, more: false });
        assert_eq!(*c.creator.order.lock().unwrap(), vec![5, 3, 2, 4, 1]);
    }

    #[test]
    fn a_request_made_twice_is_created_once_and_asked_again_it_is_raised() {
        let c = core(Duration::ZERO, true);
        let a = c.request(req(1), Priority::LOW);
        let _b = c.request(req(2), Priority::NORMAL);
        let again = c.request(req(1), Priority::HIGH);
        assert!(Arc::ptr_eq(&a, &again));
        // Other link formats are another request.
        let other = c.request(Request { formats: vec![TextureFormat::Bgra8unorm], ..req(1) }, Priority::LOW);
        assert!(!Arc::ptr_eq(&a, &other));
        c.pump(Duration::from_secs(10));
        assert_eq!(*c.creator.order.lock().unwrap(), vec![1, 2, 1]);
        assert_eq!(c.creator.calls.load(Ordering::SeqCst), 3);
        let s = c.stats();
        assert_eq!((s.progress.requested, s.progress.ready, s.deduplicated), (3, 3, 1));
    }

    #[test]
    fn try_get_never_waits_while_a_creation_is_in_flight() {
        // The creator is held at its gate (a driver call that takes as long as it likes).
        let c = core(Duration::ZERO, false);
        let t = c.request(req(7), Priority::NORMAL);
        let pumper = {
            let c = c.clone();
            std::thread::spawn(move || c.pump(Duration::from_secs(60)))
        };
        while c.creator.calls.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        // The creation is in flight now; 10,000 polls, each timed.
        let mut worst = Duration::ZERO;
        for _ in 0..10_000 {
            let start = Instant::now();
            assert!(matches!(c.try_get(&t), Got::Pending));
            worst = worst.max(start.elapsed());
        }
        // Not a speed target: a poll that waited on the creation would take until the gate
        // opens, which it does only after this.
        assert!(worst < Duration::from_secs(1), "a poll took {worst:?}");
        assert_eq!(c.stats().in_flight, 1);
        assert_eq!(c.stats().requested_too_late, 1, "counted once per request");
        // Other requests can be made and boosted meanwhile (the queue's lock is free).
        let u = c.request(req(8), Priority::LOW);
        c.boost(&u, Priority::HIGH);
        c.creator.open();
        pumper.join().unwrap();
        assert!(matches!(c.try_get(&t), Got::Ready(7)));
        assert!(matches!(c.try_get(&u), Got::Ready(8)));
    }

    #[test]
    fn the_done_hook_runs_once_on_the_thread_that_finishes_the_last_request() {
        let c = core(Duration::ZERO, true);
        let _tickets: Vec<_> = (1..=5).map(|b| c.request(req(b), Priority::LOW)).collect();
        let runs = Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        c.when_done(Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
        }));
        assert_eq!(runs.load(Ordering::SeqCst), 0, "five still queued");
        assert_eq!(c.pump(Duration::ZERO).finished, 1);
        assert_eq!(runs.load(Ordering::SeqCst), 0, "four still queued");
        while c.pump(Duration::from_secs(1)).more {}
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // Later requests finishing do not run it again; armed on an idle queue, it runs at once.
        let _more = c.request(req(6), Priority::LOW);
        c.pump(Duration::ZERO);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let r = runs.clone();
        c.when_done(Box::new(move || {
            r.fetch_add(10, Ordering::SeqCst);
        }));
        assert_eq!(runs.load(Ordering::SeqCst), 11);
    }

    #[test]
    fn pump_keeps_to_its_budget_and_wait_times_out_then_succeeds() {
        let c = core(Duration::from_millis(20), true);
        let tickets: Vec<_> = (1..=10).map(|b| c.request(req(b), Priority::NORMAL)).collect();
        let p = c.pump(Duration::from_millis(30));
        // Checked after each creation: the first ends at 20 ms, the second at 40 ms, past 30.
        assert!((1..=2).contains(&p.finished), "{p:?}");
        // A zero budget runs exactly one.
        assert_eq!(c.pump(Duration::ZERO).finished, 1);
        assert!(p.more);
        let slots: Vec<&Slot<u8>> = tickets.iter().map(|t| &**t).collect();
        assert!(!c.wait(&slots, Duration::from_millis(1)));
        let pumper = {
            let c = c.clone();
            std::thread::spawn(move || c.pump(Duration::from_secs(60)))
        };
        assert!(c.wait(&slots, Duration::from_secs(60)));
        pumper.join().unwrap();
        assert!(c.progress().done());
    }

    #[test]
    fn absent_failed_and_panicking_requests_are_told_apart_and_the_rest_go_on() {
        let c = core(Duration::ZERO, true);
        let absent = c.request(req(0xab), Priority::NORMAL);
        let failed = c.request(req(0xee), Priority::NORMAL);
        let panics = c.request(req(0xff), Priority::NORMAL);
        let fine = c.request(req(1), Priority::NORMAL);
        c.pump(Duration::from_secs(10));
        assert!(matches!(c.try_get(&absent), Got::Absent));
        assert!(matches!(c.try_get(&failed), Got::Failed(_)));
        match c.try_get(&panics) {
            Got::Failed(e) => assert!(e.to_string().contains("the driver crashed"), "{e}"),
            _ => panic!("a panic is the request's failure"),
        }
        assert!(matches!(c.try_get(&fine), Got::Ready(1)));
        let p = c.progress();
        assert_eq!((p.requested, p.ready, p.failed, p.absent), (4, 1, 2, 1));
    }

    #[test]
    fn workers_run_the_queue_and_shut_down_with_work_in_flight() {
        let c = core(Duration::from_millis(5), false);
        let tickets: Vec<_> = (1..=20).map(|b| c.request(req(b), Priority::NORMAL)).collect();
        let workers = c.clone().spawn(3).unwrap();
        while c.creator.calls.load(Ordering::SeqCst) < 3 {
            std::thread::yield_now();
        }
        // Three creations are in flight (held at the gate); shut down while they are.
        let shutting = std::thread::spawn(move || workers.shutdown());
        std::thread::sleep(Duration::from_millis(20));
        c.creator.open();
        shutting.join().unwrap();
        // The three in flight finished; the rest are still queued, and a pump finishes them.
        let p = c.progress();
        assert!(p.ready >= 3 && p.pending() > 0, "{p:?}");
        assert_eq!(c.stats().in_flight, 0);
        c.pump(Duration::from_secs(60));
        let slots: Vec<&Slot<u8>> = tickets.iter().map(|t| &**t).collect();
        assert!(c.wait(&slots, Duration::ZERO));
        // New workers pick up new work, and wake for it.
        let workers = c.clone().spawn(2).unwrap();
        let late = c.request(req(42), Priority::NORMAL);
        assert!(c.wait(&[&late], Duration::from_secs(60)));
        drop(workers);
    }
}
