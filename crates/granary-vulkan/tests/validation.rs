//! The validation plumbing on a real driver: a deliberately invalid call (a push-constant range
//! of size 0, and one with no stage flags, through `Gpu::layout`) is reported by
//! `VK_LAYER_KHRONOS_validation` with its VUID and the pipeline scope it was made in, or as the
//! device's outside any scope; the suite's helper (`support::unexpected`) would fail a test on
//! it; and while granary's messenger is registered the layer prints nothing on standard output
//! (checked in a child process, against a control run without the messenger, where it does).
//!
//! The invalid calls are undefined behaviour in the driver, which the layer need not stop:
//! with another validated instance alive in the same process, NVIDIA 580.159 crashed the test
//! binary (SIGSEGV) in 8 of 16 runs at `--test-threads 4` and in none of 16 at one thread
//! (docs/BENCHMARKS.md, "Validation"). So the tests here run one at a time ([`one_at_a_time`]),
//! and never beside another test's Vulkan work: each test binary is its own process.
//!
//! Needs the layer: without it the tests print `SKIPPED`, unless `GRANARY_VALIDATE=1` or `CI`
//! makes that a failure; without a driver likewise under `GRANARY_REQUIRE_VULKAN=1`.

mod support;

use granary_archive::vulkan::validation::{self, DriverOptions, Severity, DEVICE};
use granary_archive::vulkan::vulkanalia::vk;
use granary_archive::vulkan::LayoutDesc;
use granary_archive::vulkan::{select_device, Driver, Gpu, OpenOptions, VulkanError};
use std::sync::{Arc, Mutex, MutexGuard};

/// Held by each test for its whole run: no test's driver is alive while another makes the
/// invalid calls (a poisoned lock, from a failed test, still serializes).
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|p| p.into_inner())
}

/// A driver under the validation layer, or `None` (skipped).
fn validated_driver() -> Option<Arc<Driver>> {
    match Driver::load_with(DriverOptions { validation: true }) {
        Ok(d) => Some(d),
        Err(e @ VulkanError::NoValidationLayer { .. }) => {
            assert!(
                !support::layer_required(),
                "the validation layer is required here (GRANARY_VALIDATE=1 or CI): {e}"
            );
            eprintln!("SKIPPED: {e}; this test checked nothing");
            None
        }
        Err(e) => {
            support::no_driver(&e);
            None
        }
    }
}

/// The two invalid layouts: inside a scope named `scope_name`, then outside any scope.
fn invalid_calls(driver: Arc<Driver>, scope_name: &str) {
    let info = select_device(driver.physical_devices().expect("devices"), None).expect("a device");
    let gpu = Gpu::open(driver, info, OpenOptions::default()).expect("open the device");
    let size_zero = LayoutDesc { sets: Vec::new(), push_constants: Some((0, vk::ShaderStageFlags::VERTEX)) };
    let no_stages = LayoutDesc { sets: Vec::new(), push_constants: Some((16, vk::ShaderStageFlags::empty())) };
    // The layer reports each and refuses the call (VK_ERROR_VALIDATION_FAILED_EXT) or passes it
    // on; either way the result is not what is tested.
    let _ = validation::scope(|| scope_name.to_string(), || gpu.layout(&size_zero).map(drop));
    let _ = gpu.layout(&no_stages).map(drop);
}

const SIZE_ZERO: &str = "VUID-VkPushConstantRange-size-00296";
const NO_STAGES: &str = "VUID-VkPushConstantRange-stageFlags-requiredbitmask";

#[test]
fn an_invalid_call_is_reported_with_its_vuid_and_the_pipeline_it_was_made_for() {
    let _one = one_at_a_time();
    let Some(driver) = validated_driver() else { return };
    let log = driver.validation().expect("a validated driver has a log").clone();
    invalid_calls(driver, "deliberately/invalid");
    let messages = log.messages();
    let find = |id: &str| messages.iter().find(|m| m.id == id);
    let m = find(SIZE_ZERO).unwrap_or_else(|| panic!("{SIZE_ZERO} not reported: {messages:#?}"));
    assert_eq!((m.severity, m.pipeline.as_str()), (Severity::Error, "deliberately/invalid"), "{m:#?}");
    assert!(m.text.contains(SIZE_ZERO), "{m:#?}");
    let m = find(NO_STAGES).unwrap_or_else(|| panic!("{NO_STAGES} not reported: {messages:#?}"));
    assert_eq!((m.severity, m.pipeline.as_str()), (Severity::Error, DEVICE), "{m:#?}");
    assert!(log.counts()[SIZE_ZERO].errors >= 1 && log.errors() >= 2);
    // What every other Vulkan test ends with would fail on these.
    assert!(support::unexpected(&log).iter().any(|m| m.contains(SIZE_ZERO)));
}

/// The child process of the test below (does nothing unless it is that child).
#[test]
fn child_makes_the_invalid_calls() {
    let _one = one_at_a_time();
    match std::env::var("GRANARY_VALIDATION_CHILD").as_deref() {
        // Granary's messenger: the messages go to the log, none to stdout.
        Ok("messenger") => {
            let driver = Driver::load_with(DriverOptions { validation: true }).expect("validated driver");
            let log = driver.validation().expect("log").clone();
            invalid_calls(driver, "child");
            eprintln!("child: {} messages in the log", log.total());
            assert!(log.errors() >= 2);
        }
        // The layer enabled from the environment, no messenger: its default printing.
        Ok("control") => invalid_calls(Driver::load().expect("driver"), "child"),
        _ => {}
    }
}

#[test]
fn with_the_messenger_registered_the_layer_prints_nothing_on_stdout() {
    let _one = one_at_a_time();
    if validated_driver().is_none() {
        return;
    }
    let run = |mode: &str| {
        let mut c = std::process::Command::new(std::env::current_exe().expect("test binary"));
        c.args(["--exact", "child_makes_the_invalid_calls", "--nocapture", "--test-threads", "1"])
            .env("GRANARY_VALIDATION_CHILD", mode);
        if mode == "control" {
            c.env("VK_INSTANCE_LAYERS", validation::LAYER);
        }
        let o = c.output().expect("run the child");
        let (out, err) =
            (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned());
        assert!(o.status.success(), "child {mode}: {out}\n{err}");
        (out, err)
    };
    let (out, err) = run("messenger");
    assert!(err.contains("messages in the log"), "the child ran the calls: {err}");
    assert!(!out.contains("VUID-"), "the layer printed on stdout although a messenger is registered:\n{out}");
    // The control shows the check can see the layer's printing.
    let (out, _) = run("control");
    assert!(out.contains(SIZE_ZERO), "without a messenger the layer prints on stdout:\n{out}");
}
