//! Typed reads of Fossilize's JSON create infos, each error naming the field's path inside the
//! recorded object (`rasterizationState.pNext[0].lineStipplePattern: …`). Fossilize writes
//! every member of a structure it records, so a missing member is an error, never a default;
//! `VkBool32` is a number 0 or 1; a `pNext` chain is an array of objects with an `sType`.

use serde_json::{Map, Value};

/// Names of `pNext` structures granary's native model does not have, for messages (the
/// number is always given; the name where it is one of these).
fn stype_name(stype: u64) -> Option<&'static str> {
    Some(match stype {
        1000156001 => "VkSamplerYcbcrConversionInfo",
        1000287000 => "VkSamplerCustomBorderColorCreateInfoEXT",
        1000411001 => "VkSamplerBorderColorComponentMappingCreateInfoEXT",
        1000226000 => "VkFragmentShadingRateAttachmentInfoKHR",
        1000226001 => "VkPipelineFragmentShadingRateStateCreateInfoKHR",
        1000148002 => "VkPipelineColorBlendAdvancedStateCreateInfoEXT",
        1000381001 => "VkPipelineColorWriteCreateInfoEXT",
        1000143002 => "VkPipelineSampleLocationsStateCreateInfoEXT",
        1000099001 => "VkPipelineDiscardRectangleStateCreateInfoEXT",
        1000351002 => "VkMutableDescriptorTypeCreateInfoEXT",
        1000241001 => "VkAttachmentReferenceStencilLayout",
        1000241002 => "VkAttachmentDescriptionStencilLayout",
        1000199001 => "VkSubpassDescriptionDepthStencilResolve",
        1000117001 => "VkRenderPassInputAttachmentAspectCreateInfo",
        1000470005 => "VkPipelineCreateFlags2CreateInfo",
        1000068000 => "VkPipelineRobustnessCreateInfo",
        1000192000 => "VkPipelineCreationFeedbackCreateInfo",
        1000462002 => "VkPipelineShaderStageModuleIdentifierCreateInfoEXT",
        16 => "VkShaderModuleCreateInfo",
        _ => return None,
    })
}

/// A recorded JSON object and its path (for messages).
#[derive(Clone)]
pub(super) struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

impl<'a> Obj<'a> {
    /// `v`, which must be an object, known as `path`.
    pub fn new(v: &'a Value, path: impl Into<String>) -> Result<Self, String> {
        let path = path.into();
        match v.as_object() {
            Some(map) => Ok(Obj { map, path }),
            None => Err(format!("{path}: not an object")),
        }
    }

    /// The path of member `k`.
    pub fn at(&self, k: &str) -> String {
        if self.path.is_empty() {
            k.to_string()
        } else {
            format!("{}.{k}", self.path)
        }
    }

    /// The object's own path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Member `k` unless absent or `null`.
    pub fn opt(&self, k: &str) -> Option<&'a Value> {
        self.map.get(k).filter(|v| !v.is_null())
    }

    fn req(&self, k: &str) -> Result<&'a Value, String> {
        self.opt(k).ok_or_else(|| format!("{}: missing", self.at(k)))
    }

    /// An unsigned 32-bit member.
    pub fn u32(&self, k: &str) -> Result<u32, String> {
        let v = self.req(k)?;
        v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| format!("{}: {v} is not a uint32_t", self.at(k)))
    }

    /// A signed 32-bit member.
    pub fn i32(&self, k: &str) -> Result<i32, String> {
        let v = self.req(k)?;
        v.as_i64().and_then(|n| i32::try_from(n).ok()).ok_or_else(|| format!("{}: {v} is not an int32_t", self.at(k)))
    }

    /// A `float` member (finite, as JSON holds it).
    pub fn f32(&self, k: &str) -> Result<f32, String> {
        let v = self.req(k)?;
        v.as_f64()
            .map(|f| f as f32)
            .filter(|f| f.is_finite())
            .ok_or_else(|| format!("{}: {v} is not a float", self.at(k)))
    }

    /// A `VkBool32` member.
    pub fn bool(&self, k: &str) -> Result<bool, String> {
        match self.req(k)? {
            Value::Bool(b) => Ok(*b),
            v => match v.as_u64() {
                Some(0) => Ok(false),
                Some(1) => Ok(true),
                _ => Err(format!("{}: {v} is not a VkBool32 (0 or 1)", self.at(k))),
            },
        }
    }

    /// A string member.
    pub fn str(&self, k: &str) -> Result<&'a str, String> {
        let v = self.req(k)?;
        v.as_str().ok_or_else(|| format!("{}: {v} is not a string", self.at(k)))
    }

    /// A handle member: 16 hex digits (0 is `VK_NULL_HANDLE`).
    pub fn handle(&self, k: &str) -> Result<u64, String> {
        let v = self.req(k)?;
        v.as_str()
            .and_then(|s| u64::from_str_radix(s, 16).ok())
            .ok_or_else(|| format!("{}: {v} is not a handle (16 hex digits)", self.at(k)))
    }

    /// A member that must be an object.
    pub fn obj(&self, k: &str) -> Result<Obj<'a>, String> {
        Obj::new(self.req(k)?, self.at(k))
    }

    /// An optional object member (`None`: absent or `null`, a null pointer).
    pub fn opt_obj(&self, k: &str) -> Result<Option<Obj<'a>>, String> {
        self.opt(k).map(|v| Obj::new(v, self.at(k))).transpose()
    }

    /// An array member of objects (absent or `null`: empty, a null pointer).
    pub fn objs(&self, k: &str) -> Result<Vec<Obj<'a>>, String> {
        self.items(k)?.iter().enumerate().map(|(i, v)| Obj::new(v, format!("{}[{i}]", self.at(k)))).collect()
    }

    fn items(&self, k: &str) -> Result<&'a [Value], String> {
        match self.opt(k) {
            None => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(v) => Err(format!("{}: {v} is not an array", self.at(k))),
        }
    }

    /// An array member of `uint32_t` (absent or `null`: empty).
    pub fn u32s(&self, k: &str) -> Result<Vec<u32>, String> {
        self.items(k)?
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| format!("{}[{i}]: {v} is not a uint32_t", self.at(k)))
            })
            .collect()
    }

    /// An array member of `int32_t` (absent or `null`: empty).
    pub fn i32s(&self, k: &str) -> Result<Vec<i32>, String> {
        self.items(k)?
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| format!("{}[{i}]: {v} is not an int32_t", self.at(k)))
            })
            .collect()
    }

    /// An array member of handles (absent or `null`: empty).
    pub fn handles(&self, k: &str) -> Result<Vec<u64>, String> {
        self.items(k)?
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .and_then(|s| u64::from_str_radix(s, 16).ok())
                    .ok_or_else(|| format!("{}[{i}]: {v} is not a handle (16 hex digits)", self.at(k)))
            })
            .collect()
    }

    /// The `pNext` chain, each structure by its `sType`, checked against `known`: a structure
    /// of another type is what granary's native model does not have, and the error names it.
    pub fn chain(&self, known: &[u64]) -> Result<Chain<'a>, String> {
        let mut out = Vec::new();
        for s in self.objs("pNext")? {
            let stype = s.opt("sType").and_then(Value::as_u64).ok_or_else(|| format!("{}: no sType", s.path))?;
            if !known.contains(&stype) {
                let name = stype_name(stype).map(|n| format!(" ({n})")).unwrap_or_default();
                return Err(format!(
                    "{}: pNext structure sType {stype}{name} is not in granary's native model",
                    s.path
                ));
            }
            if out.iter().any(|(t, _)| *t == stype) {
                return Err(format!("{}: sType {stype} is chained twice", s.path));
            }
            out.push((stype, s));
        }
        Ok(Chain(out))
    }
}

/// A checked `pNext` chain.
pub(super) struct Chain<'a>(Vec<(u64, Obj<'a>)>);

impl<'a> Chain<'a> {
    /// The structure of type `stype`, if chained.
    pub fn get(&self, stype: u64) -> Option<&Obj<'a>> {
        self.0.iter().find(|(t, _)| *t == stype).map(|(_, o)| o)
    }
}
