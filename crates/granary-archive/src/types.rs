//! The small enums and sets an archive stores: shader stages, output targets, pipeline kinds.

stored_enum!(
    /// A shader stage.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum ShaderStage: u32 {
        /// Vertex stage.
        Vertex = 0 => "vertex",
        /// Fragment stage.
        Fragment = 1 => "fragment",
        /// Compute stage.
        Compute = 2 => "compute",
        /// Tessellation control stage (Vulkan's `TESSELLATION_CONTROL`; HLSL's hull shader).
        TessellationControl = 3 => "tessellation_control",
        /// Tessellation evaluation stage (HLSL's domain shader).
        TessellationEvaluation = 4 => "tessellation_evaluation",
        /// Geometry stage.
        Geometry = 5 => "geometry",
        /// Task stage (`VK_EXT_mesh_shader`; HLSL's amplification shader).
        Task = 6 => "task",
        /// Mesh stage (`VK_EXT_mesh_shader`).
        Mesh = 7 => "mesh",
        /// Ray generation stage (`VK_KHR_ray_tracing_pipeline`).
        RayGeneration = 8 => "ray_generation",
        /// Any-hit stage.
        AnyHit = 9 => "any_hit",
        /// Closest-hit stage.
        ClosestHit = 10 => "closest_hit",
        /// Miss stage.
        Miss = 11 => "miss",
        /// Intersection stage.
        Intersection = 12 => "intersection",
        /// Callable stage.
        Callable = 13 => "callable",
    }
);

impl ShaderStage {
    /// Whether this is one of the six ray-tracing stages (`VK_KHR_ray_tracing_pipeline`).
    pub fn is_ray_tracing(self) -> bool {
        matches!(
            self,
            ShaderStage::RayGeneration
                | ShaderStage::AnyHit
                | ShaderStage::ClosestHit
                | ShaderStage::Miss
                | ShaderStage::Intersection
                | ShaderStage::Callable
        )
    }
}

/// Number of output targets.
pub const TARGET_COUNT: usize = 4;

stored_enum!(
    /// An output language for stage functions (`ALL` is in bit order).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum Target: u32 {
        /// SPIR-V 1.0 binary (the default).
        Spirv = 0 => "spirv",
        /// Metal Shading Language 2.4 source.
        Msl = 1 => "msl",
        /// HLSL shader model 6.0 source.
        Hlsl = 2 => "hlsl",
        /// GLSL 4.50 core source.
        Glsl = 3 => "glsl",
    }
);

const _: () = assert!(Target::ALL.len() == TARGET_COUNT);

impl Target {
    /// File extension for extracted outputs.
    pub fn extension(self) -> &'static str {
        match self {
            Target::Spirv => "spv",
            Target::Msl => "metal",
            Target::Hlsl => "hlsl",
            Target::Glsl => "glsl",
        }
    }
}

/// A set of targets, as a bit mask (bit i = `Target::ALL[i]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TargetSet(pub u32);

impl TargetSet {
    /// SPIR-V only.
    pub const SPIRV: TargetSet = TargetSet(1);

    /// From a list.
    pub fn of(targets: &[Target]) -> Self {
        TargetSet(targets.iter().fold(0, |m, t| m | (1 << *t as u32)))
    }
    /// Whether `t` is in the set.
    pub fn contains(self, t: Target) -> bool {
        self.0 & (1 << t as u32) != 0
    }
    /// The members in bit order.
    pub fn iter(self) -> impl Iterator<Item = Target> {
        Target::ALL.into_iter().filter(move |t| self.contains(*t))
    }
    /// Whether only known bits are set.
    pub fn is_valid(self) -> bool {
        self.0 & !((1 << TARGET_COUNT) - 1) == 0
    }
    /// Comma-separated names.
    pub fn names(self) -> String {
        self.iter().map(|t| t.name()).collect::<Vec<_>>().join(",")
    }
    /// Parses comma-separated names.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut set = 0;
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let t = Target::from_name(part)
                .ok_or_else(|| format!("unknown target '{part}' (expected spirv, msl, hlsl, glsl)"))?;
            set |= 1 << t as u32;
        }
        if set == 0 {
            return Err("no target given".into());
        }
        Ok(TargetSet(set))
    }
}

stored_enum!(
    /// The kind of a pipeline, as stored in archives.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum PipelineKind: u32 {
        /// Render pipeline.
        Render = 0 => "render",
        /// Compute pipeline.
        Compute = 1 => "compute",
        /// Ray-tracing pipeline (`VK_KHR_ray_tracing_pipeline`; native form only).
        RayTracing = 2 => "ray_tracing",
    }
);
