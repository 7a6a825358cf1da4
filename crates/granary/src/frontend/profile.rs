//! Device profiles: for each target, the language version granary writes and the naga
//! validation capabilities a shader may use.
//!
//! A profile names the device family an archive is built for. Each profile sets all four
//! targets (a profile named after one API keeps the `default` settings for the others), so any
//! `--targets` works with any `--profile`. A library is parsed and validated once with the
//! union of the requested targets' capabilities; each stage function is then checked against
//! every requested target's own set, and a shader that needs a capability outside it fails
//! for that target with naga's message naming the capability.
//!
//! The profile's name and every resolved setting are part of the writer options text
//! ([`super::targets::target_options_text`]), which is hashed into every stage key and stored
//! in the archive header: archives of different profiles have different keys, and `--resume`,
//! `prune` and `merge` refuse to mix them.
//!
//! The capability sets are granary's reading of each API's baseline (what every device of
//! the family offers), kept deliberately conservative; see the table in the README.

use crate::descriptor::{Target, TargetSet};
use naga::valid::Capabilities as C;

/// One target's settings in a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetProfile {
    /// Language version: SPIR-V `(1, 3)`, MSL `(2, 4)`, HLSL shader model `(6, 0)`, GLSL
    /// `(4, 50)` (desktop `#version 450`).
    pub version: (u8, u8),
    /// What a shader may use on this target.
    pub capabilities: C,
}

/// A named device profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// Its name, as given to `--profile`.
    pub name: &'static str,
    /// One line for `--help` and documentation.
    pub description: &'static str,
    /// The Vulkan environment the SPIR-V is written for (`spirv-val --target-env`).
    pub spirv_env: &'static str,
    /// SPIR-V settings.
    pub spirv: TargetProfile,
    /// MSL settings.
    pub msl: TargetProfile,
    /// HLSL settings.
    pub hlsl: TargetProfile,
    /// GLSL settings.
    pub glsl: TargetProfile,
}

/// Offered by every desktop-class device of every API granary writes for. Immediate data
/// (push constants) is core everywhere: Vulkan push constants, Metal `setBytes` buffers, D3D12
/// root constants, and a plain uniform block in GLSL.
const BASE: C = C::IMMEDIATES
    .union(C::CUBE_ARRAY_TEXTURES)
    .union(C::MULTISAMPLED_SHADING)
    .union(C::EARLY_DEPTH_TEST)
    .union(C::CLIP_DISTANCES)
    .union(C::DUAL_SOURCE_BLENDING)
    .union(C::STORAGE_TEXTURE_16BIT_NORM_FORMATS);
/// Vulkan 1.1 core: multiview and subgroup operations are core (1.1 guarantees subgroups in
/// compute; granary accepts naga's subgroup capability for every stage but the vertex stage).
const VULKAN_1_1: C = BASE.union(C::CULL_DISTANCE).union(C::MULTIVIEW).union(C::SUBGROUP).union(C::SUBGROUP_BARRIER);
/// Metal 2.4 on macOS (the writer's previous fixed version): half precision and SIMD-group
/// functions.
const METAL_2_4: C = BASE.union(C::SUBGROUP).union(C::SUBGROUP_BARRIER).union(C::SHADER_FLOAT16);
/// Metal 3 on Apple silicon: adds 64-bit integers and primitive IDs.
const METAL_3_APPLE: C = METAL_2_4.union(C::SHADER_INT64).union(C::PRIMITIVE_INDEX);
/// D3D12 shader model 6.0: wave intrinsics, cull distances, primitive IDs.
const D3D12_SM_6_0: C = BASE.union(C::CULL_DISTANCE).union(C::PRIMITIVE_INDEX).union(C::SUBGROUP);
/// Desktop GLSL 4.50: doubles are core; no 16-bit floats, no subgroups without extensions.
const GLSL_450: C = BASE.union(C::CULL_DISTANCE).union(C::PRIMITIVE_INDEX).union(C::FLOAT64);

const DEFAULT_SPIRV: TargetProfile = TargetProfile { version: (1, 3), capabilities: VULKAN_1_1 };
const DEFAULT_MSL: TargetProfile = TargetProfile { version: (2, 4), capabilities: METAL_2_4 };
const DEFAULT_HLSL: TargetProfile = TargetProfile { version: (6, 0), capabilities: D3D12_SM_6_0 };
const DEFAULT_GLSL: TargetProfile = TargetProfile { version: (4, 50), capabilities: GLSL_450 };

/// The profile used when none is named.
pub const DEFAULT_PROFILE: &str = "default";

/// A profile that keeps the `default` settings for every target (SPIR-V for Vulkan 1.1):
/// the profiles below name only what they change.
const fn with_defaults(name: &'static str, description: &'static str) -> Profile {
    Profile {
        name,
        description,
        spirv_env: "vulkan1.1",
        spirv: DEFAULT_SPIRV,
        msl: DEFAULT_MSL,
        hlsl: DEFAULT_HLSL,
        glsl: DEFAULT_GLSL,
    }
}

/// Every profile granary knows, `default` first.
pub static PROFILES: &[Profile] = &[
    with_defaults(DEFAULT_PROFILE, "SPIR-V 1.3 for Vulkan 1.1, MSL 2.4, HLSL shader model 6.0, GLSL 450"),
    with_defaults("vulkan1.1", "the Vulkan 1.1 baseline: SPIR-V 1.3 (other targets as default)"),
    Profile {
        spirv_env: "vulkan1.3",
        spirv: TargetProfile { version: (1, 6), capabilities: VULKAN_1_1 },
        ..with_defaults("vulkan1.3", "the Vulkan 1.3 baseline: SPIR-V 1.6 (other targets as default)")
    },
    Profile {
        msl: TargetProfile { version: (3, 0), capabilities: METAL_3_APPLE },
        ..with_defaults("metal3-apple", "Metal 3 on Apple silicon: MSL 3.0 (other targets as default)")
    },
    with_defaults("d3d12-sm6.0", "D3D12 shader model 6.0 (other targets as default)"),
];

impl Profile {
    /// The profile called `name`, or a message listing the known ones.
    pub fn named(name: &str) -> Result<&'static Profile, String> {
        PROFILES.iter().find(|p| p.name == name).ok_or_else(|| {
            format!(
                "unknown profile '{name}' (known: {})",
                PROFILES.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
            )
        })
    }

    /// The `default` profile.
    pub fn default_profile() -> &'static Profile {
        &PROFILES[0]
    }

    /// The settings for `target`.
    pub fn target(&self, target: Target) -> &TargetProfile {
        match target {
            Target::Spirv => &self.spirv,
            Target::Msl => &self.msl,
            Target::Hlsl => &self.hlsl,
            Target::Glsl => &self.glsl,
        }
    }

    /// The union of the capabilities of `targets`: what a library is validated with once.
    pub fn union_capabilities(&self, targets: TargetSet) -> C {
        targets.iter().fold(C::empty(), |c, t| c | self.target(t).capabilities)
    }

    /// The profile as text, for the writer options (hashed into every stage key): the name
    /// and every resolved setting, capabilities as naga's bits in hex.
    pub fn options_text(&self) -> String {
        let t = |p: &TargetProfile| format!("{}.{}+caps={:#x}", p.version.0, p.version.1, p.capabilities.bits());
        format!(
            "profile={};spirv-env={};spirv-version={};msl-version={};hlsl-sm={};glsl-version={}",
            self.name,
            self.spirv_env,
            t(&self.spirv),
            t(&self.msl),
            t(&self.hlsl),
            t(&self.glsl)
        )
    }
}

/// The names of the capabilities in `caps` (for messages).
pub fn capability_names(caps: C) -> String {
    let names: Vec<&str> = caps.iter_names().map(|(n, _)| n).collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}
