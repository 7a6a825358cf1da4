//! The byte codec of the native Vulkan state (docs/FORMAT.md §1.13): one canonical encoding,
//! used both as the archive's bytes and as the pipeline key's input, so the key is a function
//! of exactly what is stored and what the driver is handed.
//!
//! Every value writes itself in field order: `u32`/`i32` as 4 little-endian bytes, `f32` as
//! its 4 bit-pattern bytes (exactly what the driver sees: no NaN folding, `-0.0` is not
//! `0.0`), `bool` as one byte 0 or 1, `Option<T>` as a tag byte (0 none, 1 some) then the
//! value, `Vec<T>` as a `u32` count then the items, `[T; N]` as N items.
//!
//! *Invariants:* `decode(encode(v)) == v` and `decode` refuses every byte `encode` does not
//! write (tags other than 0/1, trailing bytes, counts the remaining bytes cannot hold). A count
//! is checked against the bytes left divided by the item's smallest encoding
//! ([`Codec::MIN`]) before anything is allocated, so a damaged blob never allocates more than
//! a small multiple of its own size.

/// Why native-state bytes were refused: the byte offset (relative to the blob) and the field
/// being read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeStateError {
    /// Byte offset within the blob.
    pub offset: usize,
    /// The field being read (`rasterizationState.polygonMode`, …), or the structure.
    pub field: &'static str,
    /// What is wrong.
    pub message: &'static str,
}

impl std::fmt::Display for NativeStateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "native Vulkan state, byte {} ({}): {}", self.offset, self.field, self.message)
    }
}

impl std::error::Error for NativeStateError {}

/// A cursor over bytes being decoded.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    field: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0, field: "header" }
    }
    /// Names the field read next (for errors).
    pub(crate) fn field(&mut self, name: &'static str) {
        self.field = name;
    }
    pub(crate) fn error(&self, message: &'static str) -> NativeStateError {
        NativeStateError { offset: self.at, field: self.field, message }
    }
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], NativeStateError> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len()).ok_or_else(|| self.error("cut short"))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    pub(crate) fn left(&self) -> usize {
        self.bytes.len() - self.at
    }
    pub(crate) fn finish(&self) -> Result<(), NativeStateError> {
        if self.at == self.bytes.len() {
            Ok(())
        } else {
            Err(self.error("trailing bytes"))
        }
    }
}

/// A value of the native state: its canonical bytes and their checked inverse.
pub(crate) trait Codec: Sized {
    /// The fewest bytes any value of the type encodes to.
    const MIN: usize;
    /// Appends the canonical bytes.
    fn put(&self, o: &mut Vec<u8>);
    /// Reads one value.
    fn get(r: &mut Reader<'_>) -> Result<Self, NativeStateError>;
}

impl Codec for u32 {
    const MIN: usize = 4;
    fn put(&self, o: &mut Vec<u8>) {
        o.extend_from_slice(&self.to_le_bytes());
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, NativeStateError> {
        let b = r.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

impl Codec for i32 {
    const MIN: usize = 4;
    fn put(&self, o: &mut Vec<u8>) {
        o.extend_from_slice(&self.to_le_bytes());
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, NativeStateError> {
        u32::get(r).map(|v| v as i32)
    }
}

impl Codec for f32 {
    const MIN: usize = 4;
    fn put(&self, o: &mut Vec<u8>) {
        self.to_bits().put(o)
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, NativeStateError> {
        u32::get(r).map(f32::from_bits)
    }
}

impl Codec for u8 {
    const MIN: usize = 1;
    fn put(&self, o: &mut Vec<u8>) {
        o.push(*self)
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, NativeStateError> {
        Ok(r.take(1)?[0])
    }
}

impl Codec for bool {
    const MIN: usize = 1;
    fn put(&self, o: &mut Vec<u8>) {
        o.push(u8::from(*self))
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, NativeStateError> {
        match r.take(1)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(r.error("a boolean is 0 or 1")),
        }
    }
}

impl<T: Codec> Codec for Option<T> {
    const MIN: usize = 1;
    fn put(&self, o: &mut Vec<u8>) {
        match self {
            None => o.push(0),
            Some(v) => {
                o.push(1);
                v.put(o)
            }
        }
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, NativeStateError> {
        match r.take(1)?[0] {
            0 => Ok(None),
            1 => T::get(r).map(Some),
            _ => Err(r.error("an optional value's tag is 0 or 1")),
        }
    }
}

impl<T: Codec> Codec for Vec<T> {
    const MIN: usize = 4;
    fn put(&self, o: &mut Vec<u8>) {
        (self.len() as u32).put(o);
        for v in self {
            v.put(o)
        }
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, NativeStateError> {
        let n = u32::get(r)? as usize;
        if n > r.left() / T::MIN.max(1) {
            return Err(r.error("count exceeds the bytes"));
        }
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(T::get(r)?);
        }
        Ok(v)
    }
}

impl<T: Codec + Copy + Default, const N: usize> Codec for [T; N] {
    const MIN: usize = T::MIN * N;
    fn put(&self, o: &mut Vec<u8>) {
        for v in self {
            v.put(o)
        }
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, NativeStateError> {
        let mut a = [T::default(); N];
        for v in &mut a {
            *v = T::get(r)?;
        }
        Ok(a)
    }
}

/// Declares a plain-data structure of the native state with its codec (fields in declaration
/// order) and, with the `serde` feature, its JSON spelling: Vulkan's member names
/// (`camelCase`), unknown fields refused, absent fields at their default.
macro_rules! native_struct {
    (
        $(#[$m:meta])*
        pub struct $name:ident {
            $( $(#[$fm:meta])* pub $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Debug, Default, PartialEq)]
        #[cfg_attr(
            feature = "serde",
            derive(serde::Serialize, serde::Deserialize),
            serde(rename_all = "camelCase", deny_unknown_fields, default)
        )]
        pub struct $name {
            $( $(#[$fm])* pub $field: $ty ),*
        }

        impl $crate::native::codec::Codec for $name {
            const MIN: usize = 0 $( + <$ty as $crate::native::codec::Codec>::MIN )*;
            fn put(&self, o: &mut Vec<u8>) {
                $( $crate::native::codec::Codec::put(&self.$field, o); )*
            }
            fn get(
                r: &mut $crate::native::codec::Reader<'_>,
            ) -> Result<Self, $crate::native::codec::NativeStateError> {
                Ok($name {
                    $( $field: {
                        r.field(concat!(stringify!($name), ".", stringify!($field)));
                        $crate::native::codec::Codec::get(r)?
                    } ),*
                })
            }
        }
    };
}

pub(crate) use native_struct;

#[cfg(test)]
mod tests {
    use super::*;

    native_struct!(
        /// A test structure.
        pub struct T {
            /// a
            pub a: u32,
            /// b
            pub b: Option<bool>,
            /// c
            pub c: Vec<[f32; 2]>,
        }
    );

    #[test]
    fn round_trips_and_refuses_what_it_never_writes() {
        let v = T { a: 7, b: Some(true), c: vec![[1.0, -0.0], [f32::NAN, 2.5]] };
        let mut bytes = Vec::new();
        v.put(&mut bytes);
        let mut r = Reader::new(&bytes);
        let back = T::get(&mut r).unwrap();
        r.finish().unwrap();
        assert_eq!(back.a, 7);
        assert_eq!(back.b, Some(true));
        // Bit patterns survive (NaN and -0.0 included).
        assert_eq!(back.c[0][1].to_bits(), (-0.0f32).to_bits());
        assert!(back.c[1][0].is_nan());
        for cut in 0..bytes.len() {
            let mut r = Reader::new(&bytes[..cut]);
            assert!(T::get(&mut r).and_then(|_| r.finish()).is_err(), "cut at {cut}");
        }
        let mut bad_tag = bytes.clone();
        bad_tag[4] = 2;
        let e = T::get(&mut Reader::new(&bad_tag)).unwrap_err();
        assert_eq!((e.offset, e.field), (5, "T.b"));
        let mut huge = bytes.clone();
        huge[6..10].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(T::get(&mut Reader::new(&huge)).is_err());
    }
}
