//! The Vulkan backend's errors.

/// Why a Vulkan operation failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum VulkanError {
    /// No Vulkan loader library could be opened (no driver installed).
    #[error("no Vulkan loader ({library}): {reason}. Install one (Debian: `apt-get install libvulkan1 mesa-vulkan-drivers` for the CPU driver lavapipe)")]
    NoLoader {
        /// The library name tried.
        library: &'static str,
        /// The loader's message.
        reason: String,
    },
    /// The loader found no Vulkan driver (ICD) for this machine.
    #[error("the Vulkan loader found no driver (VK_ERROR_INCOMPATIBLE_DRIVER). Install one (Debian: `apt-get install mesa-vulkan-drivers` for the CPU driver lavapipe) or point VK_DRIVER_FILES at a driver's ICD JSON file")]
    NoDriver,
    /// A Vulkan call returned an error code.
    #[error("{call} failed: {code}")]
    Call {
        /// The Vulkan command.
        call: &'static str,
        /// The result code's name.
        code: String,
    },
    /// `--device` named no device.
    #[error("no Vulkan device matches '{wanted}'; devices: {available}")]
    NoSuchDevice {
        /// What was asked for.
        wanted: String,
        /// What exists (index: name).
        available: String,
    },
    /// The device lacks something granary's backend needs.
    #[error("device '{device}': {message}")]
    Unsupported {
        /// The device's name.
        device: String,
        /// What is missing.
        message: String,
    },
}

impl VulkanError {
    /// A failed call.
    pub(crate) fn call(call: &'static str, code: impl std::fmt::Debug) -> Self {
        VulkanError::Call { call, code: format!("{code:?}") }
    }
}
