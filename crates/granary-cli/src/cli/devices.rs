//! `granary devices`.

use granary_vulkan::{list_devices, DeviceInfo};

#[derive(clap::Args)]
#[command(after_help = "\
Binaries captured on one device are valid only on a device whose identity is equal in every
field listed here (vendor, device, driver id, version and info, pipeline-cache UUID, the
pipeline-binary global key, and the core features enabled on the device: a harvest enables
every one granary knows that the device supports, listed under features). `granary harvest --backend vulkan --device N` picks a device by
this index or by part of its name.")]
pub struct DevicesArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// "yes" or "no".
fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// A device as JSON (identity fields spelled out, byte strings in hex).
pub(crate) fn device_json(d: &DeviceInfo) -> serde_json::Value {
    let id = &d.identity;
    serde_json::json!({
        "index": d.index,
        "device_name": id.device_name,
        "vendor_id": id.vendor_id,
        "device_id": id.device_id,
        "driver_id": id.driver_id,
        "driver_name": id.driver_name,
        "driver_info": id.driver_info,
        "driver_version": id.driver_version,
        "api_version": d.api,
        "sample_counts": d.sample_counts,
        "features": id.features.names(),
        "pipeline_cache_uuid": hex(&id.pipeline_cache_uuid),
        "pipeline_binary_global_key": if id.binary_global_key.is_empty() { None } else { Some(hex(&id.binary_global_key)) },
        "identity": id.describe(),
        "supports": {
            "pipeline_binaries": d.supports.pipeline_binaries,
            "internal_cache_control": d.supports.internal_cache_control,
            "graphics_pipeline_library": d.supports.graphics_pipeline_library,
            "fast_linking": d.supports.fast_linking,
            "dynamic_rendering": d.supports.dynamic_rendering,
            // `VkPipelineCache` data: every device has it.
            "cache_data": true,
        },
        "captures": if d.supports.pipeline_binaries { "pipeline-binaries" } else { "cache-data" },
    })
}

pub fn run(a: DevicesArgs) -> anyhow::Result<i32> {
    let devices = list_devices()?;
    if a.json {
        super::output::print_json(
            &serde_json::json!({"devices": devices.iter().map(device_json).collect::<Vec<_>>()}),
        )?;
        return Ok(0);
    }
    if devices.is_empty() {
        outln!("no Vulkan devices");
        return Ok(0);
    }
    for d in &devices {
        let id = &d.identity;
        outln!("{}: {}", d.index, id.device_name);
        outln!("    vendor 0x{:04x}, device 0x{:04x}, Vulkan {}", id.vendor_id, id.device_id, d.api);
        outln!(
            "    driver {} ({}), id {}, version 0x{:08x}",
            id.driver_name,
            id.driver_info,
            id.driver_id,
            id.driver_version
        );
        outln!("    pipeline cache UUID {}", hex(&id.pipeline_cache_uuid));
        outln!("    sample counts {:?}", d.sample_counts);
        outln!("    core features enabled for pipelines: {}", id.features);
        if !id.binary_global_key.is_empty() {
            outln!("    pipeline binary global key {}", hex(&id.binary_global_key));
        }
        outln!(
            "    pipeline binaries: {}; graphics pipeline libraries: {}{}; cache data: yes",
            yes_no(d.supports.pipeline_binaries),
            yes_no(d.supports.graphics_pipeline_library),
            if d.supports.graphics_pipeline_library {
                if d.supports.fast_linking {
                    " (fast linking)"
                } else {
                    " (no fast linking)"
                }
            } else {
                ""
            }
        );
        outln!(
            "    harvest captures: {}",
            if d.supports.pipeline_binaries {
                "driver binaries (VK_KHR_pipeline_binary)"
            } else {
                "VkPipelineCache data"
            }
        );
    }
    Ok(0)
}
