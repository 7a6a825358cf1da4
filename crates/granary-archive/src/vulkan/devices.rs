//! `granary devices`: every Vulkan device with the identity that decides whether a binary is
//! valid on it, and what it supports.

use super::device::{Gpu, OpenOptions};
use super::error::VulkanError;
use super::instance::{api_string, Driver, PhysicalInfo, Supports};
use crate::device::DeviceIdentity;

/// One Vulkan device as `granary devices` lists it.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// Index in the loader's order (what `--device N` takes).
    pub index: usize,
    /// The identity binaries are checked against. Its `binary_global_key` is filled where the
    /// device has `VK_KHR_pipeline_binary` (the device is opened briefly to read it).
    pub identity: DeviceIdentity,
    /// What it supports of what granary uses.
    pub supports: Supports,
    /// Device API version as `major.minor.patch`.
    pub api: String,
    /// MSAA sample counts usable for colour and depth attachments (e.g. `[1, 4]`).
    pub sample_counts: Vec<u32>,
}

/// The identity of a physical device with the given global key.
pub fn identity_of(info: &PhysicalInfo, global_key: &[u8]) -> DeviceIdentity {
    DeviceIdentity { binary_global_key: global_key.to_vec(), ..info.identity.clone() }
}

/// Lists every Vulkan device. Fails only when no loader can be opened or the instance cannot
/// be created; a device that cannot be opened to read its global key is listed without one.
pub fn list_devices() -> Result<Vec<DeviceInfo>, VulkanError> {
    let driver = Driver::load()?;
    let mut out = Vec::new();
    for (index, info) in driver.physical_devices()?.into_iter().enumerate() {
        let key = if info.supports.pipeline_binaries && info.supports.dynamic_rendering {
            Gpu::open(driver.clone(), info.clone(), OpenOptions { libraries: false, ..OpenOptions::default() })
                .map(|g| g.global_key().to_vec())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        out.push(DeviceInfo {
            index,
            identity: identity_of(&info, &key),
            supports: info.supports,
            api: api_string(info.identity.api_version),
            sample_counts: (0..7).map(|i| 1u32 << i).filter(|n| info.sample_counts & n != 0).collect(),
        });
    }
    Ok(out)
}

/// Picks a device: `None` → the first; a number → that index; otherwise the first whose name
/// contains the text (case-insensitive).
pub fn select_device(devices: Vec<PhysicalInfo>, wanted: Option<&str>) -> Result<PhysicalInfo, VulkanError> {
    let available = || {
        devices
            .iter()
            .enumerate()
            .map(|(i, d)| format!("{i}: {}", d.identity.device_name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let found = match wanted {
        None => devices.first().cloned(),
        Some(w) => match w.parse::<usize>() {
            Ok(i) => devices.get(i).cloned(),
            Err(_) => {
                let lw = w.to_lowercase();
                devices.iter().find(|d| d.identity.device_name.to_lowercase().contains(&lw)).cloned()
            }
        },
    };
    found.ok_or_else(|| VulkanError::NoSuchDevice {
        wanted: wanted.unwrap_or("the first device").to_string(),
        available: if devices.is_empty() { "none".to_string() } else { available() },
    })
}
