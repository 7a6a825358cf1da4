//! Errors of the Vulkan layer (loading, devices, driver calls).

use vulkanalia::vk;

/// Why a Vulkan operation failed.
///
/// New variants may be added: match with a wildcard arm. [`result`](Self::result) gives the
/// driver's `VkResult` where a call returned one.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum VulkanError {
    /// No Vulkan loader library could be opened (no driver installed).
    NoLoader {
        /// The library name tried.
        library: &'static str,
        /// The loader's message.
        reason: String,
    },
    /// The loader found no Vulkan driver (ICD) for this machine.
    NoDriver,
    /// A Vulkan call returned an error code, or granary refused to make it (then `result` is
    /// `None` and `code` says why).
    Call {
        /// The Vulkan command.
        call: &'static str,
        /// The driver's result code, where it returned one.
        result: Option<vk::Result>,
        /// The result code's name (`ERROR_OUT_OF_DEVICE_MEMORY`), or why granary did not call.
        code: String,
    },
    /// `--device` named no device.
    NoSuchDevice {
        /// What was asked for.
        wanted: String,
        /// What exists (index: name).
        available: String,
    },
    /// Pipeline-cache data whose `VkPipelineCacheHeaderVersionOne` does not match this device
    /// (refused before `vkCreatePipelineCache`).
    CacheHeader {
        /// The field that differs, with both values (`"vendorID 0x1002, this device's is …"`).
        why: String,
    },
    /// The device lacks something granary's backend needs.
    Unsupported {
        /// The device's name.
        device: String,
        /// What is missing.
        message: String,
    },
    /// Validation was asked for
    /// ([`DriverOptions::validation`](super::validation::DriverOptions::validation)) but the
    /// Khronos validation layer, or the `VK_EXT_debug_utils` extension its messages come
    /// through, is not installed.
    NoValidationLayer {
        /// What is missing: the layer's or the extension's name.
        missing: &'static str,
    },
}

impl std::fmt::Display for VulkanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VulkanError::NoLoader { library, reason } => write!(
                f,
                "no Vulkan loader ({library}): {reason}. Install one (Debian: `apt-get install libvulkan1 \
                 mesa-vulkan-drivers` for the CPU driver lavapipe)"
            ),
            VulkanError::NoDriver => f.write_str(
                "the Vulkan loader found no driver (VK_ERROR_INCOMPATIBLE_DRIVER). Install one (Debian: \
                 `apt-get install mesa-vulkan-drivers` for the CPU driver lavapipe) or point VK_DRIVER_FILES at \
                 a driver's ICD JSON file",
            ),
            VulkanError::Call { call, code, .. } => write!(f, "{call} failed: {code}"),
            VulkanError::NoSuchDevice { wanted, available } => {
                write!(f, "no Vulkan device matches '{wanted}'; devices: {available}")
            }
            VulkanError::Unsupported { device, message } => write!(f, "device '{device}': {message}"),
            VulkanError::CacheHeader { why } => {
                write!(f, "pipeline-cache data is not for this device (not handed to the driver): {why}")
            }
            VulkanError::NoValidationLayer { missing } => write!(
                f,
                "validation needs {missing}, which the Vulkan loader does not find. Install the Khronos \
                 validation layer (Debian: `apt-get install vulkan-validationlayers`) or add the folder of \
                 its layer JSON file to VK_LAYER_PATH"
            ),
        }
    }
}

impl std::error::Error for VulkanError {}

impl VulkanError {
    /// A failed call: `code` is the driver's result (`vk::Result`, `vk::ErrorCode`) or why
    /// granary did not make it (a string).
    pub(crate) fn call(call: &'static str, code: impl CallCode) -> Self {
        let (result, code) = code.parts();
        VulkanError::Call { call, result, code }
    }

    /// The driver's `VkResult`, where a call returned one (`None` for every other failure).
    pub fn result(&self) -> Option<vk::Result> {
        match self {
            VulkanError::Call { result, .. } => *result,
            VulkanError::NoDriver => Some(vk::Result::ERROR_INCOMPATIBLE_DRIVER),
            _ => None,
        }
    }
}

/// What a failed call's code may be: the driver's result, or granary's reason for not calling.
pub(crate) trait CallCode {
    /// The result, if the driver returned one, and the text for the message.
    fn parts(self) -> (Option<vk::Result>, String);
}

impl CallCode for vk::Result {
    fn parts(self) -> (Option<vk::Result>, String) {
        (Some(self), format!("{self:?}"))
    }
}

impl CallCode for vk::ErrorCode {
    fn parts(self) -> (Option<vk::Result>, String) {
        (Some(vk::Result::from(self)), format!("{self:?}"))
    }
}

impl CallCode for &str {
    fn parts(self) -> (Option<vk::Result>, String) {
        (None, self.to_string())
    }
}

impl CallCode for String {
    fn parts(self) -> (Option<vk::Result>, String) {
        (None, self)
    }
}
