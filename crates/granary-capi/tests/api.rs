//! The C API's rules, called from Rust through the same functions C calls (no Vulkan driver
//! needed): every exported function is one guarded body (panics caught and returned as
//! `GRANARY_ERROR_PANIC`), NULL arguments and bad `struct_size`s refused with the thread's
//! last error set and logged, `granary_archive_open_memory` calling its release callback
//! exactly once whatever happens, archives opened and looked up, malformed allocation callbacks
//! and inconsistent device descriptions refused before any Vulkan call (allocation callbacks
//! honoured on a device: `tests/allocator.rs`).

mod common;

use granary_capi::*;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

fn last_message() -> String {
    // SAFETY: granary returns a NUL-terminated string valid until the next failing call on
    // this thread; it is copied at once.
    unsafe { CStr::from_ptr(granary_last_error_message()) }.to_string_lossy().into_owned()
}

fn example() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(common::example_archive_bytes)
}

/// Messages the log callback received (the callback is process-wide: tests look for their own).
static LOGGED: Mutex<Vec<(u32, String)>> = Mutex::new(Vec::new());

unsafe extern "C" fn record_log(_user: *mut c_void, level: u32, message: *const c_char) {
    // SAFETY: granary passes a NUL-terminated string valid during the call.
    let text = unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned();
    if let Ok(mut l) = LOGGED.lock() {
        l.push((level, text));
    }
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
    LOGGED.lock().unwrap().iter().any(|(_, m)| m.contains(needle))
}

#[test]
fn every_exported_function_is_one_guarded_body() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, _) in text.match_indices("extern \"C\" fn granary_") {
            let signature = &text[i..];
            let name = &signature["extern \"C\" fn ".len()..signature.find('(').unwrap()];
            let mut body = signature[signature.find('{').unwrap() + 1..].trim_start();
            while body.starts_with("//") {
                body = body.split_once('\n').unwrap().1.trim_start(); // a comment first
            }
            // `const F: &str = "…";` may name the function first.
            let body = match body.strip_prefix("const F: &str = ") {
                Some(rest) => rest.split_once(';').unwrap().1.trim_start(),
                None => body,
            };
            assert!(
                ["guard(", "guard_value(", "crate::diagnostics::guard_value("].iter().any(|g| body.starts_with(g)),
                "{}: `{name}` does not start its body with guard: {:.80}",
                path.display(),
                body
            );
            checked += 1;
        }
    }
    assert!(checked >= 25, "found only {checked} exported functions");
}

#[test]
fn a_panic_becomes_granary_error_panic_with_its_message_and_is_logged() {
    install_log();
    let r = granary_capi::__guard("granary_test", || panic!("the driver exploded {}", 42));
    assert_eq!(r, GranaryResult::GRANARY_ERROR_PANIC);
    assert!(last_message().contains("the driver exploded 42"), "{}", last_message());
    assert!(last_message().contains("granary_test"), "{}", last_message());
    assert!(logged("the driver exploded 42"));
    // A failure is its code, and a success leaves the last error as it was.
    let r = granary_capi::__guard("granary_test", || {
        Err(granary_capi::__Failure::new(GranaryResult::GRANARY_ERROR_DEVICE_LOST, "lost it"))
    });
    assert_eq!(r, GranaryResult::GRANARY_ERROR_DEVICE_LOST);
    assert_eq!(granary_capi::__guard("granary_test", || Ok(GranaryResult::GRANARY_OK)), GranaryResult::GRANARY_OK);
    assert_eq!(last_message(), "lost it");
    let mut info = GranaryErrorInfo {
        struct_size: std::mem::size_of::<GranaryErrorInfo>() as u32,
        result: 0,
        vk_result: 0,
        message: null(),
    };
    // SAFETY: a writable struct with its size set.
    assert_eq!(unsafe { granary_last_error(&mut info) }, GranaryResult::GRANARY_OK);
    assert_eq!(info.result, GranaryResult::GRANARY_ERROR_DEVICE_LOST as i32);
    // SAFETY: the message pointer granary just returned.
    assert_eq!(unsafe { CStr::from_ptr(info.message) }.to_str().unwrap(), "lost it");
}

#[test]
fn null_pointers_are_errors_naming_the_argument() {
    let mut archive: *mut GranaryArchive = null_mut();
    // SAFETY: every pointer is NULL or valid; NULLs are what is tested.
    unsafe {
        assert_eq!(granary_archive_open(null(), null(), &mut archive), GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT);
        assert!(last_message().contains("`path` is NULL"), "{}", last_message());
        let path = CString::new("/nonexistent.granary").unwrap();
        assert_eq!(
            granary_archive_open(path.as_ptr(), null(), null_mut()),
            GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT
        );
        assert!(last_message().contains("`out` is NULL"), "{}", last_message());
        let mut count = 0usize;
        assert_eq!(granary_archive_pipeline_count(null(), &mut count), GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT);
        let mut loader: *mut GranaryLoader = null_mut();
        assert_eq!(
            granary_loader_create(null(), null(), null(), &mut loader),
            GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT
        );
        assert!(last_message().contains("`archive` is NULL"), "{}", last_message());
        let mut warmup: *mut GranaryWarmup = null_mut();
        assert_eq!(granary_warmup_create(null(), &mut warmup), GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT);
        assert_eq!(granary_warmup_try_get(null(), 1, null_mut()), GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT);
        assert_eq!(granary_warmup_pump(null(), 0, null_mut()), GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT);
        assert_eq!(granary_warmup_wait(null(), null(), 0, 0), GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT);
        let mut stats =
            GranaryLoaderStats { struct_size: std::mem::size_of::<GranaryLoaderStats>() as u32, ..Default::default() };
        assert_eq!(granary_loader_stats(null(), &mut stats), GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT);
        assert_eq!(granary_last_error(null_mut()), GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT);
        assert_eq!(granary_loader_has_binaries(null()), 0);
        // Destroying NULL is nothing.
        granary_archive_close(null_mut());
        granary_loader_destroy(null_mut());
        granary_warmup_destroy(null_mut());
    }
}

#[test]
fn result_names_and_the_version() {
    let name = |r: i32| {
        // SAFETY: a static string.
        unsafe { CStr::from_ptr(granary_result_name(r)) }.to_str().unwrap().to_string()
    };
    assert_eq!(name(0), "GRANARY_OK");
    assert_eq!(name(GranaryResult::GRANARY_ERROR_OUT_OF_MEMORY as i32), "GRANARY_ERROR_OUT_OF_MEMORY");
    assert_eq!(name(-1000), "unknown GranaryResult");
    assert_eq!(granary_capi_version(), GRANARY_CAPI_VERSION_MAJOR << 16 | GRANARY_CAPI_VERSION_MINOR);
}

/// A `GranaryOpenOptions` followed by `extra` bytes, as a caller built against a newer header.
#[repr(C)]
struct Larger {
    options: GranaryOpenOptions,
    extra: [u8; 8],
}

#[test]
fn struct_sizes_smaller_than_the_first_version_or_with_unknown_fields_set_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.granary");
    std::fs::write(&file, example()).unwrap();
    let path = CString::new(file.to_str().unwrap()).unwrap();
    let size = std::mem::size_of::<GranaryOpenOptions>() as u32;
    let mut archive: *mut GranaryArchive = null_mut();
    // SAFETY: valid pointers; the sizes are what is tested (each struct is at least as large
    // as its struct_size says, except where the size is too small, which is refused unread).
    unsafe {
        let small = GranaryOpenOptions { struct_size: 4, flags: 0 };
        assert_eq!(granary_archive_open(path.as_ptr(), &small, &mut archive), GranaryResult::GRANARY_ERROR_STRUCT_SIZE);
        assert!(last_message().contains("GranaryOpenOptions.struct_size is 4"), "{}", last_message());
        // Larger with unknown fields zero: taken; set: refused.
        let mut larger =
            Larger { options: GranaryOpenOptions { struct_size: size + 8, flags: GRANARY_OPEN_VERIFY }, extra: [0; 8] };
        assert_eq!(granary_archive_open(path.as_ptr(), &larger.options, &mut archive), GranaryResult::GRANARY_OK);
        granary_archive_close(archive);
        larger.extra[3] = 1;
        assert_eq!(
            granary_archive_open(path.as_ptr(), &larger.options, &mut archive),
            GranaryResult::GRANARY_ERROR_STRUCT_SIZE
        );
        assert!(last_message().contains("newer granary.h"), "{}", last_message());
        // Unknown flag bits.
        let flags = GranaryOpenOptions { struct_size: size, flags: 1 << 20 };
        assert_eq!(
            granary_archive_open(path.as_ptr(), &flags, &mut archive),
            GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT
        );

        // Out structs: too small refused; larger filled, tail zeroed, struct_size what was filled.
        let mut info = GranaryErrorInfo { struct_size: 8, result: 0, vk_result: 0, message: null() };
        assert_eq!(granary_last_error(&mut info), GranaryResult::GRANARY_ERROR_STRUCT_SIZE);
        #[repr(C)]
        struct LargerInfo {
            info: GranaryErrorInfo,
            tail: [u8; 16],
        }
        let known = std::mem::size_of::<GranaryErrorInfo>() as u32;
        let mut big = LargerInfo {
            info: GranaryErrorInfo { struct_size: known + 16, result: 0, vk_result: 0, message: null() },
            tail: [0xaa; 16],
        };
        assert_eq!(granary_last_error(&mut big.info), GranaryResult::GRANARY_OK);
        assert_eq!(big.info.struct_size, known);
        assert_eq!(big.tail, [0; 16]);
        assert_eq!(big.info.result, GranaryResult::GRANARY_ERROR_STRUCT_SIZE as i32);

        // The device description: a wrong size is refused before anything is read from it.
        let mut a: *mut GranaryArchive = null_mut();
        assert_eq!(granary_archive_open(path.as_ptr(), null(), &mut a), GranaryResult::GRANARY_OK);
        let device = GranaryVulkanDevice { struct_size: 16, ..GranaryVulkanDevice::default() };
        let mut loader: *mut GranaryLoader = null_mut();
        assert_eq!(granary_loader_create(a, &device, null(), &mut loader), GranaryResult::GRANARY_ERROR_STRUCT_SIZE);
        let options = GranaryLoaderOptions { struct_size: 0, ..GranaryLoaderOptions::default() };
        let device = GranaryVulkanDevice {
            struct_size: std::mem::size_of::<GranaryVulkanDevice>() as u32,
            ..GranaryVulkanDevice::default()
        };
        assert_eq!(granary_loader_create(a, &device, &options, &mut loader), GranaryResult::GRANARY_ERROR_STRUCT_SIZE);
        assert!(last_message().contains("GranaryLoaderOptions"), "{}", last_message());
        granary_archive_close(a);
    }
}

static RELEASED: AtomicUsize = AtomicUsize::new(0);

/// Counts its calls into the `AtomicUsize` its user data points at, and checks its arguments.
unsafe extern "C" fn release(user: *mut c_void, data: *const c_void, size: usize) {
    assert!(!user.is_null());
    let _ = (data, size);
    // SAFETY: the tests pass a pointer to a live AtomicUsize.
    unsafe { &*(user as *const AtomicUsize) }.fetch_add(1, Ordering::SeqCst);
    RELEASED.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn open_memory_calls_release_exactly_once_whatever_happens() {
    let bytes = example().to_vec();
    let garbage = vec![0x5au8; 4096];
    let cases: [(&[u8], bool, GranaryResult); 4] = [
        (&bytes, true, GranaryResult::GRANARY_OK),
        (&garbage, true, GranaryResult::GRANARY_ERROR_ARCHIVE),
        (&bytes, false, GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT), // out is NULL
        (&[], true, GranaryResult::GRANARY_ERROR_ARCHIVE),              // no bytes at all
    ];
    for (data, with_out, expected) in cases {
        let calls = AtomicUsize::new(0);
        let mut archive: *mut GranaryArchive = null_mut();
        let out = if with_out { &mut archive as *mut _ } else { null_mut() };
        // SAFETY: `data` lives (unchanged) until release is called, which happens before the
        // call returns in this version; `calls` outlives the call.
        let r = unsafe {
            granary_archive_open_memory(
                data.as_ptr().cast(),
                data.len(),
                Some(release),
                &calls as *const AtomicUsize as *mut c_void,
                null(),
                out,
            )
        };
        assert_eq!(r, expected, "{}", last_message());
        assert_eq!(calls.load(Ordering::SeqCst), 1, "release called once for {expected:?}");
        if r == GranaryResult::GRANARY_OK {
            // The archive is usable after its bytes were released.
            let mut count = 0usize;
            let (mut lo, mut hi) = (0u64, 0u64);
            let label = CString::new("post/tonemap/reinhard/bgra8unorm").unwrap();
            let unknown = CString::new("no/such/label").unwrap();
            // SAFETY: a live handle and valid out pointers.
            unsafe {
                assert_eq!(granary_archive_pipeline_count(archive, &mut count), GranaryResult::GRANARY_OK);
                assert_eq!(
                    granary_archive_lookup_label(archive, label.as_ptr(), &mut lo, &mut hi),
                    GranaryResult::GRANARY_OK,
                    "{}",
                    last_message()
                );
                assert_eq!(
                    granary_archive_lookup_label(archive, unknown.as_ptr(), &mut lo, &mut hi),
                    GranaryResult::GRANARY_NOT_FOUND
                );
                granary_archive_close(archive);
            }
            assert_eq!(count, 335);
            assert_ne!((lo, hi), (0, 0));
        }
    }
    // NULL data with a size: refused, and still released once.
    let calls = AtomicUsize::new(0);
    let mut archive: *mut GranaryArchive = null_mut();
    // SAFETY: NULL data is what is tested; `calls` outlives the call.
    let r = unsafe {
        granary_archive_open_memory(null(), 10, Some(release), &calls as *const _ as *mut c_void, null(), &mut archive)
    };
    assert_eq!(r, GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // No release callback: nothing to call.
    // SAFETY: valid bytes and out pointer.
    let r = unsafe {
        granary_archive_open_memory(bytes.as_ptr().cast(), bytes.len(), None, null_mut(), null(), &mut archive)
    };
    assert_eq!(r, GranaryResult::GRANARY_OK);
    // SAFETY: the handle just made.
    unsafe { granary_archive_close(archive) };
    assert!(RELEASED.load(Ordering::SeqCst) >= 5);
}

#[test]
fn a_missing_file_is_io_and_a_damaged_one_names_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let missing = CString::new(dir.path().join("missing.granary").to_str().unwrap()).unwrap();
    let mut archive: *mut GranaryArchive = null_mut();
    // SAFETY: valid strings and out pointer.
    unsafe {
        assert_eq!(granary_archive_open(missing.as_ptr(), null(), &mut archive), GranaryResult::GRANARY_ERROR_IO);
        assert!(last_message().contains("missing.granary"), "{}", last_message());
        let mut bytes = example().to_vec();
        let n = bytes.len();
        bytes[n / 2] ^= 0xff;
        let damaged = dir.path().join("damaged.granary");
        std::fs::write(&damaged, &bytes).unwrap();
        let damaged = CString::new(damaged.to_str().unwrap()).unwrap();
        let verify = GranaryOpenOptions {
            struct_size: std::mem::size_of::<GranaryOpenOptions>() as u32,
            flags: GRANARY_OPEN_VERIFY | GRANARY_OPEN_READ_INTO_MEMORY,
        };
        assert_eq!(granary_archive_open(damaged.as_ptr(), &verify, &mut archive), GranaryResult::GRANARY_ERROR_ARCHIVE);
        assert!(last_message().contains("offset") || last_message().contains("byte"), "{}", last_message());
        let not_utf8 = [0xffu8, 0xfe, 0];
        assert_eq!(
            granary_archive_open(not_utf8.as_ptr().cast(), null(), &mut archive),
            GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT
        );
        assert!(last_message().contains("not UTF-8"), "{}", last_message());
    }
}

unsafe extern "system" fn no_commands(
    _instance: granary_archive::vulkan::vulkanalia::vk::Instance,
    _name: *const c_char,
) -> granary_archive::vulkan::vulkanalia::vk::PFN_vkVoidFunction {
    None
}

unsafe extern "system" fn never_allocate(
    _user: *mut c_void,
    _size: usize,
    _align: usize,
    _scope: granary_archive::vulkan::vulkanalia::vk::SystemAllocationScope,
) -> *mut c_void {
    unreachable!("a refused allocator is never called")
}

unsafe extern "system" fn never_reallocate(
    _user: *mut c_void,
    _old: *mut c_void,
    _size: usize,
    _align: usize,
    _scope: granary_archive::vulkan::vulkanalia::vk::SystemAllocationScope,
) -> *mut c_void {
    unreachable!("a refused allocator is never called")
}

unsafe extern "system" fn never_free(_user: *mut c_void, _memory: *mut c_void) {
    unreachable!("a refused allocator is never called")
}

unsafe extern "system" fn never_notified(
    _user: *mut c_void,
    _size: usize,
    _ty: granary_archive::vulkan::vulkanalia::vk::InternalAllocationType,
    _scope: granary_archive::vulkan::vulkanalia::vk::SystemAllocationScope,
) {
    unreachable!("a refused allocator is never called")
}

#[test]
fn malformed_allocation_callbacks_and_inconsistent_devices_are_refused_before_any_vulkan_call() {
    use granary_archive::vulkan::vulkanalia::vk::{self, Handle};
    install_log();
    let mut a: *mut GranaryArchive = null_mut();
    let bytes = example();
    // SAFETY: valid bytes and out pointer.
    assert_eq!(
        unsafe { granary_archive_open_memory(bytes.as_ptr().cast(), bytes.len(), None, null_mut(), null(), &mut a) },
        GranaryResult::GRANARY_OK
    );
    // Fake handles and an entry point that resolves nothing: every case below must be refused
    // before granary would call through them.
    // Allocation callbacks without what Vulkan requires of them (VUID-VkAllocationCallbacks-*).
    let no_allocation = vk::AllocationCallbacks::default();
    let no_reallocation =
        vk::AllocationCallbacks { allocation: Some(never_allocate), free: Some(never_free), ..Default::default() };
    let half_notifications = vk::AllocationCallbacks {
        allocation: Some(never_allocate),
        reallocation: Some(never_reallocate),
        free: Some(never_free),
        internal_allocation: Some(never_notified),
        ..Default::default()
    };
    let base = GranaryVulkanDevice {
        struct_size: std::mem::size_of::<GranaryVulkanDevice>() as u32,
        instance: vk::Instance::from_raw(0x1000),
        physical_device: vk::PhysicalDevice::from_raw(0x2000),
        device: vk::Device::from_raw(0x3000),
        get_instance_proc_addr: Some(no_commands),
        ..GranaryVulkanDevice::default()
    };
    let unknown = CString::new("noSuchFeature").unwrap();
    let names = [unknown.as_ptr()];
    let wrong_type = vk::PhysicalDeviceVulkan11Features {
        s_type: vk::StructureType::PHYSICAL_DEVICE_FEATURES_2,
        ..Default::default()
    };
    let cases = [
        (
            GranaryVulkanDevice { allocator: &no_allocation, ..base },
            GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT,
            "allocator->pfnAllocation is NULL",
        ),
        (
            GranaryVulkanDevice { allocator: &no_reallocation, ..base },
            GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT,
            "allocator->pfnReallocation is NULL",
        ),
        (
            GranaryVulkanDevice { allocator: &half_notifications, ..base },
            GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT,
            "pfnInternalAllocation and pfnInternalFree",
        ),
        (
            GranaryVulkanDevice { get_instance_proc_addr: None, ..base },
            GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT,
            "get_instance_proc_addr",
        ),
        (
            GranaryVulkanDevice { device: vk::Device::null(), ..base },
            GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT,
            "device->device",
        ),
        (GranaryVulkanDevice { flags: 1 << 9, ..base }, GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT, "flag bits"),
        (
            GranaryVulkanDevice { flags: GRANARY_DEVICE_GRAPHICS_PIPELINE_LIBRARY, ..base },
            GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT,
            "does not name VK_KHR_pipeline_library",
        ),
        (
            GranaryVulkanDevice { enabled_feature_names: names.as_ptr(), enabled_feature_name_count: 1, ..base },
            GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT,
            "unknown feature name 'noSuchFeature'",
        ),
        (
            GranaryVulkanDevice { enabled_vulkan11_features: &wrong_type, ..base },
            GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT,
            "sType",
        ),
        (
            GranaryVulkanDevice { enabled_extensions: null(), enabled_extension_count: 2, ..base },
            GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT,
            "enabled_extensions",
        ),
    ];
    for (device, expected, says) in cases {
        let mut loader: *mut GranaryLoader = null_mut();
        // SAFETY: every pointer in `device` is NULL or valid; the handles are never used (each
        // case is refused first, which is what is tested).
        let r = unsafe { granary_loader_create(a, &device, null(), &mut loader) };
        assert_eq!(r, expected, "{says}: {}", last_message());
        assert!(last_message().contains(says), "{says}: {}", last_message());
        assert!(loader.is_null());
    }
    assert!(logged("allocator->pfnAllocation is NULL"));
    // Unknown loader options.
    let device = base;
    let format = CString::new("rgba9unorm").unwrap();
    let formats = [format.as_ptr()];
    let size = std::mem::size_of::<GranaryLoaderOptions>() as u32;
    for (options, says) in [
        (GranaryLoaderOptions { struct_size: size, flags: 1 << 30, ..Default::default() }, "flag bits"),
        (
            GranaryLoaderOptions {
                struct_size: size,
                link_formats: formats.as_ptr(),
                link_format_count: 1,
                ..Default::default()
            },
            "rgba9unorm",
        ),
    ] {
        let mut loader: *mut GranaryLoader = null_mut();
        // SAFETY: as above.
        let r = unsafe { granary_loader_create(a, &device, &options, &mut loader) };
        assert_eq!(r, GranaryResult::GRANARY_ERROR_INVALID_ARGUMENT, "{}", last_message());
        assert!(last_message().contains(says), "{}", last_message());
    }
    // SAFETY: the handle made above.
    unsafe { granary_archive_close(a) };
}
