//! Specialization of a SPIR-V stage function: a `VkSpecializationInfo`, never a rewrite.
//!
//! A portable `FunctionDescriptor::Specialized` on a SPIR-V library becomes a
//! [`Specialization`] built from the module's reflected spec constants: `ConstantId::Id(n)` is
//! `constantID` n, `ConstantId::Name(s)` the spec constant whose `OpName` is `s`; each value is
//! 4 bytes (bool as a `VkBool32`, i32/u32/f32 as themselves), laid out in constant-id order
//! with map entries in that order. A native stage's specialization is taken as the
//! application gave it, after checking it: entries inside the data with sizes Vulkan allows,
//! and for each constant the module declares, the size of its type.

use super::super::error::{ShaderError, ShaderErrorKind};
use super::reflect::{EntryReflection, SpecConstant, SpecType};
use crate::descriptor::{Constant, ConstantId, ConstantValue};
use granary_archive::native::{Specialization, SpecializationMapEntry};

fn constant_error(file: &str, message: String) -> ShaderError {
    ShaderError::new(file, ShaderErrorKind::Constant, message)
}

/// The module's spec constants, for messages: `NAME (id N, TYPE)`.
fn listing(ep: &EntryReflection) -> String {
    if ep.spec_constants.is_empty() {
        return "none".into();
    }
    let items: Vec<String> = ep
        .spec_constants
        .iter()
        .map(|c| match &c.name {
            Some(n) => format!("{n} (id {}, {})", c.id, c.ty.name()),
            None => format!("id {} ({})", c.id, c.ty.name()),
        })
        .collect();
    items.join(", ")
}

/// The spec constant `id` names in `ep`; a `Constant` error naming it otherwise.
fn find<'a>(ep: &'a EntryReflection, id: &ConstantId, file: &str) -> Result<&'a SpecConstant, ShaderError> {
    let found: Vec<&SpecConstant> = match id {
        ConstantId::Id(n) => ep.spec_constants.iter().filter(|c| c.id == u32::from(*n)).collect(),
        ConstantId::Name(s) => ep.spec_constants.iter().filter(|c| c.name.as_deref() == Some(s.as_str())).collect(),
    };
    match found[..] {
        [c] => Ok(c),
        [] => Err(constant_error(
            file,
            format!("no specialization constant {id} in this module (spec constants: {})", listing(ep)),
        )),
        _ => Err(constant_error(
            file,
            format!(
                "{id} names {} specialization constants (spec constants: {}); give its id",
                found.len(),
                listing(ep)
            ),
        )),
    }
}

/// The 4 bytes a constant value takes in `VkSpecializationInfo` (bool as a `VkBool32`).
pub fn value_bytes(v: ConstantValue) -> [u8; 4] {
    match v {
        ConstantValue::Bool(b) => u32::from(b).to_le_bytes(),
        ConstantValue::I32(x) => x.to_le_bytes(),
        ConstantValue::U32(x) => x.to_le_bytes(),
        ConstantValue::F32(x) => x.to_bits().to_le_bytes(),
    }
}

/// The `VkSpecializationInfo` for the portable `constants` (resolved, each at most once) of
/// entry point `ep`; `None` when there are none.
pub fn from_constants(
    ep: &EntryReflection,
    constants: &[Constant],
    file: &str,
) -> Result<Option<Specialization>, ShaderError> {
    let mut values: Vec<(u32, [u8; 4])> = Vec::with_capacity(constants.len());
    for c in constants {
        let spec = find(ep, &c.id, file)?;
        if spec.ty.name() != c.value.type_name() {
            return Err(constant_error(
                file,
                format!(
                    "specialization constant {} ({}id {}) has type {}, but the constant gives a {}",
                    c.id,
                    spec.name.as_deref().map(|n| format!("{n}, ")).unwrap_or_default(),
                    spec.id,
                    spec.ty.name(),
                    c.value.type_name()
                ),
            ));
        }
        if values.iter().any(|(id, _)| *id == spec.id) {
            return Err(constant_error(
                file,
                format!("specialization constant id {} is given twice ({})", spec.id, c.id),
            ));
        }
        values.push((spec.id, value_bytes(c.value)));
    }
    if values.is_empty() {
        return Ok(None);
    }
    values.sort_by_key(|v| v.0);
    let mut s =
        Specialization { map_entries: Vec::with_capacity(values.len()), data: Vec::with_capacity(4 * values.len()) };
    for (id, bytes) in values {
        s.map_entries.push(SpecializationMapEntry { constant_id: id, offset: s.data.len() as u32, size: 4 });
        s.data.extend_from_slice(&bytes);
    }
    Ok(Some(s))
}

/// Checks a native stage's `VkSpecializationInfo` against entry point `ep`: the map entries
/// fit the data with sizes of 1, 2, 4 or 8 bytes, and an entry for a constant the module
/// declares has that constant's size (Vulkan's `VUID-VkSpecializationMapEntry-constantID-00776`).
/// Entries for constants the module does not declare are allowed (Vulkan ignores them).
pub fn check_native(ep: &EntryReflection, s: &Specialization, file: &str) -> Result<(), ShaderError> {
    s.check().map_err(|m| constant_error(file, m))?;
    for (i, m) in s.map_entries.iter().enumerate() {
        if let Some(c) = ep.spec_constants.iter().find(|c| c.id == m.constant_id) {
            if c.ty.size().is_some_and(|size| size != m.size) {
                return Err(constant_error(
                    file,
                    format!(
                        "specialization map entry {i}: constant {} ({}{}) takes {} bytes, the entry gives {}",
                        m.constant_id,
                        c.name.as_deref().map(|n| format!("{n}, ")).unwrap_or_default(),
                        c.ty.name(),
                        c.ty.size().unwrap_or(0),
                        m.size
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The value of each of `ep`'s spec constants that `s` sets (the last entry for an id wins,
/// as the data says), with its type; constants of other types are left out.
pub fn values(ep: &EntryReflection, s: &Specialization) -> Vec<(u32, ConstantValue)> {
    let mut out: Vec<(u32, ConstantValue)> = Vec::new();
    for m in &s.map_entries {
        let Some(c) = ep.spec_constants.iter().find(|c| c.id == m.constant_id) else { continue };
        let start = m.offset as usize;
        let Some(b) = s.data.get(start..start.saturating_add(4)).filter(|_| m.size == 4) else { continue };
        let word = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let v = match c.ty {
            SpecType::Bool => ConstantValue::Bool(word != 0),
            SpecType::I32 => ConstantValue::I32(word as i32),
            SpecType::U32 => ConstantValue::U32(word),
            SpecType::F32 => ConstantValue::F32(f32::from_bits(word)),
            SpecType::Other(_) => continue,
        };
        out.retain(|(id, _)| *id != c.id);
        out.push((c.id, v));
    }
    out.sort_by_key(|v| v.0);
    out
}

/// A value as spirq's reflection takes it.
pub fn spirq_value(v: ConstantValue) -> spirq::constant::ConstantValue {
    match v {
        ConstantValue::Bool(b) => spirq::constant::ConstantValue::Bool(b),
        ConstantValue::I32(x) => spirq::constant::ConstantValue::S32(x),
        ConstantValue::U32(x) => spirq::constant::ConstantValue::U32(x),
        ConstantValue::F32(x) => spirq::constant::ConstantValue::from(x),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::ShaderStage;

    fn entry() -> EntryReflection {
        EntryReflection {
            name: "main".into(),
            stage: ShaderStage::Fragment,
            inputs: vec![],
            outputs: vec![],
            bindings: vec![],
            aliased: vec![],
            conflicts: vec![],
            push_constant_size: None,
            runtime_sized: false,
            spec_constants: vec![
                SpecConstant { id: 0, name: Some("MODEL".into()), ty: SpecType::I32 },
                SpecConstant { id: 3, name: Some("ON".into()), ty: SpecType::Bool },
                SpecConstant { id: 7, name: None, ty: SpecType::Other("f64".into()) },
            ],
            workgroup_size: None,
        }
    }

    #[test]
    fn portable_constants_become_a_specialization_in_id_order() {
        let ep = entry();
        let c = |id, value| Constant { id, value };
        let s = from_constants(
            &ep,
            &[
                c(ConstantId::Name("ON".into()), ConstantValue::Bool(true)),
                c(ConstantId::Id(0), ConstantValue::I32(-2)),
            ],
            "f",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            s.map_entries,
            vec![
                SpecializationMapEntry { constant_id: 0, offset: 0, size: 4 },
                SpecializationMapEntry { constant_id: 3, offset: 4, size: 4 }
            ]
        );
        assert_eq!(s.data, [(-2i32).to_le_bytes(), 1u32.to_le_bytes()].concat());
        assert_eq!(values(&ep, &s), vec![(0, ConstantValue::I32(-2)), (3, ConstantValue::Bool(true))]);
        assert!(from_constants(&ep, &[], "f").unwrap().is_none());
        // Unknown ids and names, type mismatches: named.
        let e = from_constants(&ep, &[c(ConstantId::Id(5), ConstantValue::U32(1))], "f").unwrap_err();
        assert_eq!(e.kind, ShaderErrorKind::Constant);
        assert!(e.message.contains("@id(5)") && e.message.contains("MODEL (id 0, i32)"), "{e}");
        let e = from_constants(&ep, &[c(ConstantId::Name("MODEL".into()), ConstantValue::U32(1))], "f").unwrap_err();
        assert!(e.message.contains("has type i32, but the constant gives a u32"), "{e}");
        let e = from_constants(&ep, &[c(ConstantId::Id(7), ConstantValue::F32(1.0))], "f").unwrap_err();
        assert!(e.message.contains("has type f64"), "{e}");
    }

    #[test]
    fn native_specializations_are_checked_not_changed() {
        let ep = entry();
        let entry = |constant_id, offset, size| SpecializationMapEntry { constant_id, offset, size };
        let ok = Specialization { map_entries: vec![entry(7, 0, 8), entry(99, 0, 2)], data: vec![0; 8] };
        check_native(&ep, &ok, "f").unwrap();
        let wrong_size = Specialization { map_entries: vec![entry(3, 0, 1)], data: vec![1] };
        let e = check_native(&ep, &wrong_size, "f").unwrap_err();
        assert!(e.message.contains("constant 3 (ON, bool) takes 4 bytes, the entry gives 1"), "{e}");
        let outside = Specialization { map_entries: vec![entry(0, 4, 4)], data: vec![0; 4] };
        assert_eq!(check_native(&ep, &outside, "f").unwrap_err().kind, ShaderErrorKind::Constant);
    }
}
