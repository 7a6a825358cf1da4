//! `GranaryVulkanDevice`: the application's raw Vulkan handles and what it enabled, turned into
//! granary's `Driver` and `Gpu` (`Driver::borrowed`, `Gpu::borrowed`).
//!
//! Granary never destroys the instance or the device. A non-NULL `allocator` is honoured: it
//! is checked (the three required callbacks set, the two notifications both or neither) and
//! handed to `Gpu::borrowed_with_allocator`, so every Vulkan object granary creates on the
//! device (shader modules, samplers, descriptor-set and pipeline layouts, render passes,
//! pipelines and libraries, pipeline binaries, pipeline caches) is created and destroyed with
//! it. The application's callbacks must be thread-safe (granary's workers and the
//! application's threads call Vulkan at once, and Vulkan calls the callbacks on the calling
//! thread without synchronizing them) and stay valid until every loader and warm-up made over
//! the device is destroyed. `GRANARY_DEVICE_IGNORE_ALLOCATOR` (kept for programs written for
//! the version that could not honour it) makes granary use no allocator for its own objects,
//! which Vulkan allows (each object is destroyed with the allocator it was created with, and
//! granary creates and destroys its own).

use crate::abi;
use crate::abi::Versioned;
use crate::diagnostics::{log, GRANARY_LOG_INFO, GRANARY_LOG_WARN};
use crate::error::{Failure, GranaryResult};
use granary_archive::vulkan::vulkanalia::prelude::v1_3::{Device, Instance, InstanceV1_0};
use granary_archive::vulkan::vulkanalia::vk::{self, Handle as _};
use granary_archive::vulkan::{device_features_of, Driver, Gpu, OpenOptions};
use granary_archive::DeviceFeatures;
use std::ffi::c_char;
use std::sync::Arc;

/// `VkInstance` (vulkan.h's type).
pub type VkInstance = vk::Instance;
/// `VkPhysicalDevice` (vulkan.h's type).
pub type VkPhysicalDevice = vk::PhysicalDevice;
/// `VkDevice` (vulkan.h's type).
pub type VkDevice = vk::Device;
/// `VkPipeline` (vulkan.h's type).
pub type VkPipeline = vk::Pipeline;
/// `VkPipelineLayout` (vulkan.h's type).
pub type VkPipelineLayout = vk::PipelineLayout;
/// `VkResult` (vulkan.h's type).
pub type VkResult = i32;
/// `PFN_vkGetInstanceProcAddr` (vulkan.h's type, nullable).
#[allow(non_camel_case_types)]
pub type PFN_vkGetInstanceProcAddr = Option<vk::PFN_vkGetInstanceProcAddr>;
/// `PFN_vkGetDeviceProcAddr` (vulkan.h's type, nullable).
#[allow(non_camel_case_types)]
pub type PFN_vkGetDeviceProcAddr = Option<vk::PFN_vkGetDeviceProcAddr>;
/// `VkAllocationCallbacks` (vulkan.h's type).
pub type VkAllocationCallbacks = vk::AllocationCallbacks;
/// `VkPhysicalDeviceFeatures` (vulkan.h's type).
pub type VkPhysicalDeviceFeatures = vk::PhysicalDeviceFeatures;
/// `VkPhysicalDeviceVulkan11Features` (vulkan.h's type).
pub type VkPhysicalDeviceVulkan11Features = vk::PhysicalDeviceVulkan11Features;

/// `GranaryVulkanDevice::flags`: the device was created with `VK_KHR_pipeline_binary` and
/// `VK_KHR_maintenance5` (both named in `enabled_extensions`) and the `pipelineBinaries`
/// feature: pipelines may be created from the archive's driver binaries.
pub const GRANARY_DEVICE_PIPELINE_BINARIES: u32 = 1;
/// `GranaryVulkanDevice::flags`: the device was created with `VK_KHR_pipeline_library` and
/// `VK_EXT_graphics_pipeline_library` (both named in `enabled_extensions`) and the
/// `graphicsPipelineLibrary` feature: pipelines archived as libraries are linked.
pub const GRANARY_DEVICE_GRAPHICS_PIPELINE_LIBRARY: u32 = 2;
/// `GranaryVulkanDevice::flags`: granary uses no allocator (`NULL`, the driver's default) for
/// its own objects even when `allocator` is set; the `allocator` is not read (logged as a
/// warning). For compatibility with programs written for the version that refused allocators:
/// without this flag a non-NULL `allocator` is honoured.
pub const GRANARY_DEVICE_IGNORE_ALLOCATOR: u32 = 4;
const DEVICE_FLAGS: u32 =
    GRANARY_DEVICE_PIPELINE_BINARIES | GRANARY_DEVICE_GRAPHICS_PIPELINE_LIBRARY | GRANARY_DEVICE_IGNORE_ALLOCATOR;

/// The application's Vulkan objects and what it enabled on its device. Granary trusts what
/// it says: a feature or extension named here that the device was not created with is
/// undefined behaviour in the driver (as with Rust's `Gpu::borrowed`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GranaryVulkanDevice {
    /// `sizeof(GranaryVulkanDevice)`.
    pub struct_size: u32,
    /// `GRANARY_DEVICE_*` bits; an unknown bit is refused.
    pub flags: u32,
    /// A Vulkan 1.3 (or later) instance.
    pub instance: VkInstance,
    /// The physical device `device` was created from.
    pub physical_device: VkPhysicalDevice,
    /// The device, created with Vulkan 1.3's `dynamicRendering` enabled (and `maintenance4`,
    /// which every 1.3 device supports).
    pub device: VkDevice,
    /// `vkGetInstanceProcAddr` of the loader the instance was created with (required).
    pub get_instance_proc_addr: PFN_vkGetInstanceProcAddr,
    /// `vkGetDeviceProcAddr`; NULL: granary asks `get_instance_proc_addr` for it.
    pub get_device_proc_addr: PFN_vkGetDeviceProcAddr,
    /// The device extensions `device` was created with (`enabled_extension_count` names).
    pub enabled_extensions: *const *const c_char,
    /// How many names `enabled_extensions` holds.
    pub enabled_extension_count: u32,
    /// How many names `enabled_feature_names` holds.
    pub enabled_feature_name_count: u32,
    /// Further enabled features, by granary's names (Vulkan's member names, such as
    /// `"synchronization2"` or `"meshShader"`, and extension names for extensions without a
    /// feature structure); an unknown name is refused. Together with the two structures
    /// below, what pipelines are checked against.
    pub enabled_feature_names: *const *const c_char,
    /// The core features the device was created with (its `pEnabledFeatures`, or
    /// `VkPhysicalDeviceFeatures2::features`); NULL: none.
    pub enabled_features: *const VkPhysicalDeviceFeatures,
    /// The Vulkan 1.1 features it was created with (`sType` must be
    /// `VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES`; `pNext` is not read); NULL:
    /// none.
    pub enabled_vulkan11_features: *const VkPhysicalDeviceVulkan11Features,
    /// The application's allocation callbacks (NULL: none, the driver's default), used for
    /// every Vulkan object granary creates on `device` (shader modules, samplers,
    /// descriptor-set and pipeline layouts, render passes, pipelines and pipeline libraries,
    /// pipeline binaries, pipeline caches), at its creation and its destruction. The structure
    /// is copied during the call; its callbacks and `pUserData` must stay valid until every
    /// loader and warm-up made with this description is destroyed (the last objects are freed
    /// through them then), and must be thread-safe: granary creates and destroys objects on
    /// several threads at once (its workers, your threads calling granary, the thread
    /// destroying the last handle) and Vulkan calls the callbacks on the calling thread without
    /// synchronizing them. `pfnAllocation`, `pfnReallocation` and `pfnFree` must be set, and
    /// `pfnInternalAllocation` and `pfnInternalFree` both or neither (else
    /// `GRANARY_ERROR_INVALID_ARGUMENT`). Ignored with `GRANARY_DEVICE_IGNORE_ALLOCATOR`.
    pub allocator: *const VkAllocationCallbacks,
}

impl Default for GranaryVulkanDevice {
    fn default() -> Self {
        GranaryVulkanDevice {
            struct_size: 0,
            flags: 0,
            instance: vk::Instance::null(),
            physical_device: vk::PhysicalDevice::null(),
            device: vk::Device::null(),
            get_instance_proc_addr: None,
            get_device_proc_addr: None,
            enabled_extensions: std::ptr::null(),
            enabled_extension_count: 0,
            enabled_feature_name_count: 0,
            enabled_feature_names: std::ptr::null(),
            enabled_features: std::ptr::null(),
            enabled_vulkan11_features: std::ptr::null(),
            allocator: std::ptr::null(),
        }
    }
}

// SAFETY: repr(C), `struct_size: u32` first; integers, handles (integers), raw pointers and
// nullable function pointers.
unsafe impl Versioned for GranaryVulkanDevice {
    const NAME: &'static str = "GranaryVulkanDevice";
    const V1_SIZE: usize = std::mem::size_of::<GranaryVulkanDevice>();
}

/// The features `d` says were enabled, as granary names them.
///
/// # Safety
///
/// `d`'s pointers are NULL or point at what their types say.
unsafe fn features_of(d: &GranaryVulkanDevice, function: &str) -> Result<DeviceFeatures, Failure> {
    // SAFETY: NULL or a `VkPhysicalDeviceFeatures` (the caller's promise); read unaligned.
    let core = unsafe { d.enabled_features.as_ref().map(|p| std::ptr::read_unaligned(p)) }.unwrap_or_default();
    let v11 = match d.enabled_vulkan11_features.is_null() {
        true => vk::PhysicalDeviceVulkan11Features::default(),
        false => {
            // SAFETY: a `VkPhysicalDeviceVulkan11Features` (the caller's promise).
            let mut v = unsafe { std::ptr::read_unaligned(d.enabled_vulkan11_features) };
            if v.s_type != vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES {
                return Err(Failure::invalid(format!(
                    "{function}: enabled_vulkan11_features has sType {}, not VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES",
                    v.s_type.as_raw()
                )));
            }
            v.next = std::ptr::null_mut();
            v
        }
    };
    let mut features = device_features_of(&core, &v11);
    // SAFETY: the caller's promise.
    for name in unsafe {
        abi::strs_in(d.enabled_feature_names, d.enabled_feature_name_count, function, "enabled_feature_names")?
    } {
        let (bit, _) = DeviceFeatures::ALL.iter().find(|(_, n)| *n == name).ok_or_else(|| {
            Failure::invalid(format!("{function}: unknown feature name '{name}' in enabled_feature_names"))
        })?;
        features = features.union(*bit);
    }
    Ok(features)
}

/// The allocation callbacks granary is to use for its objects: `None` for a NULL `allocator`
/// or with `GRANARY_DEVICE_IGNORE_ALLOCATOR` (logged), else a copy of `*d.allocator`, checked
/// as `VkAllocationCallbacks`' valid-usage rules require (VUID-VkAllocationCallbacks-00632,
/// -00633, -00634, -00635) before any Vulkan call.
///
/// # Safety
///
/// `d.allocator` is NULL or points at a `VkAllocationCallbacks`.
unsafe fn allocator_of(d: &GranaryVulkanDevice, function: &str) -> Result<Option<vk::AllocationCallbacks>, Failure> {
    if d.allocator.is_null() {
        return Ok(None);
    }
    if d.flags & GRANARY_DEVICE_IGNORE_ALLOCATOR != 0 {
        log(
            GRANARY_LOG_WARN,
            &format!(
                "{function}: GRANARY_DEVICE_IGNORE_ALLOCATOR: the allocation callbacks are ignored; granary's \
                 objects use no allocator (the driver's default)"
            ),
        );
        return Ok(None);
    }
    // SAFETY: a `VkAllocationCallbacks` (the caller's promise); read unaligned, copied.
    let a = unsafe { std::ptr::read_unaligned(d.allocator) };
    for (missing, name) in [
        (a.allocation.is_none(), "pfnAllocation"),
        (a.reallocation.is_none(), "pfnReallocation"),
        (a.free.is_none(), "pfnFree"),
    ] {
        if missing {
            return Err(Failure::invalid(format!("{function}: allocator->{name} is NULL")));
        }
    }
    if a.internal_allocation.is_some() != a.internal_free.is_some() {
        return Err(Failure::invalid(format!(
            "{function}: allocator has one of pfnInternalAllocation and pfnInternalFree but not the other"
        )));
    }
    Ok(Some(a))
}

/// A loader (`PFN_vkGetInstanceProcAddr` in vulkanalia's terms) for the application's entry
/// point, so that the instance's and device's commands resolve through it.
fn static_commands(gipa: vk::PFN_vkGetInstanceProcAddr) -> vk::StaticCommands {
    vk::StaticCommands { get_instance_proc_addr: gipa }
}

/// Granary's `Gpu` over the application's device as `d` describes it.
///
/// # Safety
///
/// `d`'s handles are live objects of one instance, created as `d` says, and stay alive until
/// everything made from the returned `Gpu` is dropped; its pointers are NULL or point at what
/// their types say.
pub(crate) unsafe fn gpu_of(d: &GranaryVulkanDevice, function: &str) -> Result<Arc<Gpu>, Failure> {
    if d.flags & !DEVICE_FLAGS != 0 {
        return Err(Failure::invalid(format!(
            "{function}: unknown GranaryVulkanDevice flag bits {:#x}",
            d.flags & !DEVICE_FLAGS
        )));
    }
    let gipa = d.get_instance_proc_addr.ok_or_else(|| Failure::null(function, "device->get_instance_proc_addr"))?;
    for (null, what) in [
        (d.instance.is_null(), "device->instance"),
        (d.physical_device.is_null(), "device->physical_device"),
        (d.device.is_null(), "device->device"),
    ] {
        if null {
            return Err(Failure::null(function, what));
        }
    }
    // SAFETY: the caller's promise (`allocator` NULL or a `VkAllocationCallbacks`).
    let allocator = unsafe { allocator_of(d, function)? };
    // SAFETY: the caller's promise (as `d`'s fields say).
    let extensions =
        unsafe { abi::strs_in(d.enabled_extensions, d.enabled_extension_count, function, "enabled_extensions")? };
    let has = |n: &str| extensions.contains(&n);
    let wants = |flag: u32, names: [&str; 2]| -> Result<bool, Failure> {
        if d.flags & flag == 0 {
            return Ok(false);
        }
        match names.iter().find(|n| !has(n)) {
            Some(missing) => Err(Failure::invalid(format!(
                "{function}: flags say {} but enabled_extensions does not name {missing}",
                if flag == GRANARY_DEVICE_PIPELINE_BINARIES {
                    "pipeline binaries"
                } else {
                    "graphics pipeline libraries"
                }
            ))),
            None => Ok(true),
        }
    };
    let pipeline_binaries = wants(GRANARY_DEVICE_PIPELINE_BINARIES, ["VK_KHR_pipeline_binary", "VK_KHR_maintenance5"])?;
    let libraries = wants(
        GRANARY_DEVICE_GRAPHICS_PIPELINE_LIBRARY,
        ["VK_KHR_pipeline_library", "VK_EXT_graphics_pipeline_library"],
    )?;
    // SAFETY: the caller's promise.
    let features = unsafe { features_of(d, function)? };

    let commands = static_commands(gipa);
    let instance_info = vk::InstanceCreateInfo::default();
    // SAFETY: `d.instance` is a live instance created through `gipa`'s loader (the caller's
    // promise); vulkanalia resolves its commands with `vkGetInstanceProcAddr(instance, …)`.
    // The create info only fills vulkanalia's list of enabled extensions, which granary does
    // not read.
    let instance = unsafe { Instance::from_created(&commands, &instance_info, d.instance) }.map_err(|e| Failure {
        vk_result: e.as_raw(),
        ..Failure::new(
            GranaryResult::GRANARY_ERROR_VULKAN,
            format!("{function}: vkEnumerateInstanceVersion failed: {e:?}"),
        )
    })?;
    let gdpa = match d.get_device_proc_addr {
        Some(f) => f,
        None => instance.commands().get_device_proc_addr,
    };
    let device_info = vk::DeviceCreateInfo::default();
    // SAFETY: `d.device` is a live device of `d.physical_device` of this instance (the
    // caller's promise); its commands resolve through `vkGetDeviceProcAddr`. The create info
    // only fills vulkanalia's extension list, which granary does not read.
    let device =
        unsafe { Device::from_created(gdpa, d.physical_device, &device_info, d.device) }.map_err(|e| Failure {
            vk_result: e.as_raw(),
            ..Failure::new(GranaryResult::GRANARY_ERROR_VULKAN, format!("{function}: {e:?}"))
        })?;
    // SAFETY: a Vulkan 1.3 instance that the application keeps alive until every loader made
    // over it is destroyed (the caller's promise, stated in `granary_loader_create`).
    let driver = unsafe { Driver::borrowed(&instance) };
    let info = driver.physical_device(d.physical_device)?;
    let enabled = OpenOptions { pipeline_binaries, libraries, features, ..OpenOptions::default() };
    log(
        GRANARY_LOG_INFO,
        &format!(
            "{function}: device '{}': pipeline binaries {}, graphics pipeline libraries {}, allocation callbacks {}, \
             features: {}",
            info.identity.device_name,
            if pipeline_binaries { "on" } else { "off" },
            if libraries { "on" } else { "off" },
            if allocator.is_some() { "the application's" } else { "none" },
            features
        ),
    );
    // SAFETY: `device` was created from `info.handle` of this instance with at least what
    // `enabled` says (the caller's promise: the flags, names and feature structures it gave),
    // and outlives the `Gpu` and what is made from it (the caller's promise). `allocator` was
    // checked above to have the callbacks Vulkan requires; that they are thread-safe and stay
    // valid until every loader and warm-up made over the device is destroyed is the caller's
    // promise (`GranaryVulkanDevice::allocator`, `granary_loader_create`).
    Ok(unsafe { Gpu::borrowed_with_allocator(driver, info, &device, enabled, allocator.as_ref())? })
}
