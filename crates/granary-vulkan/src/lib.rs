#![warn(missing_docs)]
#![forbid(unsafe_code)]
//! granary's Vulkan backend: creates every pipeline of a harvest on a real driver, from all
//! cores, and captures the driver's binaries per device (`VK_KHR_pipeline_binary`), or the
//! driver's `VkPipelineCache` data where that extension is missing.
//!
//! The Vulkan library is loaded at run time (`vulkanalia`'s `libloading` loader), so a
//! program linking this crate starts, and everything that is not Vulkan works, on a machine
//! without a Vulkan driver: only [`VulkanBackend::open`] and [`list_devices`] fail, with
//! [`VulkanError::NoLoader`].
//!
//! Thread safety: [`VulkanBackend`] is `Send + Sync`; see its rustdoc and `granary_archive::vulkan` for
//! which Vulkan calls need external synchronization and how the backend provides it.

mod backend;

pub use backend::{PipelineCapture, VulkanBackend, VulkanOptions};
pub use granary_archive::vulkan::{list_devices, DeviceInfo, VulkanError};
pub use granary_archive::DeviceIdentity;
