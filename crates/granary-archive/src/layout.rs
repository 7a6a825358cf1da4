//! A pipeline's resource layout and the slot every resource landed in for each target
//! (docs/FORMAT.md §1.6 "Resource layout blob" is the prose version of this file).
//!
//! The layout is the union over the pipeline's stages of the resources they use (or the
//! layout the pipelines script gave explicitly). The binding map says, per stage, which Metal
//! buffer / texture / sampler index, which HLSL register and space and which GLSL binding
//! each resource of that stage was written with. Both are stored in the archive as one
//! content-addressed blob in a compact little-endian binary form ([`PipelineLayout::encode`] /
//! [`PipelineLayout::decode`]), so an engine reads them without parsing shader text and
//! without a serialization framework.

use crate::types::ShaderStage;

stored_enum!(
    /// What a binding holds (spelled in snake_case by the pipelines script and `granary ls
    /// --json`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum BindingKind: u8 {
        /// `var<uniform>`: a uniform (constant) buffer.
        UniformBuffer = 1 => "uniform_buffer",
        /// `var<storage, read_write>`: a read-write storage buffer.
        StorageBuffer = 2 => "storage_buffer",
        /// `var<storage, read>`: a read-only storage buffer.
        ReadOnlyStorageBuffer = 3 => "read_only_storage_buffer",
        /// A sampled (or depth, or multisampled) texture.
        SampledTexture = 4 => "sampled_texture",
        /// A storage texture that is written (write-only or read-write).
        StorageTexture = 5 => "storage_texture",
        /// A read-only storage texture.
        ReadOnlyStorageTexture = 6 => "read_only_storage_texture",
        /// A filtering or non-filtering sampler.
        Sampler = 7 => "sampler",
        /// A comparison sampler.
        ComparisonSampler = 8 => "comparison_sampler",
        /// A ray-tracing acceleration structure.
        AccelerationStructure = 9 => "acceleration_structure",
        /// An external (video) texture.
        ExternalTexture = 10 => "external_texture",
        /// A Vulkan combined image sampler (GLSL's `sampler2D`; DXC's
        /// `[[vk::combinedImageSampler]]` pairs).
        CombinedImageSampler = 11 => "combined_image_sampler",
        /// A uniform texel buffer (HLSL's `Buffer<T>`).
        UniformTexelBuffer = 12 => "uniform_texel_buffer",
        /// A storage texel buffer (HLSL's `RWBuffer<T>`).
        StorageTexelBuffer = 13 => "storage_texel_buffer",
        /// A subpass input attachment.
        InputAttachment = 14 => "input_attachment",
    }
);

/// A set of shader stages (bit `1 << stage as u16`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StageMask(pub u16);

impl StageMask {
    /// Every valid bit (one per [`ShaderStage`]).
    pub const ALL: u16 = (1 << ShaderStage::ALL.len()) - 1;
    /// The set holding only `stage`.
    pub fn of(stage: ShaderStage) -> Self {
        StageMask(1 << stage as u16)
    }
    /// Whether `stage` is in the set.
    pub fn contains(self, stage: ShaderStage) -> bool {
        self.0 & (1 << stage as u16) != 0
    }
    /// The union.
    pub fn union(self, other: StageMask) -> Self {
        StageMask(self.0 | other.0)
    }
    /// The stages in the set, in stage order.
    pub fn stages(self) -> impl Iterator<Item = ShaderStage> {
        ShaderStage::ALL.into_iter().filter(move |s| self.contains(*s))
    }
    /// Whether only stage bits are set.
    pub fn is_valid(self) -> bool {
        self.0 & !Self::ALL == 0
    }
    /// The low byte (the eight stages of format version 6) and the high byte (the ray-tracing
    /// stages), as the layout blob stores them (docs/FORMAT.md §1.6).
    fn bytes(self) -> [u8; 2] {
        self.0.to_le_bytes()
    }
}

// Fourteen stages, one bit each. The low byte holds the eight graphics and compute stages
// (every value of it valid, as in format version 6); the high byte, stored where version 6
// wrote a zero padding byte, holds the six ray-tracing stages, so a layout without them
// encodes exactly as before.
const _: () = assert!(StageMask::ALL == 0x3FFF && ShaderStage::ALL.len() == 14);

/// One binding of a bind group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LayoutBinding {
    /// Bind group (`@group`).
    pub group: u32,
    /// Binding within the group (`@binding`).
    pub binding: u32,
    /// What it holds.
    pub kind: BindingKind,
    /// `0` for a single resource, `n` for a `binding_array<_, n>`, `u32::MAX` for an unsized
    /// binding array.
    pub count: u32,
    /// The stages that use it.
    pub visibility: StageMask,
}

/// The immediate-data (push-constant) block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Immediates {
    /// Size in bytes.
    pub size: u32,
    /// The stages that use it.
    pub visibility: StageMask,
}

stored_enum!(
    /// A Metal argument table (spelled as its attribute: `buffer`, `texture`, `sampler`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum MslClass: u8 {
        /// `[[buffer(n)]]`.
        Buffer = 0 => "buffer",
        /// `[[texture(n)]]`.
        Texture = 1 => "texture",
        /// `[[sampler(n)]]`.
        Sampler = 2 => "sampler",
    }
);

/// Where one resource of one stage landed, for every source target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SlotAssignment {
    /// Bind group.
    pub group: u32,
    /// Binding.
    pub binding: u32,
    /// Metal argument table.
    pub msl_class: MslClass,
    /// Metal index in that table.
    pub msl_index: u8,
    /// HLSL register class: `b'b'`, `b't'`, `b'u'`, or `b's'` (a sampler: `register` is then
    /// its index in the group's sampler index buffer, see docs/FORMAT.md).
    pub hlsl_class: u8,
    /// HLSL register number.
    pub hlsl_register: u16,
    /// HLSL register space.
    pub hlsl_space: u8,
    /// GLSL `layout(binding = n)`; `None` for samplers (GLSL combines them with the texture).
    pub glsl_binding: Option<u8>,
}

/// The binding map of one stage.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StageBindingMap {
    /// The stage.
    pub stage: ShaderStage,
    /// One assignment per resource the stage uses, in (group, binding) order.
    pub slots: Vec<SlotAssignment>,
    /// Metal buffer index of the immediate-data block, if the stage uses one.
    pub msl_immediates_buffer: Option<u8>,
    /// Metal buffer index of the buffer-sizes buffer, if the stage needs one (runtime-sized
    /// arrays in storage buffers).
    pub msl_sizes_buffer: Option<u8>,
    /// HLSL register space of the immediate-data block (always register `b0` of that space),
    /// if the stage uses one.
    pub hlsl_immediates_space: Option<u8>,
}

/// A pipeline's merged resource layout and its per-stage binding maps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PipelineLayout {
    /// Bindings in (group, binding) order.
    pub bindings: Vec<LayoutBinding>,
    /// The immediate-data block, if any.
    pub immediates: Option<Immediates>,
    /// Binding maps, one per stage, in pipeline stage order.
    pub stages: Vec<StageBindingMap>,
}

/// Magic of an encoded layout.
pub const LAYOUT_MAGIC: [u8; 4] = *b"GLY1";
const HEAD: usize = 20;
const BINDING: usize = 16;
const STAGE_HEAD: usize = 8;
const SLOT: usize = 16;
const NONE8: u8 = 0xFF;

/// Why layout bytes were refused (offset relative to the layout blob).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutError {
    /// Byte offset within the layout blob.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "resource layout, byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for LayoutError {}

impl PipelineLayout {
    /// The binding `(group, binding)`, if the layout has it.
    pub fn binding(&self, group: u32, binding: u32) -> Option<&LayoutBinding> {
        self.bindings.iter().find(|b| b.group == group && b.binding == binding)
    }

    /// The binding map of `stage`, if the pipeline has that stage.
    pub fn stage(&self, stage: ShaderStage) -> Option<&StageBindingMap> {
        self.stages.iter().find(|s| s.stage == stage)
    }

    /// The canonical bytes (docs/FORMAT.md §1.6).
    pub fn encode(&self) -> Vec<u8> {
        let slots: usize = self.stages.iter().map(|s| s.slots.len()).sum();
        let mut o =
            Vec::with_capacity(HEAD + BINDING * self.bindings.len() + STAGE_HEAD * self.stages.len() + SLOT * slots);
        o.extend_from_slice(&LAYOUT_MAGIC);
        o.extend_from_slice(&(self.bindings.len() as u32).to_le_bytes());
        o.extend_from_slice(&(self.stages.len() as u32).to_le_bytes());
        let (size, vis) = self.immediates.map(|i| (i.size, i.visibility.bytes())).unwrap_or((0, [0, 0]));
        o.extend_from_slice(&size.to_le_bytes());
        o.extend_from_slice(&[vis[0], u8::from(self.immediates.is_some()), vis[1], 0]);
        for b in &self.bindings {
            o.extend_from_slice(&b.group.to_le_bytes());
            o.extend_from_slice(&b.binding.to_le_bytes());
            o.extend_from_slice(&b.count.to_le_bytes());
            let vis = b.visibility.bytes();
            o.extend_from_slice(&[b.kind as u8, vis[0], vis[1], 0]);
        }
        for s in &self.stages {
            o.extend_from_slice(&[
                s.stage as u8,
                s.msl_immediates_buffer.unwrap_or(NONE8),
                s.msl_sizes_buffer.unwrap_or(NONE8),
                u8::from(s.hlsl_immediates_space.is_some()),
            ]);
            o.extend_from_slice(&(s.slots.len() as u16).to_le_bytes());
            o.push(s.hlsl_immediates_space.unwrap_or(0));
            o.push(0);
            for a in &s.slots {
                o.extend_from_slice(&a.group.to_le_bytes());
                o.extend_from_slice(&a.binding.to_le_bytes());
                o.extend_from_slice(&[a.msl_class as u8, a.msl_index, a.hlsl_class, a.hlsl_space]);
                o.extend_from_slice(&a.hlsl_register.to_le_bytes());
                o.extend_from_slice(&[a.glsl_binding.unwrap_or(NONE8), 0]);
            }
        }
        o
    }

    /// Parses bytes written by [`encode`](Self::encode); refuses anything else (wrong magic,
    /// unknown kinds or stages, non-zero padding, trailing bytes, lengths that do not add up).
    pub fn decode(b: &[u8]) -> Result<PipelineLayout, LayoutError> {
        let err = |offset: usize, m: &str| LayoutError { offset, message: m.to_string() };
        let u32_at = |o: usize| -> Result<u32, LayoutError> {
            b.get(o..o + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes).ok_or_else(|| err(o, "cut short"))
        };
        if b.len() < HEAD || b[..4] != LAYOUT_MAGIC {
            return Err(err(0, "bad magic or cut short"));
        }
        let nb = u32_at(4)? as usize;
        let ns = u32_at(8)? as usize;
        if ns > crate::format::MAX_STAGES_PER_PIPELINE as usize {
            return Err(err(8, "too many stages"));
        }
        if nb > b.len() / BINDING {
            return Err(err(4, "binding count exceeds the bytes"));
        }
        let size = u32_at(12)?;
        // A stage mask: its low byte (every bit a stage) and its high byte (the ray-tracing
        // stages; other bits refused).
        let mask = |offset: usize, lo: u8, hi: u8| {
            let m = StageMask(u16::from_le_bytes([lo, hi]));
            if m.is_valid() {
                Ok(m)
            } else {
                Err(err(offset, "unknown stage bits in a stage mask"))
            }
        };
        let immediates = match (b[17], b[18], b[19]) {
            (0, 0, 0) if size == 0 && b[16] == 0 => None,
            (1, hi, 0) => Some(Immediates { size, visibility: mask(18, b[16], hi)? }),
            _ => return Err(err(16, "bad immediates record")),
        };
        let mut at = HEAD;
        let mut bindings = Vec::with_capacity(nb);
        for _ in 0..nb {
            let r = b.get(at..at + BINDING).ok_or_else(|| err(at, "cut short"))?;
            let kind = BindingKind::from_u8(r[12]).ok_or_else(|| err(at + 12, "unknown binding kind"))?;
            if r[15] != 0 {
                return Err(err(at + 15, "padding is not zero"));
            }
            bindings.push(LayoutBinding {
                group: u32_at(at)?,
                binding: u32_at(at + 4)?,
                count: u32_at(at + 8)?,
                kind,
                visibility: mask(at + 14, r[13], r[14])?,
            });
            at += BINDING;
        }
        if bindings.windows(2).any(|w| (w[0].group, w[0].binding) >= (w[1].group, w[1].binding)) {
            return Err(err(HEAD, "bindings are not sorted and unique"));
        }
        let mut stages = Vec::with_capacity(ns);
        for _ in 0..ns {
            let r = b.get(at..at + STAGE_HEAD).ok_or_else(|| err(at, "cut short"))?;
            let stage = ShaderStage::from_u32(r[0] as u32).ok_or_else(|| err(at, "unknown stage"))?;
            let opt = |v: u8| (v != NONE8).then_some(v);
            let hlsl_immediates_space = match r[3] {
                0 if r[6] == 0 => None,
                1 => Some(r[6]),
                _ => return Err(err(at + 3, "bad HLSL immediates flag")),
            };
            if r[7] != 0 {
                return Err(err(at + 7, "padding is not zero"));
            }
            let n = u16::from_le_bytes([r[4], r[5]]) as usize;
            let (msl_immediates_buffer, msl_sizes_buffer) = (opt(r[1]), opt(r[2]));
            at += STAGE_HEAD;
            if n > (b.len() - at.min(b.len())) / SLOT {
                return Err(err(at, "slot count exceeds the bytes"));
            }
            let mut slots = Vec::with_capacity(n);
            for _ in 0..n {
                let r = b.get(at..at + SLOT).ok_or_else(|| err(at, "cut short"))?;
                let msl_class = MslClass::from_u8(r[8]).ok_or_else(|| err(at + 8, "unknown Metal class"))?;
                if !matches!(r[10], b'b' | b't' | b'u' | b's') || r[15] != 0 {
                    return Err(err(at + 10, "unknown HLSL register class or padding"));
                }
                slots.push(SlotAssignment {
                    group: u32_at(at)?,
                    binding: u32_at(at + 4)?,
                    msl_class,
                    msl_index: r[9],
                    hlsl_class: r[10],
                    hlsl_space: r[11],
                    hlsl_register: u16::from_le_bytes([r[12], r[13]]),
                    glsl_binding: opt(r[14]),
                });
                at += SLOT;
            }
            stages.push(StageBindingMap {
                stage,
                slots,
                msl_immediates_buffer,
                msl_sizes_buffer,
                hlsl_immediates_space,
            });
        }
        if at != b.len() {
            return Err(err(at, "trailing bytes"));
        }
        Ok(PipelineLayout { bindings, immediates, stages })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> PipelineLayout {
        PipelineLayout {
            bindings: vec![
                LayoutBinding {
                    group: 0,
                    binding: 0,
                    kind: BindingKind::UniformBuffer,
                    count: 0,
                    visibility: StageMask(3),
                },
                LayoutBinding { group: 1, binding: 2, kind: BindingKind::Sampler, count: 4, visibility: StageMask(2) },
            ],
            immediates: Some(Immediates { size: 16, visibility: StageMask(1) }),
            stages: vec![StageBindingMap {
                stage: ShaderStage::Vertex,
                slots: vec![SlotAssignment {
                    group: 0,
                    binding: 0,
                    msl_class: MslClass::Buffer,
                    msl_index: 0,
                    hlsl_class: b'b',
                    hlsl_register: 0,
                    hlsl_space: 0,
                    glsl_binding: Some(0),
                }],
                msl_immediates_buffer: Some(1),
                msl_sizes_buffer: None,
                hlsl_immediates_space: Some(254),
            }],
        }
    }

    #[test]
    fn round_trips_and_refuses_damage() {
        let l = sample();
        let bytes = l.encode();
        assert_eq!(PipelineLayout::decode(&bytes), Ok(l));
        for cut in 0..bytes.len() {
            assert!(PipelineLayout::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(PipelineLayout::decode(&extra).is_err());
        let mut bad_kind = bytes.clone();
        bad_kind[HEAD + 12] = 99;
        assert!(PipelineLayout::decode(&bad_kind).is_err());
        assert_eq!(PipelineLayout::decode(&PipelineLayout::default().encode()), Ok(PipelineLayout::default()));
    }

    #[test]
    fn every_stage_bit_and_the_native_binding_kinds_are_valid() {
        // Stages 0..=13 (the ray-tracing ones in the mask's high byte); binding kinds run 1..=14.
        let mut l = sample();
        l.bindings[0].visibility = StageMask(StageMask::ALL);
        l.bindings[1].visibility = StageMask::of(ShaderStage::Callable).union(StageMask::of(ShaderStage::Vertex));
        l.bindings[1].kind = BindingKind::InputAttachment;
        l.immediates = Some(Immediates { size: 16, visibility: StageMask::of(ShaderStage::Mesh) });
        l.stages[0].stage = ShaderStage::Task;
        let bytes = l.encode();
        assert_eq!(PipelineLayout::decode(&bytes), Ok(l));
        for kind in [0u8, 15, 255] {
            let mut b = bytes.clone();
            b[HEAD + BINDING + 12] = kind;
            assert_eq!(PipelineLayout::decode(&b).unwrap_err().message, "unknown binding kind", "kind {kind}");
        }
        let mut b = bytes.clone();
        b[HEAD + BINDING * 2] = 14; // stage 14 does not exist
        assert_eq!(PipelineLayout::decode(&b).unwrap_err().message, "unknown stage");
        let mut b = bytes.clone();
        b[HEAD + 14] = 0x40; // stage bit 14 does not exist
        assert_eq!(PipelineLayout::decode(&b).unwrap_err().message, "unknown stage bits in a stage mask");
    }

    #[test]
    fn a_mask_without_ray_tracing_stages_encodes_as_format_6_did() {
        // The high byte of a mask sits where version 6 wrote zero padding.
        let l = sample();
        let bytes = l.encode();
        assert_eq!(&bytes[16..20], &[1, 1, 0, 0]);
        assert_eq!(&bytes[HEAD + 12..HEAD + 16], &[BindingKind::UniformBuffer as u8, 3, 0, 0]);
    }
}
