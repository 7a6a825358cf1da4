//! Attachment formats of a native pipeline are checked against the device's format features
//! before any driver call (`check_native`): a blended colour attachment whose format cannot
//! blend (`VUID-VkGraphicsPipelineCreateInfo-renderPass-06041`/`-06062`), a colour format the
//! device cannot render to (`-06582`), a depth format without depth attachment support
//! (`-06587`), each refused with the field, the format and the device named. Integer formats
//! never blend and compressed ones are never attachments, so the cases hold on every device.
//!
//! Without a driver the test prints `SKIPPED` (a failure under `GRANARY_REQUIRE_VULKAN=1`).

mod support;

use granary_archive::native::*;
use granary_archive::vulkan::{check_native, select_device, Driver, Gpu, OpenOptions};
use granary_archive::ShaderStage;

const R8G8B8A8_UNORM: u32 = 37;
const R32_UINT: u32 = 98;
const BC1_RGB_UNORM_BLOCK: u32 = 131;
const D32_SFLOAT: u32 = 126;

/// A fragment output writing `format` to colour attachment 0 with dynamic rendering, blended
/// or not, and a depth attachment of `depth`.
fn output(format: u32, blend: bool, depth: u32) -> NativePipeline {
    NativePipeline {
        stages: vec![StageState::default(); 2],
        graphics: Some(GraphicsState {
            color_blend_state: Some(ColorBlendState {
                attachment_count: 1,
                attachments: vec![ColorBlendAttachment {
                    blend_enable: blend,
                    src_color_blend_factor: 1,
                    color_write_mask: 15,
                    ..Default::default()
                }],
                ..Default::default()
            }),
            rendering: Some(RenderingState {
                color_attachment_formats: vec![format],
                depth_attachment_format: depth,
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn attachment_formats_the_device_cannot_render_or_blend_are_refused_before_the_driver() {
    let driver = match Driver::load() {
        Ok(d) => d,
        Err(e) => return support::no_driver(e),
    };
    let info = select_device(driver.physical_devices().expect("devices"), None).expect("a device");
    let gpu = Gpu::open(driver, info, OpenOptions::default()).expect("open the device");
    let stages = [ShaderStage::Vertex, ShaderStage::Fragment];
    let check = |p: &NativePipeline| check_native(&gpu, p, &stages);

    check(&output(R8G8B8A8_UNORM, true, D32_SFLOAT)).expect("RGBA8 blends and D32 is a depth format everywhere");
    check(&output(R32_UINT, false, 0)).expect("an integer colour attachment, not blended");

    let e = check(&output(R32_UINT, true, 0)).unwrap_err();
    assert!(
        e.contains("colorBlendState.pAttachments[0].blendEnable")
            && e.contains("format 98")
            && e.contains("COLOR_ATTACHMENT_BLEND")
            && e.contains(&gpu.info.identity.device_name),
        "{e}"
    );
    let e = check(&output(BC1_RGB_UNORM_BLOCK, false, 0)).unwrap_err();
    assert!(e.contains("pColorAttachmentFormats[0] is format 131") && e.contains("no COLOR_ATTACHMENT "), "{e}");
    let e = check(&output(R8G8B8A8_UNORM, false, R8G8B8A8_UNORM)).unwrap_err();
    assert!(e.contains("depthAttachmentFormat is format 37") && e.contains("DEPTH_STENCIL_ATTACHMENT"), "{e}");
}
