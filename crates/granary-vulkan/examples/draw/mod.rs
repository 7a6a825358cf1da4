//! Draws with any archived pipeline of the portable form (and dispatches any compute one) into
//! offscreen targets, from inputs made from the pipeline's own reflection, and reads back
//! what it wrote: what `frame_loop` draws with at each pipeline's first use, and what its
//! pixel check compares between a pipeline created from binaries and the same pipeline
//! compiled from SPIR-V.
//!
//! Inputs are deterministic functions of the pipeline (no state carried between draws that
//! are read back):
//! - uniform and storage buffers are filled by type, from the SPIR-V of the stages (spirq's
//!   reflection): floats from a fixed sequence in [0.25, 1.25] (an alpha test's factor passes
//!   often), every matrix the identity (so vertices stay where the vertex buffer puts them),
//!   integers small (0–3: loop counts and indices stay small), a runtime array with 64
//!   elements, padding zero;
//! - vertex buffers by attribute format: floats in [-0.8, 0.8] with `z` 0.5 (every vertex at
//!   depth 0.5, and the depth attachment cleared to a value the pipeline's depth test passes
//!   against: 0 for greater, 1 for less, 0.5 for equal), integers 0–3, normalized formats any
//!   byte;
//! - textures: 16×16 (cube: 6 layers, arrays: 4, 3D: depth 4), texels from the same sequence;
//!   depth textures cleared to 0.5; samplers nearest, clamped (a comparison sampler `LESS`);
//! - colour attachments cleared to (0.1, 0.2, 0.3, 0.4), stencil to 0; 64×64 (or
//!   [`DrawOptions::size`]); 12 vertices (two triangles, each in both windings), 2 instances,
//!   no index buffer; a compute pipeline dispatches one workgroup. With [`DrawOptions::cover`]
//!   the first two components of every `float32` vertex attribute (of up to three
//!   components) make both triangles one that covers the whole target (`link_cost`'s GPU time
//!   is then every pixel's, not a few percent's).
//!
//! Read back: every colour attachment (resolved where multisampled: the average, sample zero
//! for integer formats) and, without colour attachments, the depth aspect (sample zero); for
//! compute, every writable storage buffer and the first layer (or slice) of every storage
//! texture it binds (cleared to zero at the start of each batch). Recorded without its draw
//! call ([`Record::ReadWithoutDrawing`]), the same outputs are what the pipeline starts from:
//! where a draw's outputs equal those, it drew nothing.
//!
//! Not drawable (reported with the reason, not an error): native-form pipelines, texel
//! buffers, input attachments, multisampled textures, storage textures of a format this
//! module does not map, a draw whose buffers need more than 8 MiB. Vulkan lifetime rules:
//! every object here is made from `gpu`'s device and destroyed in `Drop` after the device is
//! idle; a pipeline drawn with must live until the batch's [`Drawer::finish`] returns. One
//! thread records and submits (`Drawer` holds a pointer into its mapped arena, so it is neither
//! `Send` nor `Sync`); its queue is used by nothing else. A batch holds at most 4,096
//! descriptor sets and 32 MiB of buffers (a frame's draws, uploads and read-backs).
//!
//! [`Record::Timed`] draws a graphics pipeline `repeats` times, each in a render pass instance
//! of its own, with a GPU timestamp right before and right after each draw call (`link_cost`).
//!
//! [`example_archive`] is the bundled example compiled with the `none` backend, the archive the
//! examples run on when given none.

use granary::compiler::{Compiler, CompilerOptions};
use granary::script::Script;
use granary_archive::vulkan::vulkanalia::prelude::v1_3::*;
use granary_archive::vulkan::{layout_desc, Gpu, Loaded, SetBinding};
use granary_archive::{Archive, PipelineKind, PipelineRef, Target, WriteEntry};
use granary_archive::{
    BindingKind, CompareFunction, MaybeSpecialized, PipelineLayout, RenderState, StepMode, TextureFormat,
    VertexBufferLayout, VertexFormat,
};
use spirq::ty::{ScalarType, Type};
use std::collections::HashMap;
use std::sync::Arc;

/// Attachment size, unless [`DrawOptions::size`] says otherwise.
const SIZE: u32 = 64;
/// Texture size.
const TEX: u32 = 16;
/// Elements given to a runtime array.
const RUNTIME_ELEMENTS: usize = 64;
/// Bytes of the linear buffer all buffers of one batch come from.
const ARENA: u64 = 32 << 20;
/// Vertices per draw, no index buffer: as a triangle list, two triangles each given twice,
/// once in each winding (so whichever face a pipeline culls, one of each pair is drawn).
const VERTICES: u32 = 12;
/// The attribute values vertex `v` repeats: `[a b c a c b]` per pair of triangles.
fn source_vertex(v: usize) -> usize {
    3 * (v / 6) + [0, 1, 2, 0, 2, 1][v % 6]
}
/// The largest vertex stride drawn here (Vulkan guarantees 2,048).
const MAX_STRIDE: u64 = 4096;
/// Instances per draw.
const INSTANCES: u32 = 2;

/// Why a pipeline cannot be drawn here, or a driver call failed.
pub type Error = Box<dyn std::error::Error>;

/// `r`, its error named after the Vulkan call `what`.
fn call<T>(what: &'static str, r: Result<T, vk::ErrorCode>) -> Result<T, Error> {
    r.map_err(|e| format!("{what}: {e:?}").into())
}

/// The `i`th value of the fixed sequence, in [0, 1).
fn unit(i: u64) -> f32 {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D;
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    (x % 10_000) as f32 / 10_000.0
}

/// The shape of one texture a binding needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct TexShape {
    format: vk::Format,
    view: vk::ImageViewType,
    depth: bool,
    storage: bool,
}

/// What one binding is given.
#[derive(Clone, Debug)]
enum Resource {
    /// A uniform or storage buffer (its bytes in `Plan::buffer_bytes`); whether writable.
    Buffer(bool),
    Texture(TexShape),
    Sampler {
        compare: bool,
    },
    Combined(TexShape),
}

/// A pipeline's draw, prepared once from the archive: what to bind and where to draw.
#[derive(Clone, Debug)]
pub struct Plan {
    compute: bool,
    /// Per non-empty set: its index, bindings (for the set layout) and resources.
    sets: Vec<(u32, Vec<SetBinding>, Vec<Resource>)>,
    push: Option<(u32, vk::ShaderStageFlags)>,
    /// Buffer bytes per binding (layout order), filled by type.
    buffer_bytes: Vec<Vec<u8>>,
    vertex: Vec<Vec<u8>>,
    colors: Vec<vk::Format>,
    /// `(format, has depth, has stencil)`.
    depth: Option<(vk::Format, bool, bool)>,
    samples: vk::SampleCountFlags,
    /// The depth clear value: one the pipeline's depth test passes for depth 0.5.
    clear_depth: f32,
}

/// One draw's read-back bytes, per output in a fixed order.
pub type Readback = Vec<Vec<u8>>;

/// What [`Drawer::draw`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// The draw (or dispatch) only: what a frame does.
    Draw,
    /// A graphics pipeline's draw `repeats` times (at least once), each in a render pass
    /// instance of its own (the targets cleared each time, a full barrier between two), with a
    /// timestamp of the drawer's query pool ([`DrawOptions::timestamps`]) written right before
    /// the draw call, query `first + 2k`, and right after it, query `first + 2k + 1`, both at
    /// `BOTTOM_OF_PIPE` (written once every earlier command is done: the clear and the previous
    /// draw are outside the interval); [`Drawer::timestamps`] reads them once the batch has
    /// finished. The `2 * repeats` queries are reset first, in the same command buffer. Nothing
    /// is read back. A compute plan, or queries past the pool's end, is an error.
    #[allow(dead_code)] // link_cost's (frame_loop draws untimed)
    Timed { first: u32, repeats: u32 },
    /// The draw, then a copy of its outputs.
    DrawAndRead,
    /// Everything but the draw call (targets cleared, resources bound), then the copy: the
    /// outputs as they are when the pipeline draws nothing.
    ReadWithoutDrawing,
}

/// An image with its memory and one view of every layer.
struct Image {
    image: vk::Image,
    view: vk::ImageView,
    memory: vk::DeviceMemory,
}

/// The attachments of one combination of formats and sample count, reused by every draw
/// that has it.
struct Targets {
    colors: Vec<Image>,
    resolves: Vec<Image>,
    depth: Option<Image>,
    /// Multisampled: the depth attachment's single-sample resolve (sample zero).
    depth_resolve: Option<Image>,
}

/// How big the targets are and where the vertices are ([`Drawer::with_options`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrawOptions {
    /// Width and height of every attachment (64).
    pub size: u32,
    /// Every draw covers the whole target: the first two components of every `float32`,
    /// `float32x2` and `float32x3` vertex attribute are a triangle's corners (-1, -1), (3, -1)
    /// and (-1, 3), which with the identity matrices covers clip space (false: corners spread
    /// over [-0.8, 0.8], a few percent of the target each).
    pub cover: bool,
    /// Timestamp queries in the drawer's query pool, for [`Record::Timed`] (0: no pool).
    pub timestamps: u32,
}

impl Default for DrawOptions {
    fn default() -> Self {
        DrawOptions { size: SIZE, cover: false, timestamps: 0 }
    }
}

/// Whether and how queue family 0 (the drawer's) writes timestamps.
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)] // link_cost's, as are `ns`, `Drawer::clock` and `Drawer::timestamps`
pub struct Clock {
    /// `VkQueueFamilyProperties::timestampValidBits` of family 0: 0 when it cannot write them.
    pub valid_bits: u32,
    /// `VkPhysicalDeviceLimits::timestampPeriod`: nanoseconds per tick.
    pub period_ns: f32,
    /// `VkPhysicalDeviceLimits::timestampComputeAndGraphics`: every graphics and compute queue
    /// writes them.
    pub compute_and_graphics: bool,
}

impl Clock {
    /// The ticks from `start` to `end` (read with [`Drawer::timestamps`]) in nanoseconds, the
    /// counter's wrap within its valid bits allowed for.
    #[allow(dead_code)]
    pub fn ns(&self, start: u64, end: u64) -> f64 {
        let mask = if self.valid_bits >= 64 { u64::MAX } else { (1u64 << self.valid_bits) - 1 };
        (end.wrapping_sub(start) & mask) as f64 * f64::from(self.period_ns)
    }
}

/// `gpu`'s timestamp support on queue family 0.
pub fn clock(gpu: &Gpu) -> Clock {
    let i = gpu.raw_instance();
    // SAFETY: `gpu.info.handle` is the physical device `gpu`'s device was created on; both
    // queries only read properties.
    let (limits, families) = unsafe {
        (
            i.get_physical_device_properties(gpu.info.handle).limits,
            i.get_physical_device_queue_family_properties(gpu.info.handle),
        )
    };
    Clock {
        valid_bits: families.first().map_or(0, |f| f.timestamp_valid_bits),
        period_ns: limits.timestamp_period,
        compute_and_graphics: limits.timestamp_compute_and_graphics != 0,
    }
}

/// Draws with archived pipelines on `gpu`'s queue family 0 (the one granary's device has).
pub struct Drawer {
    gpu: Arc<Gpu>,
    options: DrawOptions,
    /// `options.timestamps` timestamp queries (null without).
    queries: vk::QueryPool,
    /// Per query: written by a timed draw of the batch being recorded (`pending`) or of the
    /// last finished batch (`stamped`), so [`timestamps`](Self::timestamps) never waits for a
    /// query no submitted work writes.
    pending: Vec<bool>,
    stamped: Vec<bool>,
    /// Queue family 0's timestamps.
    clock: Clock,
    queue: vk::Queue,
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    descriptors: vk::DescriptorPool,
    memory: vk::PhysicalDeviceMemoryProperties,
    sampler: vk::Sampler,
    compare_sampler: vk::Sampler,
    arena: vk::Buffer,
    arena_memory: vk::DeviceMemory,
    arena_ptr: *mut u8,
    align: u64,
    set_layouts: HashMap<Vec<SetBinding>, vk::DescriptorSetLayout>,
    textures: HashMap<TexShape, Image>,
    targets: HashMap<(Vec<vk::Format>, Option<vk::Format>, u32), Targets>,
    /// The batch being recorded: arena bytes used, read-back ranges per draw.
    used: u64,
    readbacks: Vec<Vec<(u64, u64)>>,
    recording: bool,
    /// Storage textures to clear at the batch's start (they are cleared before every batch).
    storage_cleared: bool,
}

impl Drawer {
    /// Makes the queue, command buffer, samplers and arena (64×64 targets).
    pub fn new(gpu: Arc<Gpu>) -> Result<Drawer, Error> {
        Drawer::with_options(gpu, DrawOptions::default())
    }

    /// [`new`](Self::new) with targets of `options.size` and, with `options.cover`, draws that
    /// cover them.
    pub fn with_options(gpu: Arc<Gpu>, options: DrawOptions) -> Result<Drawer, Error> {
        if options.size == 0 {
            return Err("a target of size 0".into());
        }
        let d = gpu.raw_device();
        // SAFETY: queue family 0, index 0 is the one queue granary's device was created with;
        // every create info below points only at locals that outlive its call.
        unsafe {
            let memory = gpu.raw_instance().get_physical_device_memory_properties(gpu.info.handle);
            let queue = d.get_device_queue(0, 0);
            let pool = call(
                "vkCreateCommandPool",
                d.create_command_pool(
                    &vk::CommandPoolCreateInfo {
                        flags: vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER,
                        queue_family_index: 0,
                        ..Default::default()
                    },
                    None,
                ),
            )?;
            let mut me = Drawer {
                gpu: gpu.clone(),
                options,
                queries: vk::QueryPool::null(),
                pending: vec![false; options.timestamps as usize],
                stamped: vec![false; options.timestamps as usize],
                clock: clock(&gpu),
                queue,
                pool,
                cmd: vk::CommandBuffer::null(),
                fence: vk::Fence::null(),
                descriptors: vk::DescriptorPool::null(),
                memory,
                sampler: vk::Sampler::null(),
                compare_sampler: vk::Sampler::null(),
                arena: vk::Buffer::null(),
                arena_memory: vk::DeviceMemory::null(),
                arena_ptr: std::ptr::null_mut(),
                align: 256,
                set_layouts: HashMap::new(),
                textures: HashMap::new(),
                targets: HashMap::new(),
                used: 0,
                readbacks: Vec::new(),
                recording: false,
                storage_cleared: false,
            };
            let info = vk::CommandBufferAllocateInfo {
                command_pool: pool,
                level: vk::CommandBufferLevel::PRIMARY,
                command_buffer_count: 1,
                ..Default::default()
            };
            me.cmd = call("vkAllocateCommandBuffers", d.allocate_command_buffers(&info))?[0];
            me.fence = call("vkCreateFence", d.create_fence(&vk::FenceCreateInfo::default(), None))?;
            let sizes = [
                (vk::DescriptorType::UNIFORM_BUFFER, 8192),
                (vk::DescriptorType::STORAGE_BUFFER, 8192),
                (vk::DescriptorType::SAMPLED_IMAGE, 8192),
                (vk::DescriptorType::STORAGE_IMAGE, 2048),
                (vk::DescriptorType::SAMPLER, 4096),
                (vk::DescriptorType::COMBINED_IMAGE_SAMPLER, 4096),
            ]
            .map(|(ty, n)| vk::DescriptorPoolSize { type_: ty, descriptor_count: n });
            me.descriptors = call(
                "vkCreateDescriptorPool",
                d.create_descriptor_pool(
                    &vk::DescriptorPoolCreateInfo {
                        max_sets: 4096,
                        pool_size_count: sizes.len() as u32,
                        pool_sizes: sizes.as_ptr(),
                        ..Default::default()
                    },
                    None,
                ),
            )?;
            let sampler = |compare: bool| vk::SamplerCreateInfo {
                mag_filter: vk::Filter::NEAREST,
                min_filter: vk::Filter::NEAREST,
                mipmap_mode: vk::SamplerMipmapMode::NEAREST,
                address_mode_u: vk::SamplerAddressMode::CLAMP_TO_EDGE,
                address_mode_v: vk::SamplerAddressMode::CLAMP_TO_EDGE,
                address_mode_w: vk::SamplerAddressMode::CLAMP_TO_EDGE,
                compare_enable: vk::Bool32::from(compare),
                compare_op: vk::CompareOp::LESS,
                max_lod: 0.0,
                ..Default::default()
            };
            me.sampler = call("vkCreateSampler", d.create_sampler(&sampler(false), None))?;
            me.compare_sampler = call("vkCreateSampler", d.create_sampler(&sampler(true), None))?;
            if options.timestamps > 0 {
                let info = vk::QueryPoolCreateInfo {
                    query_type: vk::QueryType::TIMESTAMP,
                    query_count: options.timestamps,
                    ..Default::default()
                };
                me.queries = call("vkCreateQueryPool", d.create_query_pool(&info, None))?;
            }
            let usage = vk::BufferUsageFlags::VERTEX_BUFFER
                | vk::BufferUsageFlags::UNIFORM_BUFFER
                | vk::BufferUsageFlags::STORAGE_BUFFER
                | vk::BufferUsageFlags::TRANSFER_SRC
                | vk::BufferUsageFlags::TRANSFER_DST;
            me.arena = call(
                "vkCreateBuffer",
                d.create_buffer(&vk::BufferCreateInfo { size: ARENA, usage, ..Default::default() }, None),
            )?;
            let req = d.get_buffer_memory_requirements(me.arena);
            let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            me.arena_memory = me.allocate(req, host)?;
            call("vkBindBufferMemory", d.bind_buffer_memory(me.arena, me.arena_memory, 0))?;
            me.arena_ptr =
                call("vkMapMemory", d.map_memory(me.arena_memory, 0, ARENA, vk::MemoryMapFlags::empty()))?.cast();
            let l = gpu.raw_instance().get_physical_device_properties(gpu.info.handle).limits;
            me.align = l.min_uniform_buffer_offset_alignment.max(l.min_storage_buffer_offset_alignment).max(16);
            Ok(me)
        }
    }

    /// Device memory for `req` of a type with the properties `want`.
    fn allocate(&self, req: vk::MemoryRequirements, want: vk::MemoryPropertyFlags) -> Result<vk::DeviceMemory, Error> {
        let m = &self.memory;
        let index = (0..m.memory_type_count)
            .find(|&i| req.memory_type_bits & (1 << i) != 0 && m.memory_types[i as usize].property_flags.contains(want))
            .ok_or("no memory type for the request")?;
        let info = vk::MemoryAllocateInfo { allocation_size: req.size, memory_type_index: index, ..Default::default() };
        // SAFETY: `info` is a valid allocation of a type the requirements allow.
        call("vkAllocateMemory", unsafe { self.gpu.raw_device().allocate_memory(&info, None) })
    }

    /// What drawing with `p` needs, or why it cannot be drawn here. Unspecialized colour
    /// attachments take `rgba8unorm` (the loader's default link format).
    pub fn plan(&self, p: &PipelineRef<'_>) -> Result<Plan, String> {
        let compute = p.kind() == PipelineKind::Compute;
        let state = if compute {
            None
        } else {
            Some(p.state().map_err(|e| e.to_string())?.ok_or("a native-form pipeline (not drawn here)")?)
        };
        let layout: PipelineLayout = p.layout().map_err(|e| e.to_string())?.ok_or("no layout")?;
        let desc = layout_desc(&layout)?;
        // The SPIR-V types of every descriptor of every stage, by (set, binding).
        let mut types: HashMap<(u32, u32), Type> = HashMap::new();
        for s in p.stages().map_err(|e| e.to_string())? {
            let spirv = s.output(Target::Spirv).map_err(|e| e.to_string())?.ok_or("a stage without SPIR-V")?;
            let words: Vec<u32> = spirv.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            let entries =
                std::panic::catch_unwind(|| spirq::ReflectConfig::new().spv(words).ref_all_rscs(true).reflect())
                    .map_err(|_| "spirq panicked".to_string())?
                    .map_err(|e| format!("reflection: {e}"))?;
            for ep in entries {
                for v in ep.vars {
                    if let spirq::var::Variable::Descriptor { desc_bind, ty, .. } = v {
                        types.entry((desc_bind.set(), desc_bind.bind())).or_insert(ty);
                    }
                }
            }
        }
        let mut plan = Plan {
            compute,
            sets: Vec::new(),
            push: desc.push_constants,
            buffer_bytes: Vec::new(),
            vertex: Vec::new(),
            colors: Vec::new(),
            depth: None,
            samples: vk::SampleCountFlags::_1,
            clear_depth: 0.5,
        };
        let mut total = 0u64;
        for (set, bindings) in desc.sets.iter().enumerate() {
            if bindings.is_empty() {
                continue;
            }
            let mut resources = Vec::new();
            for b in bindings {
                let kind = layout
                    .bindings
                    .iter()
                    .find(|l| l.group == set as u32 && l.binding == b.binding)
                    .map(|l| l.kind)
                    .ok_or("a binding missing from the layout")?;
                let ty = types.get(&(set as u32, b.binding));
                let at = format!("@group({set}) @binding({})", b.binding);
                let r = match kind {
                    BindingKind::UniformBuffer | BindingKind::StorageBuffer | BindingKind::ReadOnlyStorageBuffer => {
                        // Sized (and the batch's share checked) before anything is allocated.
                        let size = ty.map_or(256, |t| type_size(descriptor_type(t)));
                        total = total.saturating_add((size as u64).max(16).next_multiple_of(self.align));
                        if total > ARENA / 4 {
                            return Err(format!("{at}: more than {} bytes of buffers", ARENA / 4));
                        }
                        plan.buffer_bytes.push(ty.map_or_else(|| vec![0; 256], fill));
                        Resource::Buffer(kind == BindingKind::StorageBuffer)
                    }
                    BindingKind::SampledTexture => Resource::Texture(texture(ty, &at)?),
                    BindingKind::CombinedImageSampler => Resource::Combined(texture(ty, &at)?),
                    BindingKind::StorageTexture | BindingKind::ReadOnlyStorageTexture => {
                        Resource::Texture(storage_texture(ty, &at)?)
                    }
                    BindingKind::Sampler => Resource::Sampler { compare: false },
                    BindingKind::ComparisonSampler => Resource::Sampler { compare: true },
                    other => return Err(format!("{at}: {} bindings are not drawn here", other.name())),
                };
                resources.push(r);
            }
            plan.sets.push((set as u32, bindings.clone(), resources));
        }
        if let Some(r) = &state {
            self.graphics_plan(r, &mut plan)?;
        }
        Ok(plan)
    }

    /// The attachments, sample count, depth clear and vertex buffers of a graphics `plan`.
    fn graphics_plan(&self, r: &RenderState, plan: &mut Plan) -> Result<(), String> {
        for c in &r.color_attachments {
            let f = match c.format {
                MaybeSpecialized::Is(f) => f,
                MaybeSpecialized::Unspecialized => TextureFormat::Rgba8unorm,
            };
            plan.colors.push(self.gpu.format(f).ok_or_else(|| format!("{} is not an attachment here", f.name()))?);
        }
        if let Some(ds) = &r.depth_stencil {
            let f =
                self.gpu.format(ds.format).ok_or_else(|| format!("{} is not an attachment here", ds.format.name()))?;
            let name = ds.format.name();
            plan.depth = Some((f, name.contains("depth"), name.contains("stencil")));
            plan.clear_depth = match ds.depth_compare {
                CompareFunction::Greater | CompareFunction::GreaterEqual => 0.0,
                CompareFunction::Less | CompareFunction::LessEqual => 1.0,
                _ => 0.5,
            };
        }
        plan.samples = match r.sample_count {
            1 => vk::SampleCountFlags::_1,
            2 => vk::SampleCountFlags::_2,
            4 => vk::SampleCountFlags::_4,
            8 => vk::SampleCountFlags::_8,
            n => return Err(format!("sample count {n}")),
        };
        if let Some(b) = r.vertex_buffers.iter().find(|b| b.stride > MAX_STRIDE) {
            return Err(format!("a vertex stride of {} bytes", b.stride));
        }
        plan.vertex = r.vertex_buffers.iter().map(|b| vertex_bytes(b, self.options.cover)).collect();
        Ok(())
    }

    /// Starts a batch (one command buffer, submitted by [`finish`](Self::finish)).
    pub fn begin(&mut self) -> Result<(), Error> {
        let d = self.gpu.raw_device();
        // SAFETY: the previous batch finished (its fence waited), so the command buffer and
        // the descriptor sets are not in use.
        unsafe {
            call(
                "vkResetDescriptorPool",
                d.reset_descriptor_pool(self.descriptors, vk::DescriptorPoolResetFlags::empty()),
            )?;
            call(
                "vkBeginCommandBuffer",
                d.begin_command_buffer(
                    self.cmd,
                    &vk::CommandBufferBeginInfo {
                        flags: vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT,
                        ..Default::default()
                    },
                ),
            )?;
        }
        self.used = 0;
        self.readbacks.clear();
        self.pending.iter_mut().for_each(|p| *p = false);
        self.recording = true;
        self.storage_cleared = false;
        Ok(())
    }

    /// `bytes` of the arena for the batch being recorded (aligned for any buffer binding).
    fn take(&mut self, bytes: u64) -> Result<u64, Error> {
        let at = self.used.next_multiple_of(self.align);
        if at + bytes > ARENA {
            return Err("the batch's buffers are full".into());
        }
        self.used = at + bytes;
        Ok(at)
    }

    /// Takes `size` bytes of the arena and fills them with `bytes`, then zeros: no byte a
    /// draw reads (a buffer's padding included) is left from an earlier batch.
    fn upload(&mut self, size: u64, bytes: &[u8]) -> Result<u64, Error> {
        let len = bytes.len() as u64;
        if len > size {
            return Err(format!("{len} bytes in a range of {size}").into());
        }
        let at = self.take(size)?;
        // SAFETY: `at..at + size` is inside the mapped arena (`take`), `bytes` fits in it, and
        // no submitted work uses the arena while a batch is recorded (the previous batch's
        // fence was waited).
        unsafe {
            let dst = self.arena_ptr.add(at as usize);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len());
            std::ptr::write_bytes(dst.add(bytes.len()), 0, (size - len) as usize);
        }
        Ok(at)
    }

    /// A full memory barrier: every earlier write visible to every later access.
    fn barrier(&self) {
        let m = vk::MemoryBarrier {
            src_access_mask: vk::AccessFlags::MEMORY_WRITE,
            dst_access_mask: vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE,
            ..Default::default()
        };
        // SAFETY: recording `self.cmd`.
        unsafe {
            self.gpu.raw_device().cmd_pipeline_barrier(
                self.cmd,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::DependencyFlags::empty(),
                &[m],
                &[] as &[vk::BufferMemoryBarrier],
                &[] as &[vk::ImageMemoryBarrier],
            )
        }
    }

    /// A full barrier that also moves every layer of `image` from layout `from` to `to`.
    fn image_barrier(
        &self,
        image: vk::Image,
        aspect: vk::ImageAspectFlags,
        from: vk::ImageLayout,
        to: vk::ImageLayout,
    ) {
        let b = vk::ImageMemoryBarrier {
            src_access_mask: vk::AccessFlags::MEMORY_WRITE,
            dst_access_mask: vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE,
            old_layout: from,
            new_layout: to,
            src_queue_family_index: vk::QUEUE_FAMILY_IGNORED,
            dst_queue_family_index: vk::QUEUE_FAMILY_IGNORED,
            image,
            subresource_range: vk::ImageSubresourceRange {
                aspect_mask: aspect,
                base_mip_level: 0,
                level_count: 1,
                base_array_layer: 0,
                layer_count: vk::REMAINING_ARRAY_LAYERS,
            },
            ..Default::default()
        };
        // SAFETY: recording `self.cmd`; `image` is one of this drawer's.
        unsafe {
            self.gpu.raw_device().cmd_pipeline_barrier(
                self.cmd,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::DependencyFlags::empty(),
                &[] as &[vk::MemoryBarrier],
                &[] as &[vk::BufferMemoryBarrier],
                &[b],
            )
        }
    }

    /// A single-mip image with memory and a view of all `layers`.
    #[allow(clippy::too_many_arguments)]
    fn make_image(
        &self,
        format: vk::Format,
        extent: vk::Extent3D,
        layers: u32,
        ty: vk::ImageType,
        view: vk::ImageViewType,
        samples: vk::SampleCountFlags,
        usage: vk::ImageUsageFlags,
        aspect: vk::ImageAspectFlags,
    ) -> Result<Image, Error> {
        let d = self.gpu.raw_device();
        let flags = if matches!(view, vk::ImageViewType::CUBE | vk::ImageViewType::CUBE_ARRAY) {
            vk::ImageCreateFlags::CUBE_COMPATIBLE
        } else {
            vk::ImageCreateFlags::empty()
        };
        let info = vk::ImageCreateInfo {
            flags,
            image_type: ty,
            format,
            extent,
            mip_levels: 1,
            array_layers: layers,
            samples,
            tiling: vk::ImageTiling::OPTIMAL,
            usage,
            sharing_mode: vk::SharingMode::EXCLUSIVE,
            initial_layout: vk::ImageLayout::UNDEFINED,
            ..Default::default()
        };
        // SAFETY: the create infos are complete; the image is bound to memory of a type its
        // requirements allow before its view is made; on error the objects made leak only
        // until the device is destroyed (an example's failure path).
        unsafe {
            let image = call("vkCreateImage", d.create_image(&info, None))?;
            let req = d.get_image_memory_requirements(image);
            let memory = self.allocate(req, vk::MemoryPropertyFlags::DEVICE_LOCAL)?;
            call("vkBindImageMemory", d.bind_image_memory(image, memory, 0))?;
            let v = vk::ImageViewCreateInfo {
                image,
                view_type: view,
                format,
                subresource_range: vk::ImageSubresourceRange {
                    aspect_mask: aspect,
                    base_mip_level: 0,
                    level_count: 1,
                    base_array_layer: 0,
                    layer_count: layers,
                },
                ..Default::default()
            };
            let view = call("vkCreateImageView", d.create_image_view(&v, None))?;
            Ok(Image { image, view, memory })
        }
    }

    /// The texture of `shape`, made (and filled, in the batch being recorded, before any
    /// draw that reads it) at first need.
    fn texture(&mut self, shape: TexShape) -> Result<vk::ImageView, Error> {
        if let Some(t) = self.textures.get(&shape) {
            return Ok(t.view);
        }
        let (ty, extent, layers) = match shape.view {
            vk::ImageViewType::_1D => (vk::ImageType::_1D, (TEX, 1, 1), 1),
            vk::ImageViewType::_1D_ARRAY => (vk::ImageType::_1D, (TEX, 1, 1), 4),
            vk::ImageViewType::_2D_ARRAY => (vk::ImageType::_2D, (TEX, TEX, 1), 4),
            vk::ImageViewType::CUBE => (vk::ImageType::_2D, (TEX, TEX, 1), 6),
            vk::ImageViewType::CUBE_ARRAY => (vk::ImageType::_2D, (TEX, TEX, 1), 12),
            vk::ImageViewType::_3D => (vk::ImageType::_3D, (TEX, TEX, 4), 1),
            _ => (vk::ImageType::_2D, (TEX, TEX, 1), 1),
        };
        let extent = vk::Extent3D { width: extent.0, height: extent.1, depth: extent.2 };
        let aspect = if shape.depth { vk::ImageAspectFlags::DEPTH } else { vk::ImageAspectFlags::COLOR };
        let usage = vk::ImageUsageFlags::TRANSFER_DST
            | vk::ImageUsageFlags::TRANSFER_SRC
            | if shape.storage { vk::ImageUsageFlags::STORAGE } else { vk::ImageUsageFlags::SAMPLED };
        let img =
            self.make_image(shape.format, extent, layers, ty, shape.view, vk::SampleCountFlags::_1, usage, aspect)?;
        let gpu = self.gpu.clone();
        let d = gpu.raw_device();
        let (image, view) = (img.image, img.view);
        self.textures.insert(shape, img);
        self.image_barrier(image, aspect, vk::ImageLayout::UNDEFINED, vk::ImageLayout::TRANSFER_DST_OPTIMAL);
        if shape.depth {
            let range = vk::ImageSubresourceRange {
                aspect_mask: aspect,
                base_mip_level: 0,
                level_count: 1,
                base_array_layer: 0,
                layer_count: layers,
            };
            // SAFETY: recording; the image is in TRANSFER_DST_OPTIMAL.
            unsafe {
                d.cmd_clear_depth_stencil_image(
                    self.cmd,
                    image,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                    &vk::ClearDepthStencilValue { depth: 0.5, stencil: 0 },
                    &[range],
                )
            };
        } else {
            let texel = texel_bytes(shape.format).ok_or("a texture format without a size")?;
            let n = u64::from(extent.width * extent.height * extent.depth * layers) * texel;
            let bytes: Vec<u8> = (0..n).map(|i| (unit(i ^ 0xA5A5) * 255.0) as u8).collect();
            let at = self.upload(n, &bytes)?;
            let copy = vk::BufferImageCopy {
                buffer_offset: at,
                buffer_row_length: 0,
                buffer_image_height: 0,
                image_subresource: vk::ImageSubresourceLayers {
                    aspect_mask: aspect,
                    mip_level: 0,
                    base_array_layer: 0,
                    layer_count: layers,
                },
                image_offset: vk::Offset3D::default(),
                image_extent: extent,
            };
            // SAFETY: recording; the copy is inside the arena and the image.
            unsafe {
                d.cmd_copy_buffer_to_image(self.cmd, self.arena, image, vk::ImageLayout::TRANSFER_DST_OPTIMAL, &[copy])
            };
        }
        let to = if shape.storage { vk::ImageLayout::GENERAL } else { vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL };
        self.image_barrier(image, aspect, vk::ImageLayout::TRANSFER_DST_OPTIMAL, to);
        Ok(view)
    }

    /// Clears every storage texture (once per batch, before its first draw): what a compute
    /// pipeline writes is then a function of that pipeline alone.
    fn clear_storage(&mut self) {
        if self.storage_cleared {
            return;
        }
        self.storage_cleared = true;
        let d = self.gpu.raw_device();
        for (shape, t) in &self.textures {
            if !shape.storage {
                continue;
            }
            let range = vk::ImageSubresourceRange {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                base_mip_level: 0,
                level_count: 1,
                base_array_layer: 0,
                layer_count: vk::REMAINING_ARRAY_LAYERS,
            };
            self.image_barrier(
                t.image,
                vk::ImageAspectFlags::COLOR,
                vk::ImageLayout::GENERAL,
                vk::ImageLayout::GENERAL,
            );
            // SAFETY: recording; the image is in GENERAL, made with TRANSFER_DST.
            unsafe {
                d.cmd_clear_color_image(
                    self.cmd,
                    t.image,
                    vk::ImageLayout::GENERAL,
                    &vk::ClearColorValue { uint32: [0; 4] },
                    &[range],
                )
            };
        }
        self.barrier();
    }

    /// Makes the attachments `plan` draws into, at first need.
    fn targets(&mut self, plan: &Plan) -> Result<(), Error> {
        let key = (plan.colors.clone(), plan.depth.map(|d| d.0), plan.samples.bits());
        if self.targets.contains_key(&key) {
            return Ok(());
        }
        let size = self.options.size;
        let extent = vk::Extent3D { width: size, height: size, depth: 1 };
        let one = |s: &Self, f, samples, usage, aspect| {
            s.make_image(f, extent, 1, vk::ImageType::_2D, vk::ImageViewType::_2D, samples, usage, aspect)
        };
        let color_usage = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC;
        let mut t = Targets { colors: Vec::new(), resolves: Vec::new(), depth: None, depth_resolve: None };
        for &f in &plan.colors {
            t.colors.push(one(self, f, plan.samples, color_usage, vk::ImageAspectFlags::COLOR)?);
            if plan.samples != vk::SampleCountFlags::_1 {
                t.resolves.push(one(self, f, vk::SampleCountFlags::_1, color_usage, vk::ImageAspectFlags::COLOR)?);
            }
        }
        if let Some((f, has_depth, has_stencil)) = plan.depth {
            let usage = vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC;
            t.depth = Some(one(self, f, plan.samples, usage, aspects(has_depth, has_stencil))?);
            if plan.samples != vk::SampleCountFlags::_1 {
                t.depth_resolve = Some(one(self, f, vk::SampleCountFlags::_1, usage, aspects(has_depth, has_stencil))?);
            }
        }
        self.targets.insert(key, t);
        Ok(())
    }

    /// Records a draw (or dispatch) with `pipeline` as `plan` says, or only its setup and
    /// read-back ([`Record`]); what is read back is returned by [`finish`](Self::finish), in
    /// recording order.
    pub fn draw(&mut self, pipeline: &Loaded, plan: &Plan, how: Record) -> Result<(), Error> {
        let (draws, read_back) = match how {
            Record::Draw | Record::Timed { .. } => (true, false),
            Record::DrawAndRead => (true, true),
            Record::ReadWithoutDrawing => (false, true),
        };
        // `(pool, first query)` and the render pass instances, each with one draw call.
        let (timed, repeats) = match how {
            Record::Timed { first, repeats } => (Some((self.queries, first)), repeats.max(1)),
            _ => (None, 1),
        };
        if !self.recording {
            return Err("draw outside a batch".into());
        }
        if let Some((_, first)) = timed {
            if plan.compute {
                return Err("a timed draw of a compute pipeline".into());
            }
            if self.clock.valid_bits == 0 {
                return Err("queue family 0 writes no timestamps (timestampValidBits 0)".into());
            }
            let end = first as usize + 2 * repeats as usize;
            if end > self.pending.len() {
                return Err(format!("timestamp queries {first}..{end} past the pool's {}", self.pending.len()).into());
            }
        }
        let handle = pipeline.pipeline.handle();
        let layout = pipeline.pipeline.layout().ok_or("a pipeline without a layout")?;
        // Textures first (their fill is recorded before the draw that reads them).
        let mut sets = Vec::new();
        for (_, bindings, resources) in &plan.sets {
            for r in resources {
                if let Resource::Texture(s) | Resource::Combined(s) = r {
                    self.texture(*s)?;
                }
            }
            if !self.set_layouts.contains_key(bindings) {
                let vk_bindings: Vec<vk::DescriptorSetLayoutBinding> = bindings
                    .iter()
                    .map(|b| vk::DescriptorSetLayoutBinding {
                        binding: b.binding,
                        descriptor_type: b.ty,
                        descriptor_count: b.count,
                        stage_flags: b.stages,
                        immutable_samplers: std::ptr::null(),
                    })
                    .collect();
                let info = vk::DescriptorSetLayoutCreateInfo {
                    binding_count: vk_bindings.len() as u32,
                    bindings: vk_bindings.as_ptr(),
                    ..Default::default()
                };
                // SAFETY: `vk_bindings` outlives the call.
                let l = call("vkCreateDescriptorSetLayout", unsafe {
                    self.gpu.raw_device().create_descriptor_set_layout(&info, None)
                })?;
                self.set_layouts.insert(bindings.clone(), l);
            }
        }
        if plan.compute {
            self.clear_storage();
        } else {
            self.targets(plan)?;
        }
        // Buffers: this draw's own range of the arena, filled now.
        let mut buffer_at = Vec::new();
        let mut writable = Vec::new();
        for bytes in &plan.buffer_bytes {
            let size = (bytes.len() as u64).max(16).next_multiple_of(16);
            buffer_at.push((self.upload(size, bytes)?, size));
        }
        let mut bi = 0;
        let gpu = self.gpu.clone();
        for (set, bindings, resources) in &plan.sets {
            let set_layout = self.set_layouts[bindings];
            let info = vk::DescriptorSetAllocateInfo {
                descriptor_pool: self.descriptors,
                descriptor_set_count: 1,
                set_layouts: &set_layout,
                ..Default::default()
            };
            let d = gpu.raw_device();
            // SAFETY: the pool is reset only between batches.
            let ds = call("vkAllocateDescriptorSets", unsafe { d.allocate_descriptor_sets(&info) })?[0];
            let mut buffers = Vec::new();
            let mut images = Vec::new();
            for (b, r) in bindings.iter().zip(resources) {
                match r {
                    Resource::Buffer(w) => {
                        let (at, size) = buffer_at[bi];
                        bi += 1;
                        if *w {
                            writable.push((at, size));
                        }
                        buffers.push((b, vk::DescriptorBufferInfo { buffer: self.arena, offset: at, range: size }));
                    }
                    Resource::Texture(s) | Resource::Combined(s) => {
                        let layout = if s.storage {
                            vk::ImageLayout::GENERAL
                        } else {
                            vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL
                        };
                        let sampler = if matches!(r, Resource::Combined(_)) {
                            if s.depth {
                                self.compare_sampler
                            } else {
                                self.sampler
                            }
                        } else {
                            vk::Sampler::null()
                        };
                        images.push((
                            b,
                            vk::DescriptorImageInfo {
                                sampler,
                                image_view: self.textures[s].view,
                                image_layout: layout,
                            },
                        ));
                    }
                    Resource::Sampler { compare } => {
                        let sampler = if *compare { self.compare_sampler } else { self.sampler };
                        images.push((b, vk::DescriptorImageInfo { sampler, ..Default::default() }));
                    }
                }
            }
            // One write per binding, its `count` descriptors all the same resource.
            let buffer_infos: Vec<Vec<vk::DescriptorBufferInfo>> =
                buffers.iter().map(|(b, i)| vec![*i; b.count as usize]).collect();
            let image_infos: Vec<Vec<vk::DescriptorImageInfo>> =
                images.iter().map(|(b, i)| vec![*i; b.count as usize]).collect();
            let mut writes = Vec::new();
            for ((b, _), infos) in buffers.iter().zip(&buffer_infos) {
                writes.push(vk::WriteDescriptorSet {
                    dst_set: ds,
                    dst_binding: b.binding,
                    descriptor_count: b.count,
                    descriptor_type: b.ty,
                    buffer_info: infos.as_ptr(),
                    ..Default::default()
                });
            }
            for ((b, _), infos) in images.iter().zip(&image_infos) {
                writes.push(vk::WriteDescriptorSet {
                    dst_set: ds,
                    dst_binding: b.binding,
                    descriptor_count: b.count,
                    descriptor_type: b.ty,
                    image_info: infos.as_ptr(),
                    ..Default::default()
                });
            }
            // SAFETY: every info array outlives the call; the set is not in use.
            unsafe { d.update_descriptor_sets(&writes, &[] as &[vk::CopyDescriptorSet]) };
            sets.push((*set, ds));
        }
        // Vertex buffers.
        let mut vertex = Vec::new();
        for bytes in &plan.vertex {
            vertex.push(self.upload(bytes.len().max(16) as u64, bytes)?);
        }
        self.barrier();
        let gpu = self.gpu.clone();
        let d = gpu.raw_device();
        let cmd = self.cmd;
        let bind_point = if plan.compute { vk::PipelineBindPoint::COMPUTE } else { vk::PipelineBindPoint::GRAPHICS };
        let mut reads = Vec::new();
        // SAFETY: recording `cmd`; every handle bound is alive until the batch finished
        // (`pipeline` is the caller's, held by it until `finish` returns; the rest is this
        // drawer's); the set layouts are identical to the pipeline layout's (layout_desc). A
        // timed draw's queries are inside this drawer's pool (checked above), reset outside
        // any render pass instance before they are written, on a queue family whose
        // timestampValidBits is not 0 (checked above); no view mask is set (multiview off).
        unsafe {
            if !plan.compute {
                // Set before binding: a pipeline with the state static overrides them.
                d.cmd_set_blend_constants(cmd, [0.25, 0.5, 0.75, 1.0]);
                d.cmd_set_stencil_reference(cmd, vk::StencilFaceFlags::FRONT_AND_BACK, 1);
            }
            d.cmd_bind_pipeline(cmd, bind_point, handle);
            for (set, ds) in &sets {
                d.cmd_bind_descriptor_sets(cmd, bind_point, layout, *set, &[*ds], &[]);
            }
            if let Some((size, stages)) = plan.push {
                let bytes: Vec<u8> = (0..size / 4).flat_map(|i| (unit(u64::from(i)) - 0.5).to_le_bytes()).collect();
                d.cmd_push_constants(cmd, layout, stages, 0, &bytes);
            }
            if plan.compute {
                if draws {
                    d.cmd_dispatch(cmd, 1, 1, 1);
                }
                self.barrier();
                if read_back {
                    for &(at, size) in &writable {
                        let to = self.take(size)?;
                        d.cmd_copy_buffer(
                            cmd,
                            self.arena,
                            self.arena,
                            &[vk::BufferCopy { src_offset: at, dst_offset: to, size }],
                        );
                        reads.push((to, size));
                    }
                    // The storage textures it binds, in binding order: layer (or slice) 0.
                    let storage = plan.sets.iter().flat_map(|(_, _, r)| r).filter_map(|r| match r {
                        Resource::Texture(s) if s.storage => Some(*s),
                        _ => None,
                    });
                    for shape in storage.collect::<Vec<_>>() {
                        let image = self.textures[&shape].image;
                        let (w, h) =
                            if shape.view == vk::ImageViewType::_1D || shape.view == vk::ImageViewType::_1D_ARRAY {
                                (TEX, 1)
                            } else {
                                (TEX, TEX)
                            };
                        let texel = texel_bytes(shape.format).ok_or("a storage format without a size")?;
                        let n = u64::from(w * h) * texel;
                        let to = self.take(n)?;
                        let color = vk::ImageAspectFlags::COLOR;
                        self.image_barrier(
                            image,
                            color,
                            vk::ImageLayout::GENERAL,
                            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                        );
                        copy_image(d, cmd, image, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, color, (w, h), self.arena, to);
                        self.image_barrier(
                            image,
                            color,
                            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                            vk::ImageLayout::GENERAL,
                        );
                        reads.push((to, n));
                    }
                }
            } else {
                let key = (plan.colors.clone(), plan.depth.map(|d| d.0), plan.samples.bits());
                let t = &self.targets[&key];
                let handles = |v: &Vec<Image>| -> Vec<(vk::Image, vk::ImageView)> {
                    v.iter().map(|i| (i.image, i.view)).collect()
                };
                let (t_colors, t_resolves) = (handles(&t.colors), handles(&t.resolves));
                let t_depth = t.depth.as_ref().map(|i| (i.image, i.view));
                let t_depth_resolve = t.depth_resolve.as_ref().map(|i| (i.image, i.view));
                let msaa = plan.samples != vk::SampleCountFlags::_1;
                for (i, c) in t_colors.iter().enumerate() {
                    self.image_barrier(
                        c.0,
                        vk::ImageAspectFlags::COLOR,
                        vk::ImageLayout::UNDEFINED,
                        vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                    );
                    if msaa {
                        self.image_barrier(
                            t_resolves[i].0,
                            vk::ImageAspectFlags::COLOR,
                            vk::ImageLayout::UNDEFINED,
                            vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                        );
                    }
                }
                let (depth_aspects, depth_layout) = match plan.depth {
                    Some((_, de, st)) => (aspects(de, st), vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL),
                    None => (vk::ImageAspectFlags::empty(), vk::ImageLayout::UNDEFINED),
                };
                for z in t_depth.iter().chain(&t_depth_resolve) {
                    self.image_barrier(z.0, depth_aspects, vk::ImageLayout::UNDEFINED, depth_layout);
                }
                let colors: Vec<vk::RenderingAttachmentInfo> = t_colors
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let integer = is_integer(plan.colors[i]);
                        vk::RenderingAttachmentInfo {
                            image_view: c.1,
                            image_layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                            resolve_mode: if !msaa {
                                vk::ResolveModeFlags::NONE
                            } else if integer {
                                vk::ResolveModeFlags::SAMPLE_ZERO
                            } else {
                                vk::ResolveModeFlags::AVERAGE
                            },
                            resolve_image_view: if msaa { t_resolves[i].1 } else { vk::ImageView::null() },
                            resolve_image_layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                            load_op: vk::AttachmentLoadOp::CLEAR,
                            store_op: vk::AttachmentStoreOp::STORE,
                            clear_value: vk::ClearValue {
                                color: if integer {
                                    vk::ClearColorValue { uint32: [1, 2, 3, 4] }
                                } else {
                                    vk::ClearColorValue { float32: [0.1, 0.2, 0.3, 0.4] }
                                },
                            },
                            ..Default::default()
                        }
                    })
                    .collect();
                let depth = t_depth.map(|z| vk::RenderingAttachmentInfo {
                    image_view: z.1,
                    image_layout: depth_layout,
                    // Resolving sample zero is supported by every device (Vulkan 1.2).
                    resolve_mode: if t_depth_resolve.is_some() {
                        vk::ResolveModeFlags::SAMPLE_ZERO
                    } else {
                        vk::ResolveModeFlags::NONE
                    },
                    resolve_image_view: t_depth_resolve.map_or(vk::ImageView::null(), |r| r.1),
                    resolve_image_layout: depth_layout,
                    load_op: vk::AttachmentLoadOp::CLEAR,
                    store_op: vk::AttachmentStoreOp::STORE,
                    clear_value: vk::ClearValue {
                        depth_stencil: vk::ClearDepthStencilValue { depth: plan.clear_depth, stencil: 0 },
                    },
                    ..Default::default()
                });
                let (has_depth, has_stencil) = plan.depth.map_or((false, false), |d| (d.1, d.2));
                let size = self.options.size;
                let area =
                    vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: size, height: size } };
                let rendering = vk::RenderingInfo {
                    render_area: area,
                    layer_count: 1,
                    color_attachment_count: colors.len() as u32,
                    color_attachments: colors.as_ptr(),
                    depth_attachment: match (&depth, has_depth) {
                        (Some(z), true) => z,
                        _ => std::ptr::null(),
                    },
                    stencil_attachment: match (&depth, has_stencil) {
                        (Some(z), true) => z,
                        _ => std::ptr::null(),
                    },
                    ..Default::default()
                };
                if let Some((pool, first)) = timed {
                    // Outside any render pass instance, before the queries' first write.
                    d.cmd_reset_query_pool(cmd, pool, first, 2 * repeats);
                }
                let viewport = vk::Viewport {
                    x: 0.0,
                    y: 0.0,
                    width: size as f32,
                    height: size as f32,
                    min_depth: 0.0,
                    max_depth: 1.0,
                };
                for k in 0..repeats {
                    if k > 0 {
                        // The previous instance's attachment writes before this one's clear.
                        self.barrier();
                    }
                    d.cmd_begin_rendering(cmd, &rendering);
                    d.cmd_set_viewport(cmd, 0, &[viewport]);
                    d.cmd_set_scissor(cmd, 0, &[area]);
                    if !vertex.is_empty() {
                        let buffers = vec![self.arena; vertex.len()];
                        d.cmd_bind_vertex_buffers(cmd, 0, &buffers, &vertex);
                    }
                    let stamp = |q: u32| {
                        if let Some((pool, first)) = timed {
                            d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, pool, first + q);
                        }
                    };
                    stamp(2 * k);
                    if draws {
                        d.cmd_draw(cmd, VERTICES, INSTANCES, 0, 0);
                    }
                    stamp(2 * k + 1);
                    d.cmd_end_rendering(cmd);
                }
                if read_back {
                    let out = if msaa { &t_resolves } else { &t_colors };
                    let mut copies = Vec::new();
                    for (i, c) in out.iter().enumerate() {
                        let n = u64::from(size * size)
                            * texel_bytes(plan.colors[i]).ok_or("an attachment format without a size")?;
                        copies.push((c.0, vk::ImageAspectFlags::COLOR, n));
                    }
                    if out.is_empty() && has_depth {
                        let z = if msaa { t_depth_resolve } else { t_depth };
                        if let (Some(z), Some((f, _, _))) = (z, plan.depth) {
                            let n = u64::from(size * size) * if f == vk::Format::D16_UNORM { 2 } else { 4 };
                            copies.push((z.0, vk::ImageAspectFlags::DEPTH, n));
                        }
                    }
                    for (image, aspect, n) in copies {
                        let from = if aspect == vk::ImageAspectFlags::COLOR {
                            vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL
                        } else {
                            depth_layout
                        };
                        let barrier_aspect = if aspect == vk::ImageAspectFlags::COLOR { aspect } else { depth_aspects };
                        self.image_barrier(image, barrier_aspect, from, vk::ImageLayout::TRANSFER_SRC_OPTIMAL);
                        let to = self.take(n)?;
                        copy_image(
                            d,
                            cmd,
                            image,
                            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                            aspect,
                            (size, size),
                            self.arena,
                            to,
                        );
                        reads.push((to, n));
                    }
                }
            }
        }
        self.barrier();
        self.readbacks.push(reads);
        if let Some((_, first)) = timed {
            // Recorded: the batch's submission writes them (marked only now, so that a draw
            // that failed half-way leaves no query `timestamps` would wait for forever).
            self.pending[first as usize..first as usize + 2 * repeats as usize].iter_mut().for_each(|p| *p = true);
        }
        Ok(())
    }

    /// Submits the batch, waits for it and returns each draw's read-back bytes (empty for a
    /// draw recorded without `read_back`).
    pub fn finish(&mut self) -> Result<Vec<Readback>, Error> {
        if !self.recording {
            return Err("finish outside a batch".into());
        }
        self.recording = false;
        let d = self.gpu.raw_device();
        let submit = vk::SubmitInfo { command_buffer_count: 1, command_buffers: &self.cmd, ..Default::default() };
        // SAFETY: the command buffer is complete; the queue is used by this drawer only (the
        // one thread that owns it); the fence is unsignalled.
        unsafe {
            call("vkEndCommandBuffer", d.end_command_buffer(self.cmd))?;
            call("vkQueueSubmit", d.queue_submit(self.queue, &[submit], self.fence))?;
            call("vkWaitForFences", d.wait_for_fences(&[self.fence], true, u64::MAX))?;
            call("vkResetFences", d.reset_fences(&[self.fence]))?;
        }
        self.stamped.clone_from(&self.pending);
        let out = self
            .readbacks
            .iter()
            .map(|reads| {
                reads
                    .iter()
                    .map(|&(at, n)| {
                        // SAFETY: the batch completed (fence waited); the range is inside the
                        // mapped, coherent arena.
                        unsafe { std::slice::from_raw_parts(self.arena_ptr.add(at as usize), n as usize).to_vec() }
                    })
                    .collect()
            })
            .collect();
        Ok(out)
    }

    /// Whether and how this drawer's queue writes timestamps.
    #[allow(dead_code)]
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The `count` timestamps from query `first` as the last finished batch wrote them (raw
    /// ticks: [`Clock::ns`] converts a difference); an error for a query that batch did not
    /// write ([`Record::Timed`]).
    #[allow(dead_code)]
    pub fn timestamps(&self, first: u32, count: u32) -> Result<Vec<u64>, Error> {
        let range = first as usize..first as usize + count as usize;
        if range.end > self.stamped.len() || !self.stamped[range.clone()].iter().all(|&s| s) {
            return Err(format!("timestamp queries {range:?} were not written by the last finished batch").into());
        }
        let mut bytes = vec![0u8; count as usize * 8];
        // SAFETY: every query read was reset and written by the last finished batch (its fence
        // waited, so `WAIT` returns at once); `bytes` holds `count` 64-bit results at stride 8.
        let r = unsafe {
            self.gpu.raw_device().get_query_pool_results(
                self.queries,
                first,
                count,
                &mut bytes,
                8,
                vk::QueryResultFlags::_64 | vk::QueryResultFlags::WAIT,
            )
        };
        call("vkGetQueryPoolResults", r)?;
        Ok(bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
    }
}

impl Drop for Drawer {
    fn drop(&mut self) {
        let d = self.gpu.raw_device();
        // SAFETY: after the device is idle no submitted work uses any of these objects; each
        // was made from this device and is destroyed once (null handles are ignored).
        unsafe {
            let _ = d.device_wait_idle();
            for t in self.targets.values() {
                for i in t.colors.iter().chain(&t.resolves).chain(&t.depth).chain(&t.depth_resolve) {
                    destroy_image(d, i);
                }
            }
            for i in self.textures.values() {
                destroy_image(d, i);
            }
            for l in self.set_layouts.values() {
                d.destroy_descriptor_set_layout(*l, None);
            }
            d.destroy_buffer(self.arena, None);
            if !self.arena_memory.is_null() {
                d.free_memory(self.arena_memory, None);
            }
            d.destroy_sampler(self.sampler, None);
            d.destroy_sampler(self.compare_sampler, None);
            d.destroy_descriptor_pool(self.descriptors, None);
            d.destroy_query_pool(self.queries, None);
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.pool, None);
        }
    }
}

/// # Safety
/// `i`'s objects are unused and made from `d`.
unsafe fn destroy_image(d: &Device, i: &Image) {
    d.destroy_image_view(i.view, None);
    d.destroy_image(i.image, None);
    d.free_memory(i.memory, None);
}

/// Records a copy of `image`'s first `width`×`height` texels of layer (or slice) 0 to `to`.
///
/// # Safety
/// Recording `cmd`; `image` is at least `width`×`height` and in `layout`; the range at `to` is
/// inside `arena`.
#[allow(clippy::too_many_arguments)]
unsafe fn copy_image(
    d: &Device,
    cmd: vk::CommandBuffer,
    image: vk::Image,
    layout: vk::ImageLayout,
    aspect: vk::ImageAspectFlags,
    (width, height): (u32, u32),
    arena: vk::Buffer,
    to: u64,
) {
    let copy = vk::BufferImageCopy {
        buffer_offset: to,
        buffer_row_length: 0,
        buffer_image_height: 0,
        image_subresource: vk::ImageSubresourceLayers {
            aspect_mask: aspect,
            mip_level: 0,
            base_array_layer: 0,
            layer_count: 1,
        },
        image_offset: vk::Offset3D::default(),
        image_extent: vk::Extent3D { width, height, depth: 1 },
    };
    d.cmd_copy_image_to_buffer(cmd, image, layout, arena, &[copy]);
}

/// The bundled example (`examples/renderer/pipelines.json`) compiled with the `none` backend
/// (SPIR-V only, no device section): the archive the examples run on when given none.
pub fn example_archive() -> Result<Archive, Error> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/renderer/pipelines.json");
    let script = Script::load(&path)?;
    let compiler = Compiler::new(CompilerOptions::default());
    let mut entries = Vec::new();
    for p in script.pipelines {
        let Ok(desc) = p.descriptor else { continue };
        let label = desc.label().unwrap_or("unlabelled").to_string();
        entries.push(WriteEntry { entry: compiler.compile(&desc)?, labels: vec![label].into(), binaries: vec![] });
    }
    Ok(Archive::from_bytes(granary::archive::encode(&entries, &granary::archive::portable_meta()))?)
}

/// The aspects of a depth/stencil format with depth and/or stencil.
fn aspects(depth: bool, stencil: bool) -> vk::ImageAspectFlags {
    let mut a = vk::ImageAspectFlags::empty();
    if depth {
        a |= vk::ImageAspectFlags::DEPTH;
    }
    if stencil {
        a |= vk::ImageAspectFlags::STENCIL;
    }
    a
}

/// Bytes per texel of the formats drawn into or sampled here.
fn texel_bytes(f: vk::Format) -> Option<u64> {
    use vk::Format as F;
    Some(match f {
        F::R8_UNORM | F::R8_SNORM | F::R8_UINT | F::R8_SINT => 1,
        F::R8G8_UNORM | F::R8G8_SNORM | F::R8G8_UINT | F::R8G8_SINT | F::R16_UINT | F::R16_SINT | F::R16_SFLOAT => 2,
        F::R8G8B8A8_UNORM
        | F::R8G8B8A8_SRGB
        | F::R8G8B8A8_SNORM
        | F::R8G8B8A8_UINT
        | F::R8G8B8A8_SINT
        | F::B8G8R8A8_UNORM
        | F::B8G8R8A8_SRGB
        | F::A2B10G10R10_UNORM_PACK32
        | F::A2B10G10R10_UINT_PACK32
        | F::B10G11R11_UFLOAT_PACK32
        | F::E5B9G9R9_UFLOAT_PACK32
        | F::R16G16_UINT
        | F::R16G16_SINT
        | F::R16G16_SFLOAT
        | F::R32_UINT
        | F::R32_SINT
        | F::R32_SFLOAT => 4,
        F::R16G16B16A16_UINT
        | F::R16G16B16A16_SINT
        | F::R16G16B16A16_SFLOAT
        | F::R32G32_UINT
        | F::R32G32_SINT
        | F::R32G32_SFLOAT => 8,
        F::R32G32B32A32_UINT | F::R32G32B32A32_SINT | F::R32G32B32A32_SFLOAT => 16,
        _ => return None,
    })
}

/// Whether `f` holds integers (no averaging resolve, an integer clear colour).
fn is_integer(f: vk::Format) -> bool {
    let name = format!("{f:?}");
    name.ends_with("UINT") || name.ends_with("SINT") || name.ends_with("UINT_PACK32")
}

/// The sampled texture a binding of type `ty` reads.
fn texture(ty: Option<&Type>, at: &str) -> Result<TexShape, String> {
    let t = match ty {
        Some(Type::SampledImage(t)) => t,
        Some(Type::CombinedImageSampler(c)) => &c.sampled_image_ty,
        Some(Type::Array(a)) => return texture(Some(&a.element_ty), at),
        _ => return Err(format!("{at}: no sampled-image type reflected")),
    };
    if t.is_multisampled {
        return Err(format!("{at}: a multisampled texture"));
    }
    let depth = t.is_depth == Some(true);
    let format = if depth {
        vk::Format::D32_SFLOAT
    } else {
        match t.scalar_ty {
            ScalarType::Integer { is_signed: true, .. } => vk::Format::R8G8B8A8_SINT,
            ScalarType::Integer { is_signed: false, .. } => vk::Format::R8G8B8A8_UINT,
            _ => vk::Format::R8G8B8A8_UNORM,
        }
    };
    Ok(TexShape { format, view: view_type(&t.dim, t.is_array, at)?, depth, storage: false })
}

/// The storage texture a binding of type `ty` reads or writes (its format from the SPIR-V).
fn storage_texture(ty: Option<&Type>, at: &str) -> Result<TexShape, String> {
    use spirq::spirv::ImageFormat as I;
    let t = match ty {
        Some(Type::StorageImage(t)) => t,
        Some(Type::Array(a)) => return storage_texture(Some(&a.element_ty), at),
        _ => return Err(format!("{at}: no storage-image type reflected")),
    };
    let format = match t.fmt {
        I::Rgba8 => vk::Format::R8G8B8A8_UNORM,
        I::Rgba8Snorm => vk::Format::R8G8B8A8_SNORM,
        I::Rgba8ui => vk::Format::R8G8B8A8_UINT,
        I::Rgba8i => vk::Format::R8G8B8A8_SINT,
        I::Rgba16f => vk::Format::R16G16B16A16_SFLOAT,
        I::Rgba16ui => vk::Format::R16G16B16A16_UINT,
        I::Rgba16i => vk::Format::R16G16B16A16_SINT,
        I::Rgba32f => vk::Format::R32G32B32A32_SFLOAT,
        I::Rgba32ui => vk::Format::R32G32B32A32_UINT,
        I::Rgba32i => vk::Format::R32G32B32A32_SINT,
        I::R32f => vk::Format::R32_SFLOAT,
        I::R32ui => vk::Format::R32_UINT,
        I::R32i => vk::Format::R32_SINT,
        I::Rg32f => vk::Format::R32G32_SFLOAT,
        I::Rg32ui => vk::Format::R32G32_UINT,
        I::Rg32i => vk::Format::R32G32_SINT,
        other => return Err(format!("{at}: storage format {other:?} is not drawn here")),
    };
    if t.is_multisampled {
        return Err(format!("{at}: a multisampled storage texture"));
    }
    Ok(TexShape { format, view: view_type(&t.dim, t.is_array, at)?, depth: false, storage: true })
}

/// The view type of an image of `dim` (arrayed or not).
fn view_type(dim: &spirq::spirv::Dim, array: bool, at: &str) -> Result<vk::ImageViewType, String> {
    use spirq::spirv::Dim;
    Ok(match (dim, array) {
        (Dim::Dim1D, false) => vk::ImageViewType::_1D,
        (Dim::Dim1D, true) => vk::ImageViewType::_1D_ARRAY,
        (Dim::Dim2D, false) => vk::ImageViewType::_2D,
        (Dim::Dim2D, true) => vk::ImageViewType::_2D_ARRAY,
        (Dim::DimCube, false) => vk::ImageViewType::CUBE,
        (Dim::DimCube, true) => vk::ImageViewType::CUBE_ARRAY,
        (Dim::Dim3D, false) => vk::ImageViewType::_3D,
        (d, _) => return Err(format!("{at}: image dimension {d:?} is not drawn here")),
    })
}

/// The type of one descriptor of a binding of type `ty` (an array of descriptors has no
/// stride).
fn descriptor_type(ty: &Type) -> &Type {
    match ty {
        Type::Array(a) if a.stride.is_none() => &a.element_ty,
        t => t,
    }
}

/// A buffer's bytes for type `ty` (a struct's members at their offsets), filled by type.
fn fill(ty: &Type) -> Vec<u8> {
    let ty = descriptor_type(ty);
    let size = type_size(ty);
    let mut out = vec![0u8; size];
    let mut counter = 0u64;
    put(ty, 0, &mut out, &mut counter, None);
    out
}

/// Bytes of a buffer of type `ty` (a runtime array with `RUNTIME_ELEMENTS`); saturating, so a
/// type too large to draw with is refused by size, not by an overflow.
fn type_size(ty: &Type) -> usize {
    match ty {
        Type::Struct(s) => {
            s.members.iter().map(|m| m.offset.unwrap_or(0).saturating_add(type_size(&m.ty))).max().unwrap_or(0)
        }
        Type::Array(a) => {
            let n = a.nelement.map_or(RUNTIME_ELEMENTS, |n| n as usize);
            let stride = a.stride.unwrap_or_else(|| type_size(&a.element_ty));
            stride.saturating_mul(n)
        }
        Type::Matrix(m) => m.stride.unwrap_or(16).saturating_mul(m.nvector as usize),
        Type::Vector(v) => scalar_size(&v.scalar_ty) * v.nscalar as usize,
        Type::Scalar(s) => scalar_size(s),
        _ => 16,
    }
}

/// Bytes of a scalar.
fn scalar_size(s: &ScalarType) -> usize {
    match s {
        ScalarType::Integer { bits, .. } | ScalarType::Float { bits } => (*bits as usize).div_ceil(8),
        _ => 4,
    }
}

/// Writes values of `ty` at `at`; `diagonal` is `Some((column, row))` inside a matrix.
fn put(ty: &Type, at: usize, out: &mut [u8], counter: &mut u64, diagonal: Option<(u32, u32)>) {
    match ty {
        Type::Struct(s) => {
            for m in &s.members {
                put(&m.ty, at.saturating_add(m.offset.unwrap_or(0)), out, counter, None);
            }
        }
        Type::Array(a) => {
            let n = a.nelement.map_or(RUNTIME_ELEMENTS, |n| n as usize);
            let stride = a.stride.unwrap_or_else(|| type_size(&a.element_ty));
            if stride == 0 {
                return; // elements of no size
            }
            // Elements past the end of `out` (sized by `type_size`) are not written.
            for i in 0..n {
                let Some(el) = i.checked_mul(stride).and_then(|o| o.checked_add(at)).filter(|&e| e < out.len()) else {
                    break;
                };
                put(&a.element_ty, el, out, counter, None);
            }
        }
        Type::Matrix(m) => {
            let stride = m.stride.unwrap_or(16);
            for c in 0..m.nvector {
                let v = Type::Vector(m.vector_ty.clone());
                put(&v, at.saturating_add(c as usize * stride), out, counter, Some((c, u32::MAX)));
            }
        }
        Type::Vector(v) => {
            let size = scalar_size(&v.scalar_ty);
            for i in 0..v.nscalar {
                let diag = diagonal.map(|(c, _)| (c, i));
                put(&Type::Scalar(v.scalar_ty.clone()), at.saturating_add(i as usize * size), out, counter, diag);
            }
        }
        Type::Scalar(s) => {
            *counter += 1;
            let bytes: Vec<u8> = match s {
                ScalarType::Float { bits: 32 } => {
                    let x = match diagonal {
                        Some((c, r)) if c == r => 1.0,
                        Some(_) => 0.0,
                        None => unit(*counter) + 0.25,
                    };
                    x.to_le_bytes().to_vec()
                }
                ScalarType::Integer { bits: 32, .. } => ((*counter % 4) as u32).to_le_bytes().to_vec(),
                _ => vec![0; scalar_size(s)],
            };
            if let Some(dst) = out.get_mut(at..at.saturating_add(bytes.len())) {
                dst.copy_from_slice(&bytes);
            }
        }
        _ => {}
    }
}

/// A vertex buffer's bytes: `VERTICES` (or `INSTANCES`) elements, attributes by format; with
/// `cover`, per-vertex ones make triangles that cover the target ([`DrawOptions::cover`]).
fn vertex_bytes(b: &VertexBufferLayout, cover: bool) -> Vec<u8> {
    let n = if b.step == StepMode::Instance { INSTANCES } else { VERTICES } as usize;
    let stride = (b.stride as usize).max(4);
    let mut out = vec![0u8; stride * n + 64];
    let mut attributes: Vec<_> = b.attributes.iter().collect();
    attributes.sort_by_key(|a| a.location);
    for v in 0..n {
        let mut columns = 0;
        for a in &attributes {
            let at = v * stride + a.offset as usize;
            let bytes = if b.step == StepMode::Instance && a.format == VertexFormat::Float32x4 {
                // Per-instance `vec4`s in location order are a transform's columns: the identity.
                let column = columns % 4;
                columns += 1;
                (0..4).flat_map(|r| if r == column { 1.0f32 } else { 0.0 }.to_le_bytes()).collect()
            } else {
                let source = if b.step == StepMode::Instance { v } else { source_vertex(v) };
                let mut bytes = attribute(a.format, (source * 31 + a.location as usize) as u64);
                let name = a.format.name();
                if cover && b.step == StepMode::Vertex && name.starts_with("float32") && !name.ends_with("x4") {
                    // Corners (-1, -1), (3, -1), (-1, 3): each triangle (source vertices 0–2,
                    // 3–5) covers clip space [-1, 1]².
                    let corner = [[-1.0f32, -1.0], [3.0, -1.0], [-1.0, 3.0]][source % 3];
                    for (c, x) in corner.iter().enumerate() {
                        if let Some(dst) = bytes.get_mut(4 * c..4 * c + 4) {
                            dst.copy_from_slice(&x.to_le_bytes());
                        }
                    }
                }
                bytes
            };
            if let Some(dst) = out.get_mut(at..at + bytes.len()) {
                dst.copy_from_slice(&bytes);
            }
        }
    }
    out
}

/// One vertex attribute's bytes in format `f`, from the `seed`th values of the sequence.
fn attribute(f: VertexFormat, seed: u64) -> Vec<u8> {
    let name = f.name();
    let components = name.rsplit('x').next().and_then(|n| n.parse::<usize>().ok()).unwrap_or(1);
    let mut out = Vec::new();
    for c in 0..components {
        let u = unit(seed * 7 + c as u64);
        if components == 4 && name.starts_with("float32") {
            // (1, 0, 0, 0): as skinning weights they sum to 1 exactly for any number of
            // influences, so skinning with identity joints moves nothing and depth stays 0.5
            // (an `equal` depth test after a prepass passes); a tangent or colour is constant.
            out.extend(if c == 0 { 1.0f32 } else { 0.0 }.to_le_bytes());
        } else if name.starts_with("float32") {
            // z (the third component) 0.5: with the identity matrices, every vertex at depth
            // 0.5, which a depth test of any kind passes against the clear value chosen for it.
            let x = if c == 2 { 0.5 } else { (u - 0.5) * 1.6 };
            out.extend(x.to_le_bytes());
        } else if name.starts_with("uint32") || name.starts_with("sint32") {
            out.extend(((seed + c as u64) as u32 % 4).to_le_bytes());
        } else if name.starts_with("uint16") || name.starts_with("sint16") {
            out.extend(((seed + c as u64) as u16 % 4).to_le_bytes());
        } else if name.starts_with("uint8") || name.starts_with("sint8") {
            out.push(((seed + c as u64) % 4) as u8);
        } else if name.starts_with("float16") {
            // As `float32`: texture coordinates spread over the texture.
            let x = if c == 2 { 0.5 } else { (u - 0.5) * 1.6 };
            out.extend(half(x).to_le_bytes());
        } else if name.contains("16") {
            out.extend(((u * 65535.0) as u16).to_le_bytes());
        } else {
            out.push((u * 255.0) as u8);
        }
    }
    if out.is_empty() {
        out.extend(0.5f32.to_le_bytes());
    }
    out
}

/// `x` as an IEEE half (truncated; magnitudes below 2^-14 flushed to zero, none above 1 here).
fn half(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    if exponent <= 0 {
        return sign;
    }
    sign | ((exponent.min(30) as u16) << 10) | ((bits >> 13) & 0x3ff) as u16
}

/// Under `GRANARY_VALIDATE=1` (the backend opened with the validation layer): an error listing
/// every WARNING or ERROR message whose id `GRANARY_VALIDATE_EXPECT` (comma-separated) does
/// not name; `Ok` without the layer.
pub fn validation_clean(backend: &granary_vulkan::VulkanBackend) -> Result<(), Error> {
    let Some(log) = backend.validation() else { return Ok(()) };
    let expected = std::env::var("GRANARY_VALIDATE_EXPECT").unwrap_or_default();
    let messages: Vec<String> = log
        .messages()
        .into_iter()
        .filter(|m| !expected.split(',').any(|id| id.trim() == m.id))
        .map(|m| format!("{} {}", m.id, m.text))
        .collect();
    if messages.is_empty() {
        Ok(())
    } else {
        Err(format!("the validation layer reported:\n{}", messages.join("\n")).into())
    }
}
