//! Fossilize's varint encoding of SPIR-V words (shader modules are stored this way after the
//! JSON's NUL). The words themselves are the application's, copied unchanged.

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
