//! `GranaryVulkanDevice::allocator` on a real device: the application's own instance and
//! device (made here through vulkanalia, as a C engine makes them), handed to the C API with
//! counting allocation callbacks. Granary's objects (shader modules, layouts, pipelines and
//! libraries, the pipeline cache) are made and destroyed with them: the callbacks see
//! allocations, and once every granary handle is destroyed (before the application destroys
//! its device) every allocation made through them has been freed. A NULL allocator and
//! `GRANARY_DEVICE_IGNORE_ALLOCATOR` still work, the latter without calling the callbacks. The
//! objects only native pipelines name (immutable samplers, render passes, set layouts holding
//! samplers) are made the same way through the Rust API, `Gpu::borrowed_with_allocator`.
//! (Pipeline binaries are not exercised: lavapipe has no `VK_KHR_pipeline_binary`.)
//!
//! Without a Vulkan driver each test prints `SKIPPED`, unless `GRANARY_REQUIRE_VULKAN=1`.
//! Under `GRANARY_VALIDATE=1` the application's instance enables the Khronos validation layer
//! (which checks, among the rest, that each object is destroyed with callbacks compatible with
//! those it was created with) and any message whose id `GRANARY_VALIDATE_EXPECT` does not list
//! fails the test.

mod common;

use granary_archive::vulkan::validation::{MessengerData, ValidationLog, LAYER};
use granary_archive::vulkan::vulkanalia::loader::{LibloadingLoader, Loader as _, LIBRARY};
use granary_archive::vulkan::vulkanalia::prelude::v1_3::*;
use granary_archive::vulkan::vulkanalia::vk::{ExtDebugUtilsExtensionInstanceCommands as _, Handle};
use granary_capi::*;
use std::alloc::Layout;
use std::collections::HashSet;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;

// ---- Counting allocation callbacks over the system allocator ----

/// What the callbacks saw. Each test has its own (the callbacks' `pUserData`).
#[derive(Default)]
struct Counter {
    /// Allocations made and not yet freed.
    live: AtomicIsize,
    /// Every allocation made (by `pfnAllocation`, or by `pfnReallocation` growing or moving).
    allocations: AtomicUsize,
    /// `pfnReallocation` calls.
    reallocations: AtomicUsize,
    /// Every free (`pfnFree` of a non-NULL pointer, or one `pfnReallocation` released).
    frees: AtomicUsize,
    /// The threads the callbacks were called on.
    threads: Mutex<HashSet<ThreadId>>,
}

impl Counter {
    fn note_thread(&self) {
        self.threads.lock().unwrap_or_else(|p| p.into_inner()).insert(std::thread::current().id());
    }
}

/// Bytes before each allocation holding its size and alignment (at `p - 16` and `p - 8`).
const HEADER: usize = 16;

/// The layout of the block behind an allocation of `size` bytes aligned to `align`: the
/// header is padded to the alignment so that the returned pointer keeps it.
fn block(size: usize, align: usize) -> Option<(Layout, usize)> {
    let align = align.max(HEADER).checked_next_power_of_two()?;
    let total = size.checked_add(align)?;
    Some((Layout::from_size_align(total, align).ok()?, align))
}

/// Allocates and counts.
///
/// # Safety
///
/// `counter` is alive.
unsafe fn allocate_counted(counter: &Counter, size: usize, align: usize) -> *mut c_void {
    let Some((layout, offset)) = block(size, align) else { return null_mut() };
    // SAFETY: `layout` has a non-zero size (at least the header).
    let base = unsafe { std::alloc::alloc(layout) };
    if base.is_null() {
        return null_mut();
    }
    // SAFETY: `offset >= HEADER` bytes lie before the returned pointer, inside the block, and
    // both words are 8-aligned (`offset` is a multiple of 16).
    unsafe {
        let p = base.add(offset);
        p.sub(16).cast::<usize>().write(size);
        p.sub(8).cast::<usize>().write(align);
        counter.live.fetch_add(1, Ordering::SeqCst);
        counter.allocations.fetch_add(1, Ordering::SeqCst);
        p.cast()
    }
}

/// The size recorded for `p`.
///
/// # Safety
///
/// `p` came from `allocate_counted` and is not freed.
unsafe fn size_of_block(p: *mut c_void) -> usize {
    // SAFETY: the header written by `allocate_counted`.
    unsafe { p.cast::<u8>().sub(16).cast::<usize>().read() }
}

/// Frees and counts.
///
/// # Safety
///
/// `p` came from `allocate_counted` and is not freed.
unsafe fn free_counted(counter: &Counter, p: *mut c_void) {
    // SAFETY: the header written by `allocate_counted`.
    let (size, align) = unsafe {
        let p = p.cast::<u8>();
        (p.sub(16).cast::<usize>().read(), p.sub(8).cast::<usize>().read())
    };
    let (layout, offset) = block(size, align).expect("the layout it was allocated with");
    // SAFETY: the block `allocate_counted` made with this layout.
    unsafe { std::alloc::dealloc(p.cast::<u8>().sub(offset), layout) };
    counter.live.fetch_sub(1, Ordering::SeqCst);
    counter.frees.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "system" fn counting_allocation(
    user: *mut c_void,
    size: usize,
    align: usize,
    _scope: vk::SystemAllocationScope,
) -> *mut c_void {
    // SAFETY: every test passes a `Counter` that outlives its device.
    let counter = unsafe { &*(user as *const Counter) };
    counter.note_thread();
    // SAFETY: as above.
    unsafe { allocate_counted(counter, size, align) }
}

unsafe extern "system" fn counting_reallocation(
    user: *mut c_void,
    original: *mut c_void,
    size: usize,
    align: usize,
    _scope: vk::SystemAllocationScope,
) -> *mut c_void {
    // SAFETY: as in `counting_allocation`.
    let counter = unsafe { &*(user as *const Counter) };
    counter.note_thread();
    counter.reallocations.fetch_add(1, Ordering::SeqCst);
    if original.is_null() {
        // SAFETY: as above.
        return unsafe { allocate_counted(counter, size, align) };
    }
    if size == 0 {
        // Vulkan: a reallocation to zero bytes is a free.
        // SAFETY: `original` came from these callbacks (Vulkan's rule) and is live.
        unsafe { free_counted(counter, original) };
        return null_mut();
    }
    // SAFETY: as above.
    let new = unsafe { allocate_counted(counter, size, align) };
    if new.is_null() {
        return null_mut(); // the original stays valid
    }
    // SAFETY: both blocks are live and distinct; the copy stays inside both.
    unsafe {
        let old = size_of_block(original);
        std::ptr::copy_nonoverlapping(original.cast::<u8>(), new.cast::<u8>(), old.min(size));
        free_counted(counter, original);
    }
    new
}

unsafe extern "system" fn counting_free(user: *mut c_void, memory: *mut c_void) {
    // SAFETY: as in `counting_allocation`.
    let counter = unsafe { &*(user as *const Counter) };
    counter.note_thread();
    if !memory.is_null() {
        // SAFETY: `memory` came from these callbacks (Vulkan's rule) and is live.
        unsafe { free_counted(counter, memory) };
    }
}

fn callbacks(counter: &Counter) -> vk::AllocationCallbacks {
    vk::AllocationCallbacks {
        user_data: counter as *const Counter as *mut c_void,
        allocation: Some(counting_allocation),
        reallocation: Some(counting_reallocation),
        free: Some(counting_free),
        internal_allocation: None,
        internal_free: None,
    }
}

// ---- The application's Vulkan objects ----

fn validation_requested() -> bool {
    std::env::var("GRANARY_VALIDATE").is_ok_and(|v| v == "1")
}

/// The application: its Vulkan library, instance (under the validation layer with
/// `GRANARY_VALIDATE=1`) and a Vulkan 1.3 device with dynamic rendering, maintenance4, every
/// core feature the device has and graphics pipeline libraries where present. The device
/// itself is created without allocation callbacks, so the counter sees granary's objects only.
struct App {
    _library: LibloadingLoader,
    gipa: vk::PFN_vkGetInstanceProcAddr,
    instance: Instance,
    physical: vk::PhysicalDevice,
    device: Device,
    validation: Option<(vk::DebugUtilsMessengerEXT, MessengerData)>,
    features: vk::PhysicalDeviceFeatures,
    libraries: bool,
}

impl App {
    fn open() -> Option<App> {
        let skip = |why: String| {
            common::no_driver(why);
            None
        };
        // SAFETY: the system's Vulkan loader, made to be opened this way.
        let library = match unsafe { LibloadingLoader::new(LIBRARY) } {
            Ok(l) => l,
            Err(e) => return skip(e.to_string()),
        };
        // SAFETY: the loader's exported `vkGetInstanceProcAddr`, whose type this is; the
        // library stays loaded as long as `App` (field `_library`).
        let gipa: vk::PFN_vkGetInstanceProcAddr = match unsafe { library.load(b"vkGetInstanceProcAddr") } {
            Ok(f) => unsafe { std::mem::transmute::<extern "system" fn(), vk::PFN_vkGetInstanceProcAddr>(f) },
            Err(e) => return skip(e.to_string()),
        };
        // SAFETY: `gipa` is the loader's entry point.
        let entry = unsafe { Entry::from_commands(&vk::StaticCommands { get_instance_proc_addr: gipa }) };
        let app = vk::ApplicationInfo { api_version: vk::make_version(1, 3, 0), ..Default::default() };
        let mut info = vk::InstanceCreateInfo { application_info: &app, ..Default::default() };
        let data = validation_requested().then(|| MessengerData::new(ValidationLog::new()));
        let layers = [c"VK_LAYER_KHRONOS_validation".as_ptr()];
        let extensions = [vk::EXT_DEBUG_UTILS_EXTENSION.name.as_ptr()];
        if data.is_some() {
            // SAFETY: a global query of the loader just opened.
            let available = unsafe { entry.enumerate_instance_layer_properties() }.unwrap_or_default();
            assert!(
                available.iter().any(|l| l.layer_name.to_string_lossy() == LAYER),
                "GRANARY_VALIDATE=1 needs {LAYER} (Debian: apt-get install vulkan-validationlayers)"
            );
            info.enabled_layer_count = 1;
            info.enabled_layer_names = layers.as_ptr();
            info.enabled_extension_count = 1;
            info.enabled_extension_names = extensions.as_ptr();
        }
        // SAFETY: `info` and what it points at live until the call returns.
        let instance = match unsafe { entry.create_instance(&info, None) } {
            Ok(i) => i,
            Err(e) => return skip(format!("vkCreateInstance: {e:?}")),
        };
        let validation = data.map(|data| {
            // SAFETY: the instance enables VK_EXT_debug_utils; `data` outlives the messenger
            // (destroyed before the instance in `finish`).
            let m = unsafe { instance.create_debug_utils_messenger_ext(&data.create_info(), None) }.expect("messenger");
            (m, data)
        });
        // SAFETY: the instance is valid.
        let Some(physical) = unsafe { instance.enumerate_physical_devices() }.ok().and_then(|d| d.first().copied())
        else {
            // SAFETY: nothing was made from the instance but the messenger.
            unsafe {
                if let Some((m, _)) = &validation {
                    instance.destroy_debug_utils_messenger_ext(*m, None);
                }
                instance.destroy_instance(None);
            }
            return skip("no physical device".into());
        };
        // SAFETY: `physical` came from `instance`.
        let has_libraries = unsafe { instance.enumerate_device_extension_properties(physical, None) }
            .unwrap_or_default()
            .iter()
            .any(|e| e.extension_name.to_string_lossy() == "VK_EXT_graphics_pipeline_library");
        let mut gpl = vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT {
            graphics_pipeline_library: vk::TRUE,
            ..Default::default()
        };
        let mut f13 = vk::PhysicalDeviceVulkan13Features {
            dynamic_rendering: vk::TRUE,
            maintenance4: vk::TRUE,
            ..Default::default()
        };
        if has_libraries {
            f13.next = (&mut gpl as *mut vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT).cast();
        }
        let library_extensions = [
            vk::KHR_PIPELINE_LIBRARY_EXTENSION.name.as_ptr(),
            vk::EXT_GRAPHICS_PIPELINE_LIBRARY_EXTENSION.name.as_ptr(),
        ];
        let priority = 1.0f32;
        let queue = vk::DeviceQueueCreateInfo {
            queue_family_index: 0,
            queue_count: 1,
            queue_priorities: &priority,
            ..Default::default()
        };
        // SAFETY: `physical` came from `instance`.
        let features = unsafe { instance.get_physical_device_features(physical) };
        let create = vk::DeviceCreateInfo {
            next: (&mut f13 as *mut vk::PhysicalDeviceVulkan13Features).cast(),
            queue_create_info_count: 1,
            queue_create_infos: &queue,
            enabled_features: &features,
            enabled_extension_count: if has_libraries { library_extensions.len() as u32 } else { 0 },
            enabled_extension_names: library_extensions.as_ptr(),
            ..Default::default()
        };
        // SAFETY: `physical` came from `instance`; `create` and its chain point at locals
        // alive until the call returns; only supported features and extensions are enabled.
        let device = unsafe { instance.create_device(physical, &create, None) }.expect("vkCreateDevice");
        Some(App {
            _library: library,
            gipa,
            instance,
            physical,
            device,
            validation,
            features,
            libraries: has_libraries,
        })
    }

    /// The application's teardown once every granary handle is destroyed, then the
    /// validation verdict.
    fn finish(self) {
        // SAFETY: nothing granary made from the device is alive any more (each test destroys
        // its handles first); the objects are the application's to destroy, in order.
        unsafe {
            self.device.destroy_device(None);
            if let Some((m, _)) = &self.validation {
                self.instance.destroy_debug_utils_messenger_ext(*m, None);
            }
            self.instance.destroy_instance(None);
        }
        if let Some((_, data)) = self.validation {
            let expected: Vec<String> = std::env::var("GRANARY_VALIDATE_EXPECT")
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            let unexpected: Vec<String> = data
                .log()
                .messages()
                .into_iter()
                .filter(|m| !expected.contains(&m.id))
                .map(|m| format!("{} {} in '{}': {}", m.severity.name(), m.id, m.pipeline, m.text))
                .collect();
            assert!(unexpected.is_empty(), "the validation layer reported:\n{}", unexpected.join("\n"));
        }
    }
}

// ---- Through the C API ----

fn last_message() -> String {
    // SAFETY: granary returns a NUL-terminated string valid until the next failing call on
    // this thread; it is copied at once.
    unsafe { CStr::from_ptr(granary_last_error_message()) }.to_string_lossy().into_owned()
}

/// Messages the (process-wide) log callback received.
static LOGGED: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe extern "C" fn record_log(_user: *mut c_void, _level: u32, message: *const c_char) {
    // SAFETY: granary passes a NUL-terminated string valid during the call.
    let text = unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned();
    LOGGED.lock().unwrap_or_else(|p| p.into_inner()).push(text);
}

fn install_log() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        // SAFETY: `record_log` may be called from any thread for the rest of the process.
        let r = unsafe { granary_set_log_callback(Some(record_log), null_mut(), GRANARY_LOG_INFO) };
        assert_eq!(r, GranaryResult::GRANARY_OK);
    });
}

fn logged(needle: &str) -> bool {
    LOGGED.lock().unwrap_or_else(|p| p.into_inner()).iter().any(|m| m.contains(needle))
}

/// What one warm-up did.
struct Warmed {
    ready: usize,
    requested: usize,
    /// Tickets whose pipeline was linked when first ready.
    linked: usize,
    /// Tickets whose pipeline is the whole re-creation at the end (generation 1).
    whole: usize,
    /// `GranaryWarmupStats::optimized` at the end.
    optimized: u64,
    /// Tickets whose pipeline was first made as its whole variant (`variant` 1, not linked).
    variants: usize,
    /// Tickets whose pipeline was linked when first ready, counted with or without `optimize`.
    linked_first: usize,
}

/// Opens the example archive (`bytes`: [`common::example_archive_bytes`] or another form of
/// it), makes a loader over `app`'s device as `description` says (with
/// `allocator` and `flags`), warms every pipeline whose label starts with `prefix` (two worker
/// threads and this thread pumping, at once), checks each is ready with a pipeline and a
/// layout, then destroys every granary handle. `during` runs while the warm-up is alive. With
/// `optimize`, fast-linked pipelines are made again whole at `GRANARY_PRIORITY_LOW`
/// (`granary_warmup_optimize_linked`), and every ticket is looked at again once none is pending.
fn warm(
    app: &App,
    bytes: Vec<u8>,
    allocator: *const vk::AllocationCallbacks,
    flags: u32,
    prefix: &str,
    optimize: bool,
    during: impl Fn(),
) -> Warmed {
    let mut archive: *mut GranaryArchive = null_mut();
    // SAFETY: valid bytes (copied during the call) and out pointer.
    let r = unsafe {
        granary_archive_open_memory(bytes.as_ptr().cast(), bytes.len(), None, null_mut(), null(), &mut archive)
    };
    assert_eq!(r, GranaryResult::GRANARY_OK, "{}", last_message());
    let extension_names =
        [vk::KHR_PIPELINE_LIBRARY_EXTENSION.name.as_ptr(), vk::EXT_GRAPHICS_PIPELINE_LIBRARY_EXTENSION.name.as_ptr()];
    let device = GranaryVulkanDevice {
        struct_size: std::mem::size_of::<GranaryVulkanDevice>() as u32,
        flags: flags | if app.libraries { GRANARY_DEVICE_GRAPHICS_PIPELINE_LIBRARY } else { 0 },
        instance: app.instance.handle(),
        physical_device: app.physical,
        device: app.device.handle(),
        get_instance_proc_addr: Some(app.gipa),
        get_device_proc_addr: None,
        enabled_extensions: if app.libraries { extension_names.as_ptr().cast() } else { null() },
        enabled_extension_count: if app.libraries { 2 } else { 0 },
        enabled_feature_name_count: 0,
        enabled_feature_names: null(),
        enabled_features: &app.features,
        enabled_vulkan11_features: null(),
        allocator,
    };
    let mut loader: *mut GranaryLoader = null_mut();
    let mut warmup: *mut GranaryWarmup = null_mut();
    let prefix = CString::new(prefix).unwrap();
    let mut tickets: Vec<GranaryTicket>;
    let (mut ready, mut linked, mut whole, mut optimized, mut variants, mut linked_first) = (0, 0, 0, 0, 0, 0);
    let info_of = |warmup: *const GranaryWarmup, t: GranaryTicket| {
        let mut info = GranaryPipelineInfo {
            struct_size: std::mem::size_of::<GranaryPipelineInfo>() as u32,
            ..GranaryPipelineInfo::default()
        };
        // SAFETY: a live warm-up and a writable, sized struct.
        let r = unsafe { granary_warmup_try_get(warmup, t, &mut info) };
        (r, info)
    };
    // SAFETY: live handles and valid pointers throughout; the application's instance and
    // device (and the counter behind `allocator`) outlive every handle made here, which are
    // all destroyed before this returns.
    unsafe {
        let r = granary_loader_create(archive, &device, null(), &mut loader);
        assert_eq!(r, GranaryResult::GRANARY_OK, "{}", last_message());
        granary_archive_close(archive);
        assert_eq!(granary_warmup_create(loader, &mut warmup), GranaryResult::GRANARY_OK, "{}", last_message());
        granary_loader_destroy(loader);
        if optimize {
            let r = granary_warmup_optimize_linked(warmup, GRANARY_PRIORITY_LOW);
            assert_eq!(r, GranaryResult::GRANARY_OK, "{}", last_message());
        }
        let mut count = 0usize;
        let r =
            granary_warmup_request_prefix(warmup, prefix.as_ptr(), GRANARY_PRIORITY_NORMAL, null_mut(), 0, &mut count);
        assert_eq!(r, GranaryResult::GRANARY_OK, "{}", last_message());
        assert!(count > 0, "nothing labelled {prefix:?}");
        tickets = vec![0; count];
        let r = granary_warmup_request_prefix(
            warmup,
            prefix.as_ptr(),
            GRANARY_PRIORITY_NORMAL,
            tickets.as_mut_ptr(),
            count,
            &mut count,
        );
        assert_eq!(r, GranaryResult::GRANARY_OK, "{}", last_message());
        assert_eq!(granary_warmup_spawn_workers(warmup, 2), GranaryResult::GRANARY_OK, "{}", last_message());
        while granary_warmup_pump(warmup, 2_000_000, null_mut()) == GranaryResult::GRANARY_PENDING {}
        let r = granary_warmup_wait(warmup, tickets.as_ptr(), tickets.len(), 600_000_000_000);
        assert_eq!(r, GranaryResult::GRANARY_OK, "{}", last_message());
        let mut first = Vec::with_capacity(tickets.len());
        for &t in &tickets {
            let (r, info) = info_of(warmup, t);
            if r != GranaryResult::GRANARY_OK {
                let mut why = [0 as c_char; 512];
                granary_warmup_failure(warmup, t, why.as_mut_ptr(), why.len(), null_mut());
                panic!("ticket {t}: {r:?}: {}", CStr::from_ptr(why.as_ptr()).to_string_lossy());
            }
            assert!(!info.pipeline.is_null() && !info.layout.is_null());
            assert!(info.variant == 0 || info.linked == 0, "a whole variant is not linked");
            variants += info.variant as usize;
            linked_first += info.linked as usize;
            ready += 1;
            first.push(info);
        }
        if optimize {
            let stats = |warmup| {
                let mut s = GranaryWarmupStats {
                    struct_size: std::mem::size_of::<GranaryWarmupStats>() as u32,
                    ..GranaryWarmupStats::default()
                };
                assert_eq!(granary_warmup_stats(warmup, &mut s), GranaryResult::GRANARY_OK, "{}", last_message());
                s
            };
            while stats(warmup).optimize_pending > 0 {
                granary_warmup_pump(warmup, 2_000_000, null_mut());
            }
            let s = stats(warmup);
            assert_eq!(s.optimize_failed, 0, "{s:?}");
            optimized = s.optimized;
            for (&t, before) in tickets.iter().zip(&first) {
                let (r, info) = info_of(warmup, t);
                assert_eq!(r, GranaryResult::GRANARY_OK);
                // The workers may have swapped some in already when `first` was taken.
                let fast = before.linked == 1 || before.generation == 1;
                linked += usize::from(fast);
                if info.generation == 1 {
                    assert!(fast && info.linked == 0, "only a fast-linked pipeline is made again whole");
                    if before.generation == 0 {
                        assert_ne!(info.pipeline, before.pipeline);
                    }
                    whole += 1;
                }
            }
            // A caller of the struct's first version gets what it knew of, no generation.
            let mut v1 = GranaryPipelineInfo {
                struct_size: std::mem::offset_of!(GranaryPipelineInfo, generation) as u32,
                ..GranaryPipelineInfo::default()
            };
            assert_eq!(granary_warmup_try_get(warmup, tickets[0], &mut v1), GranaryResult::GRANARY_OK);
            assert_eq!(v1.struct_size as usize, std::mem::offset_of!(GranaryPipelineInfo, generation));
        }
        during();
        granary_warmup_destroy(warmup);
    }
    Warmed { ready, requested: tickets.len(), linked, whole, optimized, variants, linked_first }
}

#[test]
fn the_applications_allocator_makes_and_frees_every_object_granary_creates() {
    install_log();
    let Some(app) = App::open() else { return };
    let counter = Counter::default();
    let allocator = callbacks(&counter);
    let warmed = warm(&app, common::example_archive_bytes(), &allocator, 0, "", false, || {
        // While pipelines and their modules, layouts and cache live, they hold memory from
        // the application's callbacks.
        assert!(counter.live.load(Ordering::SeqCst) > 0, "no live allocation while the warm-up holds its objects");
    });
    assert_eq!(warmed.ready, warmed.requested);
    assert_eq!(warmed.requested, 335, "every pipeline of the example");
    let (allocations, frees) = (counter.allocations.load(Ordering::SeqCst), counter.frees.load(Ordering::SeqCst));
    let threads = counter.threads.lock().unwrap().len();
    eprintln!(
        "allocator: {allocations} allocations, {} reallocations, {frees} frees, on {threads} threads",
        counter.reallocations.load(Ordering::SeqCst)
    );
    assert!(allocations > 0, "the driver never called the application's allocator");
    // Every allocation made through the callbacks was freed through them, before the
    // application destroys its device.
    assert_eq!(counter.live.load(Ordering::SeqCst), 0, "{allocations} allocations, {frees} frees");
    assert_eq!(allocations, frees);
    assert!(logged("allocation callbacks the application's"));
    app.finish();
}

/// `granary_warmup_optimize_linked`: every pipeline the example archives as a library part is
/// made again whole behind the requests and swapped in (generation 1, not linked, another
/// handle), counted in `GranaryWarmupStats::optimized`; the whole pipelines come from the
/// application's allocator too, and everything is freed.
#[test]
fn fast_linked_pipelines_are_made_again_whole_and_swapped_in_through_the_c_api() {
    install_log();
    let Some(app) = App::open() else { return };
    if !app.libraries {
        eprintln!("SKIPPED: the device has no graphics pipeline libraries: nothing is fast-linked");
        app.finish();
        return;
    }
    let counter = Counter::default();
    let allocator = callbacks(&counter);
    let warmed = warm(&app, common::example_archive_bytes(), &allocator, 0, "", true, || {});
    assert_eq!(warmed.ready, warmed.requested);
    assert!(warmed.linked > 0, "the example has pipelines with unspecialized colour output");
    assert_eq!(warmed.whole, warmed.linked, "every fast-linked ticket now has its whole pipeline");
    assert!(warmed.optimized > 0 && warmed.optimized as usize <= warmed.linked);
    assert_eq!(counter.live.load(Ordering::SeqCst), 0);
    app.finish();
}

/// An archive with whole variants beside its library pipelines (`harvest --whole-variants`):
/// every `post/` pipeline with unspecialized colour output is made as its `rgba8unorm` variant
/// (the loader's default link format), so nothing links, and `GranaryPipelineInfo::variant`
/// says so.
#[test]
fn whole_variants_are_made_in_place_of_linking_through_the_c_api() {
    install_log();
    let Some(app) = App::open() else { return };
    let (bytes, expanded) = common::example_archive_with_variants_bytes();
    let open = expanded.iter().filter(|l| l.starts_with("post/")).count();
    let warmed = warm(&app, bytes, null(), 0, "post/", false, || {});
    assert_eq!(warmed.ready, warmed.requested);
    assert!(open > 0, "the example's post/ pipelines include some with unspecialized colour output");
    assert_eq!((warmed.variants, warmed.linked_first), (open, 0), "{open} library pipelines, each made as its variant");
    app.finish();
}

#[test]
fn a_null_allocator_still_works() {
    install_log();
    let Some(app) = App::open() else { return };
    let warmed = warm(&app, common::example_archive_bytes(), null(), 0, "post/", false, || {});
    assert_eq!(warmed.ready, warmed.requested);
    app.finish();
}

#[test]
fn ignore_allocator_still_works_and_never_calls_the_callbacks() {
    install_log();
    let Some(app) = App::open() else { return };
    let counter = Counter::default();
    let allocator = callbacks(&counter);
    let warmed =
        warm(&app, common::example_archive_bytes(), &allocator, GRANARY_DEVICE_IGNORE_ALLOCATOR, "post/", false, || {});
    assert_eq!(warmed.ready, warmed.requested);
    assert_eq!(counter.allocations.load(Ordering::SeqCst), 0, "granary used callbacks it was told to ignore");
    assert_eq!(counter.frees.load(Ordering::SeqCst), 0);
    assert!(logged("GRANARY_DEVICE_IGNORE_ALLOCATOR: the allocation callbacks are ignored"));
    app.finish();
}

/// The objects of native pipelines that the example's pipelines do not use — immutable
/// samplers, render passes, descriptor-set layouts holding samplers — and a pipeline cache,
/// made through the Rust API (`Gpu::borrowed_with_allocator`) with the counting callbacks.
#[test]
fn the_rust_api_makes_samplers_render_passes_and_native_layouts_with_the_allocator() {
    use granary_archive::native::{
        AttachmentDescription, AttachmentReference, NativeLayout, RenderPassState, SamplerState, SetLayout,
        SetLayoutBinding, SubpassDescription,
    };
    use granary_archive::vulkan::{device_features_of, Driver, Gpu, OpenOptions};
    use std::sync::Arc;
    let Some(app) = App::open() else { return };
    let counter = Counter::default();
    let allocator = callbacks(&counter);
    {
        // SAFETY: the application's Vulkan 1.3 instance, alive until `finish`, after every
        // object made here is dropped.
        let driver = unsafe { Driver::borrowed(&app.instance) };
        let info = driver.physical_device(app.physical).expect("device info");
        let features = device_features_of(&app.features, &vk::PhysicalDeviceVulkan11Features::default());
        let enabled = OpenOptions { pipeline_binaries: false, libraries: false, features, ..OpenOptions::default() };
        // SAFETY: `app.device` was created from this physical device with these core features
        // (and dynamic rendering, maintenance4), outlives the `Gpu`; the counting callbacks are
        // thread-safe (atomics, the system allocator) and `counter` outlives the `Gpu`.
        let gpu = unsafe { Gpu::borrowed_with_allocator(driver, info, &app.device, enabled, Some(&allocator)) }
            .expect("wrap the device");
        assert_eq!(gpu.allocator().expect("the callbacks are kept").user_data, allocator.user_data);
        let sampler = SamplerState {
            flags: 0,
            mag_filter: 1,
            min_filter: 1,
            mipmap_mode: 1,
            address_mode_u: 2,
            address_mode_v: 2,
            address_mode_w: 2,
            mip_lod_bias: 0.0,
            anisotropy_enable: false,
            max_anisotropy: 1.0,
            compare_enable: false,
            compare_op: 0,
            min_lod: 0.0,
            max_lod: 4.0,
            border_color: 0,
            unnormalized_coordinates: false,
            reduction_mode: None,
        };
        let layout = NativeLayout {
            flags: 0,
            set_layouts: vec![SetLayout {
                flags: 0,
                bindings: vec![SetLayoutBinding {
                    binding: 0,
                    descriptor_type: 1, // VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER
                    descriptor_count: 1,
                    stage_flags: 0x10, // VK_SHADER_STAGE_FRAGMENT_BIT
                    immutable_samplers: vec![sampler.clone()],
                    binding_flags: 0,
                }],
            }],
            push_constant_ranges: vec![],
        };
        let render_pass = RenderPassState {
            flags: 0,
            attachments: vec![AttachmentDescription {
                flags: 0,
                format: 37, // VK_FORMAT_R8G8B8A8_UNORM
                samples: 1,
                load_op: 1,
                store_op: 0,
                stencil_load_op: 2,
                stencil_store_op: 1,
                initial_layout: 0,
                final_layout: 2,
            }],
            subpasses: vec![SubpassDescription {
                flags: 0,
                pipeline_bind_point: 0,
                view_mask: 0,
                input_attachments: vec![],
                color_attachments: vec![AttachmentReference { attachment: 0, layout: 2, aspect_mask: 0 }],
                resolve_attachments: vec![],
                depth_stencil_attachment: None,
                preserve_attachments: vec![],
            }],
            dependencies: vec![],
            correlated_view_masks: vec![],
        };
        let before = counter.allocations.load(Ordering::SeqCst);
        let standalone = gpu.sampler(&sampler).expect("sampler");
        let native =
            gpu.native_layout(&layout, &|s| gpu.sampler(s).map(Arc::new).map_err(|e| e.to_string())).expect("layout");
        let pass = gpu.render_pass(&render_pass).expect("render pass");
        let cache = gpu.pipeline_cache(&[]).expect("pipeline cache");
        assert!(!native.handle().is_null() && native.set_layouts().len() == 1 && !pass.handle().is_null());
        eprintln!(
            "samplers, layout, render pass and cache: {} allocations, {} live",
            counter.allocations.load(Ordering::SeqCst) - before,
            counter.live.load(Ordering::SeqCst)
        );
        drop((standalone, native, pass, cache, gpu));
    }
    let (allocations, frees) = (counter.allocations.load(Ordering::SeqCst), counter.frees.load(Ordering::SeqCst));
    assert!(allocations > 0, "the driver never called the application's allocator");
    assert_eq!(counter.live.load(Ordering::SeqCst), 0, "{allocations} allocations, {frees} frees");
    app.finish();
}
