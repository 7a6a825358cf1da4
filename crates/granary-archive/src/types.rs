//! The small enums and sets an archive stores: shader stages, output targets, pipeline kinds.

/// A shader stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "lowercase"))]
pub enum ShaderStage {
    /// Vertex stage.
    Vertex = 0,
    /// Fragment stage.
    Fragment = 1,
    /// Compute stage.
    Compute = 2,
}

impl ShaderStage {
    /// From the stored discriminant.
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(ShaderStage::Vertex),
            1 => Some(ShaderStage::Fragment),
            2 => Some(ShaderStage::Compute),
            _ => None,
        }
    }
    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            ShaderStage::Vertex => "vertex",
            ShaderStage::Fragment => "fragment",
            ShaderStage::Compute => "compute",
        }
    }
}

impl std::fmt::Display for ShaderStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Number of output targets.
pub const TARGET_COUNT: usize = 4;

/// An output language for stage functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "lowercase"))]
pub enum Target {
    /// SPIR-V 1.0 binary (the default).
    Spirv = 0,
    /// Metal Shading Language 2.4 source.
    Msl = 1,
    /// HLSL shader model 6.0 source.
    Hlsl = 2,
    /// GLSL 4.50 core source.
    Glsl = 3,
}

impl Target {
    /// All targets in bit order.
    pub const ALL: [Target; TARGET_COUNT] = [Target::Spirv, Target::Msl, Target::Hlsl, Target::Glsl];

    /// Lowercase name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Target::Spirv => "spirv",
            Target::Msl => "msl",
            Target::Hlsl => "hlsl",
            Target::Glsl => "glsl",
        }
    }
    /// Parses a lowercase name.
    pub fn parse(s: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == s)
    }
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

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
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
            let t = Target::parse(part)
                .ok_or_else(|| format!("unknown target '{part}' (expected spirv, msl, hlsl, glsl)"))?;
            set |= 1 << t as u32;
        }
        if set == 0 {
            return Err("no target given".into());
        }
        Ok(TargetSet(set))
    }
}

/// The kind of a pipeline, as stored in archives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(rename_all = "lowercase"))]
pub enum PipelineKind {
    /// Render pipeline.
    Render = 0,
    /// Compute pipeline.
    Compute = 1,
}

impl PipelineKind {
    /// From the stored discriminant.
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(PipelineKind::Render),
            1 => Some(PipelineKind::Compute),
            _ => None,
        }
    }
    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            PipelineKind::Render => "render",
            PipelineKind::Compute => "compute",
        }
    }
}
