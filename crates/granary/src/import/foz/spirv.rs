//! SPIR-V helpers: Fossilize's varint word encoding, and the declared type of each
//! specialization constant (so a `VkSpecializationInfo` entry gets the right granary type).

use std::collections::HashMap;

/// Decodes `count` words, each written as a little-endian base-128 varint (7 bits a byte,
/// high bit set on every byte but the last), as Fossilize's `encode_varint` writes them.
/// `None` when the bytes run out, a word overflows 32 bits, or bytes are left over.
pub fn decode_varint(bytes: &[u8], count: usize) -> Option<Vec<u32>> {
    // Each word takes at least one byte: never reserve more words than there are bytes.
    let mut words = Vec::with_capacity(count.min(bytes.len()));
    let mut it = bytes.iter();
    for _ in 0..count {
        let mut w: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = *it.next()?;
            w |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 28 {
                return None;
            }
        }
        words.push(u32::try_from(w).ok()?);
    }
    it.next().is_none().then_some(words)
}

/// Encodes words as [`decode_varint`] reads them.
pub fn encode_varint(words: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(words.len() * 2);
    for &w in words {
        let mut w = w;
        while w >= 0x80 {
            out.push((w as u8 & 0x7f) | 0x80);
            w >>= 7;
        }
        out.push(w as u8);
    }
    out
}

/// The declared type of a specialization constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecType {
    /// `OpSpecConstantTrue`/`False`.
    Bool,
    /// 32-bit signed integer.
    I32,
    /// 32-bit unsigned integer.
    U32,
    /// 32-bit float.
    F32,
    /// Anything else (64-bit, 16-bit, …), with a description.
    Other(&'static str),
}

/// Maps each `SpecId` of a module to the type of its constant. Tolerates malformed words
/// (stops at the first bad instruction).
pub fn spec_types(words: &[u32]) -> HashMap<u32, SpecType> {
    const OP_TYPE_BOOL: u32 = 20;
    const OP_TYPE_INT: u32 = 21;
    const OP_TYPE_FLOAT: u32 = 22;
    const OP_SPEC_TRUE: u32 = 48;
    const OP_SPEC_FALSE: u32 = 49;
    const OP_SPEC_CONSTANT: u32 = 50;
    const OP_DECORATE: u32 = 71;
    const SPEC_ID: u32 = 1;
    let mut types: HashMap<u32, SpecType> = HashMap::new();
    let mut spec_ids: HashMap<u32, u32> = HashMap::new(); // result id -> SpecId
    let mut consts: HashMap<u32, SpecType> = HashMap::new(); // result id -> type
    let mut i = 5;
    while i < words.len() {
        let count = (words[i] >> 16) as usize;
        let op = words[i] & 0xffff;
        if count == 0 || i + count > words.len() {
            break;
        }
        let ins = &words[i..i + count];
        match op {
            OP_TYPE_BOOL if count >= 2 => {
                types.insert(ins[1], SpecType::Bool);
            }
            OP_TYPE_INT if count >= 4 => {
                let t = match (ins[2], ins[3]) {
                    (32, 1) => SpecType::I32,
                    (32, 0) => SpecType::U32,
                    (64, _) => SpecType::Other("64-bit integer"),
                    _ => SpecType::Other("integer narrower than 32 bits"),
                };
                types.insert(ins[1], t);
            }
            OP_TYPE_FLOAT if count >= 3 => {
                let t = match ins[2] {
                    32 => SpecType::F32,
                    64 => SpecType::Other("64-bit float"),
                    _ => SpecType::Other("16-bit float"),
                };
                types.insert(ins[1], t);
            }
            OP_SPEC_TRUE | OP_SPEC_FALSE if count >= 3 => {
                consts.insert(ins[2], SpecType::Bool);
            }
            OP_SPEC_CONSTANT if count >= 3 => {
                if let Some(t) = types.get(&ins[1]) {
                    consts.insert(ins[2], *t);
                }
            }
            OP_DECORATE if count >= 4 && ins[2] == SPEC_ID => {
                spec_ids.insert(ins[1], ins[3]);
            }
            _ => {}
        }
        i += count;
    }
    spec_ids.into_iter().filter_map(|(id, spec)| consts.get(&id).map(|t| (spec, *t))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_varint_round_trips_and_rejects_damage() {
        let words = [0u32, 1, 0x7f, 0x80, 0x3fff, 0x4000, 0x0723_0203, u32::MAX];
        let b = encode_varint(&words);
        assert_eq!(decode_varint(&b, words.len()).unwrap(), words);
        assert!(decode_varint(&b, words.len() + 1).is_none(), "runs out");
        assert!(decode_varint(&b[..b.len() - 1], words.len()).is_none(), "truncated");
        assert!(decode_varint(&[0xff, 0xff, 0xff, 0xff, 0x7f], 1).is_none(), "overflows 32 bits");
        assert!(decode_varint(&[1, 2], 1).is_none(), "left over");
    }
}
