//! Stage function descriptors: a library function, optionally specialized with constants.

use super::key::{Canonical, Encoder};
use super::library::Library;
use std::sync::Arc;

/// How a specialization constant is addressed: by its WGSL `override` name or its `@id`;
/// on a SPIR-V library, by the `OpName` of its spec constant or its `SpecId` (the
/// `constantID` of the `VkSpecializationInfo` the front end builds).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConstantId {
    /// The override's name (SPIR-V: the spec constant's `OpName`).
    Name(String),
    /// The override's numeric `@id(n)` (SPIR-V: its `SpecId`).
    Id(u16),
}

impl ConstantId {
    /// The spelling naga's override processing expects: the name, or the id in decimal.
    pub fn naga_key(&self) -> String {
        match self {
            ConstantId::Name(n) => n.clone(),
            ConstantId::Id(i) => i.to_string(),
        }
    }
}

impl std::fmt::Display for ConstantId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConstantId::Name(n) => write!(f, "'{n}'"),
            ConstantId::Id(i) => write!(f, "@id({i})"),
        }
    }
}

/// A typed constant value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConstantValue {
    /// `bool`
    Bool(bool),
    /// `i32`
    I32(i32),
    /// `u32`
    U32(u32),
    /// `f32`
    F32(f32),
}

impl ConstantValue {
    /// The value as naga's override processing takes it.
    pub fn as_f64(self) -> f64 {
        match self {
            ConstantValue::Bool(b) => f64::from(u8::from(b)),
            ConstantValue::I32(v) => f64::from(v),
            ConstantValue::U32(v) => f64::from(v),
            ConstantValue::F32(v) => f64::from(v),
        }
    }
    /// The type's name as WGSL spells it.
    pub fn type_name(self) -> &'static str {
        match self {
            ConstantValue::Bool(_) => "bool",
            ConstantValue::I32(_) => "i32",
            ConstantValue::U32(_) => "u32",
            ConstantValue::F32(_) => "f32",
        }
    }
}

/// One specialization constant.
#[derive(Clone, Debug, PartialEq)]
pub struct Constant {
    /// Which override it sets.
    pub id: ConstantId,
    /// The value, with its type.
    pub value: ConstantValue,
}

/// A stage function: an entry point in a library, or such a function specialized with
/// constant values (Metal's `MTL4LibraryFunctionDescriptor` / `MTL4SpecializedFunctionDescriptor`,
/// Vulkan's module + `pName` + `VkSpecializationInfo`).
#[derive(Clone, Debug)]
pub enum FunctionDescriptor {
    /// An entry point of a library.
    Library {
        /// The library that defines the function.
        library: Arc<Library>,
        /// The entry point's name.
        name: String,
    },
    /// A library function with specialization constants applied.
    Specialized {
        /// The function being specialized (itself a `Library` descriptor).
        function: Box<FunctionDescriptor>,
        /// Constant values; order does not matter, each override at most once.
        constants: Vec<Constant>,
        /// A name for the specialized function, for messages only (not part of any key).
        specialized_name: Option<String>,
    },
}

impl FunctionDescriptor {
    /// A plain library function.
    pub fn library(library: Arc<Library>, name: impl Into<String>) -> Self {
        FunctionDescriptor::Library { library, name: name.into() }
    }

    /// This function specialized with `constants`.
    pub fn specialized(self, constants: Vec<Constant>) -> Self {
        FunctionDescriptor::Specialized { function: Box::new(self), constants, specialized_name: None }
    }

    /// The library and entry point at the root of this descriptor.
    pub fn base(&self) -> (&Arc<Library>, &str) {
        match self {
            FunctionDescriptor::Library { library, name } => (library, name),
            FunctionDescriptor::Specialized { function, .. } => function.base(),
        }
    }

    /// All constants, outer specializations overriding inner ones, sorted by id: the canonical
    /// form used for keys and for override processing.
    pub fn resolved_constants(&self) -> Vec<Constant> {
        let mut out: Vec<Constant> = Vec::new();
        self.collect_constants(&mut out);
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    fn collect_constants(&self, out: &mut Vec<Constant>) {
        if let FunctionDescriptor::Specialized { function, constants, .. } = self {
            function.collect_constants(out);
            for c in constants {
                match out.iter_mut().find(|o| o.id == c.id) {
                    Some(o) => o.value = c.value,
                    None => out.push(c.clone()),
                }
            }
        }
    }

    /// A short human description: `library:entry` plus constants.
    pub fn describe(&self) -> String {
        let (lib, name) = self.base();
        let consts = self.resolved_constants();
        if consts.is_empty() {
            format!("{}:{}", lib.name(), name)
        } else {
            let c: Vec<String> = consts.iter().map(|c| format!("{}={:?}", c.id, c.value)).collect();
            format!("{}:{} [{}]", lib.name(), name, c.join(", "))
        }
    }
}

impl Canonical for Constant {
    fn encode(&self, e: &mut Encoder) {
        match &self.id {
            ConstantId::Name(n) => {
                e.u8(0);
                e.str(n);
            }
            ConstantId::Id(i) => {
                e.u8(1);
                e.u32(u32::from(*i));
            }
        }
        match self.value {
            ConstantValue::Bool(b) => {
                e.u8(0);
                e.bool(b)
            }
            ConstantValue::I32(v) => {
                e.u8(1);
                e.i32(v)
            }
            ConstantValue::U32(v) => {
                e.u8(2);
                e.u32(v)
            }
            ConstantValue::F32(v) => {
                e.u8(3);
                e.f32(v)
            }
        }
    }
}
