//! The one idiom for every fieldless enum an archive or a pipelines script stores:
//! `stored_enum!` declares the enum with its stable number and its one
//! spelling per variant, and derives everything else from that table — `ALL`, the number
//! (`from_u8` / `from_u32`), the name (`name`, `from_name`, `Display`, `FromStr`) and, with
//! the `serde` feature, `Serialize` / `Deserialize` spelling exactly those names (the same
//! calls, values and error messages `#[derive]` with a `rename_all` produced, so JSON is
//! unchanged).
//!
//! Invariants: each variant's number and spelling are written once, in the declaration; the
//! numbers are what the binary formats store (docs/FORMAT.md), the spellings what the script
//! and `granary ls --json` spell (docs/FORMAT.md §2). Neither may change.

/// A name no variant of a stored enum spells (the `Err` of its `FromStr`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownName {
    /// The enum's Rust name, e.g. `TextureFormat`.
    pub what: &'static str,
    /// The name given.
    pub name: String,
}

impl std::fmt::Display for UnknownName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown {} '{}'", self.what, self.name)
    }
}

impl std::error::Error for UnknownName {}

/// Declares a stored enum: `pub enum Name: u8 { /// doc
/// Variant = 0 => "spelling", … }` (the representation is `u8` or `u32`; the attributes before
/// `pub enum` — docs, derives — are the caller's, so each enum keeps its own derives).
///
/// Generates `ALL` (every value, in declaration order), `NAMES` (their spellings, same order),
/// `name`, `from_name`, `from_u8` or `from_u32` (by the representation), `Display`, `FromStr`
/// and, with feature `serde`, `Serialize`/`Deserialize` from the spellings.
macro_rules! stored_enum {
    (
        $(#[$m:meta])*
        pub enum $name:ident: $repr:ident {
            $( $(#[$vm:meta])* $variant:ident = $n:literal => $spelling:literal ),+ $(,)?
        }
    ) => {
        $(#[$m])*
        #[repr($repr)]
        pub enum $name { $( $(#[$vm])* $variant = $n ),+ }

        // A crate-private stored enum (a format detail) may leave some of these unused in a tier.
        #[allow(dead_code)]
        impl $name {
            /// Every value, in declaration order (ascending stored number).
            pub const ALL: [$name; [$($n),+].len()] = [$($name::$variant),+];
            /// Every value's spelling, in the order of `ALL`.
            pub const NAMES: [&'static str; [$($n),+].len()] = [$($spelling),+];

            /// The one spelling of this value: the pipelines script's JSON name (docs/FORMAT.md
            /// §2), also used by `granary ls` and error messages.
            pub const fn name(self) -> &'static str {
                match self { $( $name::$variant => $spelling ),+ }
            }

            /// The value spelled `s` (exactly; names are case-sensitive), if any.
            pub fn from_name(s: &str) -> Option<$name> {
                match s { $( $spelling => Some($name::$variant), )+ _ => None }
            }
        }

        stored_enum!(@number $name $repr { $($variant = $n),+ });

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::stored_enum::UnknownName;
            fn from_str(s: &str) -> Result<$name, $crate::stored_enum::UnknownName> {
                $name::from_name(s).ok_or_else(|| $crate::stored_enum::UnknownName { what: stringify!($name), name: s.to_string() })
            }
        }

        stored_enum!(@serde $name);
    };

    (@number $name:ident u8 { $($variant:ident = $n:literal),+ }) => {
        #[allow(dead_code)]
        impl $name {
            /// The value stored as `n`, if any.
            pub const fn from_u8(n: u8) -> Option<$name> {
                match n { $( $n => Some($name::$variant), )+ _ => None }
            }
        }
    };
    (@number $name:ident u32 { $($variant:ident = $n:literal),+ }) => {
        #[allow(dead_code)]
        impl $name {
            /// The value stored as `n`, if any.
            pub const fn from_u32(n: u32) -> Option<$name> {
                match n { $( $n => Some($name::$variant), )+ _ => None }
            }
        }
    };

    (@serde $name:ident) => {
        #[cfg(feature = "serde")]
        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let index = $name::ALL.iter().position(|v| v == self).unwrap_or(0) as u32;
                s.serialize_unit_variant(stringify!($name), index, self.name())
            }
        }

        #[cfg(feature = "serde")]
        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                d.deserialize_enum(
                    stringify!($name),
                    &$name::NAMES,
                    $crate::stored_enum::serde_support::EnumVisitor::<$name>::new(
                        concat!("enum ", stringify!($name)),
                        &$name::ALL,
                        &$name::NAMES,
                    ),
                )
            }
        }
    };
}

/// The visitors behind the generated `Deserialize` (not API): they accept exactly what a
/// derived unit-variant enum accepted (a name, or a variant index where the format says
/// "variant"), with the same error messages.
#[cfg(feature = "serde")]
pub(crate) mod serde_support {
    use serde::de::{self, DeserializeSeed, EnumAccess, Unexpected, VariantAccess, Visitor};
    use std::fmt;

    /// Visits an enum whose variants are `all`, spelled `names`.
    pub(crate) struct EnumVisitor<T: 'static> {
        expecting: &'static str,
        all: &'static [T],
        names: &'static [&'static str],
    }

    impl<T: Copy + 'static> EnumVisitor<T> {
        /// A visitor expecting `expecting` (`"enum Name"`).
        pub(crate) fn new(expecting: &'static str, all: &'static [T], names: &'static [&'static str]) -> Self {
            EnumVisitor { expecting, all, names }
        }
    }

    impl<'de, T: Copy + 'static> Visitor<'de> for EnumVisitor<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.expecting)
        }
        fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<T, A::Error> {
            let (index, variant) = data.variant_seed(Variant { names: self.names })?;
            variant.unit_variant()?;
            self.all.get(index).copied().ok_or_else(|| de::Error::custom("variant index out of range"))
        }
    }

    /// The variant identifier: its index in `names`.
    struct Variant {
        names: &'static [&'static str],
    }

    impl<'de> DeserializeSeed<'de> for Variant {
        type Value = usize;
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
            d.deserialize_identifier(self)
        }
    }

    impl<'de> Visitor<'de> for Variant {
        type Value = usize;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("variant identifier")
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<usize, E> {
            match usize::try_from(v) {
                Ok(i) if i < self.names.len() => Ok(i),
                _ => Err(E::invalid_value(
                    Unexpected::Unsigned(v),
                    &format!("variant index 0 <= i < {}", self.names.len()).as_str(),
                )),
            }
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<usize, E> {
            self.names.iter().position(|n| *n == s).ok_or_else(|| E::unknown_variant(s, self.names))
        }
        fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<usize, E> {
            match self.names.iter().position(|n| n.as_bytes() == b) {
                Some(i) => Ok(i),
                None => Err(E::unknown_variant(&String::from_utf8_lossy(b), self.names)),
            }
        }
    }
}
