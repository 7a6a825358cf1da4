//! Ed25519 archive signatures (feature `sign`; docs/FORMAT.md §1.12).
//!
//! XXH3 checksums catch damage, not a crafted archive: whoever can edit an archive (or the CDN
//! it is downloaded from) can rewrite a record, recompute its checksums and substitute shader
//! code or driver binaries, and drivers do not validate binary data. A signed archive carries,
//! in its last section, the signer's public key and an Ed25519 signature of every byte before
//! the signature. A game that pins the studio's public key opens archives with
//! [`Archive::open_verified`]: no byte of an archive that is unsigned, signed by another key or
//! changed after signing reaches a driver.
//!
//! The reading side ([`PublicKey`], [`Archive::verify_signature`], [`Archive::open_verified`])
//! needs only this feature. The signing side ([`SecretKey`], [`sign_bytes`], [`sign_archive`],
//! [`write_key_pair`]) needs `write` as well.
//!
//! **Key files** (what `granary sign --generate-key NAME` writes):
//! - `NAME.pub`: the 32-byte public key as 64 hex digits and a newline.
//! - `NAME.key`: the 32-byte secret seed followed by the 32-byte public key (the RFC 8032 /
//!   libsodium secret-key layout), as 128 hex digits and a newline; mode 0600. Reading one
//!   checks that the two halves belong together, and on Unix refuses a file that group or
//!   others may read or write (as ssh does).
//!
//! The two lengths differ, so a public key file given where the private key belongs (or the
//! other way round) is refused, never used as a key. Readers accept upper- or lower-case hex
//! and surrounding white space; nothing else.

use crate::error::ArchiveError;
use crate::format::PUBLIC_KEY_LEN;
use ed25519_dalek::VerifyingKey;
use std::path::Path;

type Result<T> = std::result::Result<T, ArchiveError>;

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses exactly `N` bytes of hex (either case) from `text` with surrounding white space.
pub(crate) fn parse_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let t = text.trim().as_bytes();
    if t.len() != 2 * N {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; N];
    for (o, pair) in out.iter_mut().zip(t.chunks_exact(2)) {
        *o = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// An Ed25519 public key: the key a game trusts, or the key a signature section names.
///
/// Plain data; `Copy`, `Send + Sync`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PublicKey(pub(crate) VerifyingKey);

impl PublicKey {
    /// The key from its 32 bytes (e.g. compiled into the game). Refuses bytes that are not a
    /// valid Ed25519 public key.
    pub fn from_bytes(bytes: &[u8; PUBLIC_KEY_LEN]) -> Result<PublicKey> {
        VerifyingKey::from_bytes(bytes).map(PublicKey).map_err(|_| ArchiveError::Key {
            path: None,
            what: format!("{} is not a valid Ed25519 public key", hex(bytes)),
        })
    }
    /// The key from the text of a `.pub` file: 64 hex digits (white space around them is
    /// ignored). `PublicKey::from_text(include_str!("studio.pub"))` pins a key at build time.
    pub fn from_text(text: &str) -> Result<PublicKey> {
        let bytes = parse_hex::<PUBLIC_KEY_LEN>(text).ok_or_else(|| ArchiveError::Key {
            path: None,
            what: if parse_hex::<{ 2 * PUBLIC_KEY_LEN }>(text).is_some() {
                "this is a private key (128 hex digits), not a public key (64 hex digits): use the .pub file".into()
            } else {
                "a public key file holds 64 hex digits (the 32-byte Ed25519 public key)".into()
            },
        })?;
        Self::from_bytes(&bytes)
    }
    /// Reads a `.pub` file ([`PublicKey::from_text`]).
    pub fn read(path: &Path) -> Result<PublicKey> {
        let text = std::fs::read(path).map_err(|e| ArchiveError::io(path, e))?;
        let text = std::str::from_utf8(&text).unwrap_or("");
        Self::from_text(text).map_err(|e| with_key_path(e, path))
    }
    /// The key's 32 bytes.
    pub fn to_bytes(&self) -> [u8; PUBLIC_KEY_LEN] {
        self.0.to_bytes()
    }
    /// The text of its `.pub` file: 64 lower-case hex digits and a newline.
    pub fn to_text(&self) -> String {
        hex(self.0.as_bytes()) + "\n"
    }
    /// The short form used in messages: the first 16 hex digits.
    pub fn key_id(&self) -> String {
        crate::error::key_id(self.0.as_bytes())
    }
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", hex(self.0.as_bytes()))
    }
}

pub(crate) fn with_key_path(e: ArchiveError, path: &Path) -> ArchiveError {
    match e {
        ArchiveError::Key { path: None, what } => ArchiveError::Key { path: Some(path.to_path_buf()), what },
        other => other,
    }
}

#[cfg(all(test, feature = "write"))]
mod tests {
    use super::*;
    use crate::format::{Section, FIXED_HEADER, HEADER_LEN, SECTION_ROW, SIGNATURE_SECTION};
    use crate::key::checksum64;
    use crate::reader::Archive;
    use crate::signing::*;

    fn key(n: u8) -> SecretKey {
        SecretKey::from_seed(&[n; 32])
    }
    fn unsigned() -> Vec<u8> {
        crate::__doc_example_archive()
    }
    /// Rewrites the header checksum after a deliberate header edit, as a forger would.
    fn fix_header(b: &mut [u8]) {
        let sum = checksum64(&b[..HEADER_LEN - 8]);
        b[HEADER_LEN - 8..HEADER_LEN].copy_from_slice(&sum.to_le_bytes());
    }

    #[test]
    fn signing_appends_one_section_and_verifies_with_the_right_key_only() {
        let raw = unsigned();
        let a = Archive::from_bytes(raw.clone()).unwrap();
        assert_eq!(a.signature().unwrap(), None);
        let k = key(1);
        let signed = sign_bytes(&raw, &k).unwrap();
        assert_eq!(signed.len(), raw.len() + SIGNATURE_SECTION);
        assert_eq!(&signed[HEADER_LEN..raw.len()], &raw[HEADER_LEN..], "only the header and the new section change");
        let s = Archive::from_bytes(signed.clone()).unwrap();
        s.verify().unwrap();
        let info = s.signature().unwrap().unwrap();
        assert_eq!(info.public_key, k.public_key().to_bytes());
        assert_eq!(info.key_id(), k.public_key().key_id());
        s.verify_signature(&k.public_key()).unwrap();
        // The same entries read back: signing changes no content.
        assert_eq!(s.entries().unwrap().len(), a.entries().unwrap().len());

        match s.verify_signature(&key(2).public_key()) {
            Err(ArchiveError::WrongKey { signed_by, expected, .. }) => {
                assert_eq!((signed_by, expected), (k.public_key().to_bytes(), key(2).public_key().to_bytes()))
            }
            other => panic!("{other:?}"),
        }
        let e = s.verify_signature(&key(2).public_key()).unwrap_err().to_string();
        assert!(e.contains(&k.public_key().key_id()) && e.contains(&key(2).public_key().key_id()), "{e}");
        match a.verify_signature(&k.public_key()) {
            Err(ArchiveError::Unsigned { expected, .. }) => assert_eq!(expected, k.public_key().to_bytes()),
            other => panic!("{other:?}"),
        }
        assert!(matches!(Archive::from_bytes_verified(raw, &k.public_key()), Err(ArchiveError::Unsigned { .. })));
        assert!(Archive::from_bytes_verified(signed, &k.public_key()).is_ok());
    }

    #[test]
    fn signing_is_deterministic_and_resigning_replaces_the_signature() {
        let raw = unsigned();
        let once = sign_bytes(&raw, &key(1)).unwrap();
        assert_eq!(once, sign_bytes(&raw, &key(1)).unwrap());
        assert_eq!(sign_bytes(&once, &key(1)).unwrap(), once, "re-signing with the same key changes nothing");
        let other = sign_bytes(&once, &key(3)).unwrap();
        assert_eq!(other, sign_bytes(&raw, &key(3)).unwrap());
        assert_eq!(other.len(), once.len());
        Archive::from_bytes(other).unwrap().verify_signature(&key(3).public_key()).unwrap();
    }

    /// Every single-byte change of a signed archive is refused by `verify_signature`: as
    /// corruption where the change breaks a checksum or structure, as a bad signature
    /// otherwise (and `verify` catches it too, under the archive's own key).
    #[test]
    fn every_flipped_byte_is_refused() {
        let k = key(1);
        let signed = sign_bytes(&unsigned(), &k).unwrap();
        for i in 0..signed.len() {
            let mut b = signed.clone();
            b[i] ^= 0x01;
            let refused = match Archive::from_bytes(b.clone()) {
                Err(_) => true,
                Ok(a) => a.verify_signature(&k.public_key()).is_err() && a.verify().is_err(),
            };
            assert!(refused, "a flip at byte {i} of {} passed", signed.len());
            assert!(Archive::from_bytes_verified(b, &k.public_key()).is_err(), "byte {i}");
        }
    }

    /// A forger who recomputes every checksum (they are not secret) still fails the
    /// signature; one who swaps in their own key fails the pinned key.
    #[test]
    fn a_forger_who_fixes_the_checksums_is_refused() {
        let k = key(1);
        let signed = sign_bytes(&unsigned(), &k).unwrap();
        let a = Archive::from_bytes(signed.clone()).unwrap();
        // Change one byte of the first blob and recompute its section's checksum and the
        // header checksum (the blob's content hash would fail a lookup, but the signature
        // fails first, before any lookup).
        let (doff, dlen) = a.section(Section::BlobData);
        let mut b = signed.clone();
        b[doff] ^= 0xff;
        let row = FIXED_HEADER + (Section::BlobData as usize - 1) * SECTION_ROW;
        let sum = checksum64(&b[doff..doff + dlen]);
        b[row + 24..row + 32].copy_from_slice(&sum.to_le_bytes());
        fix_header(&mut b);
        let forged = Archive::from_bytes(b).unwrap();
        assert!(matches!(forged.verify_signature(&k.public_key()), Err(ArchiveError::BadSignature { .. })));
        // A forger's own signature over other content: valid, but by the wrong key.
        let theirs = sign_bytes(&crate::__doc_example_archive(), &key(9)).unwrap();
        let theirs = Archive::from_bytes(theirs).unwrap();
        theirs.verify().unwrap();
        assert!(matches!(theirs.verify_signature(&k.public_key()), Err(ArchiveError::WrongKey { .. })));
    }

    #[test]
    fn a_damaged_signature_section_is_corrupt_and_a_damaged_archive_is_never_signed() {
        let k = key(1);
        let signed = sign_bytes(&unsigned(), &k).unwrap();
        let off = Archive::from_bytes(signed.clone()).unwrap().section(Section::Signature).0;
        let row = FIXED_HEADER + (Section::Signature as usize - 1) * SECTION_ROW;
        // Wrong magic, scheme or reserved bytes with the checksums fixed up: corrupt, and
        // said so by `signature()`.
        for (at, what) in [(off, "bad magic"), (off + 4, "unknown signature scheme"), (off + 8, "reserved")] {
            let mut b = signed.clone();
            b[at] ^= 0x02;
            let sum = checksum64(&b[off..off + 48]);
            b[row + 24..row + 32].copy_from_slice(&sum.to_le_bytes());
            fix_header(&mut b);
            let a = Archive::from_bytes(b).unwrap();
            let e = a.signature().unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
            assert!(a.verify().is_err() && a.verify_signature(&k.public_key()).is_err());
        }
        // A section of another length, or one that does not end the file: refused at open.
        let mut b = signed.clone();
        b[row + 16..row + 24].copy_from_slice(&48u64.to_le_bytes());
        fix_header(&mut b);
        let e = Archive::from_bytes(b).err().unwrap().to_string();
        assert!(e.contains("signature section"), "{e}");
        let mut b = signed.clone();
        b.extend_from_slice(&[0; 16]);
        b[48..56].copy_from_slice(&(signed.len() as u64 + 16).to_le_bytes());
        fix_header(&mut b);
        assert!(Archive::from_bytes(b).is_err());
        // A flipped signature byte: `verify` (under the archive's own key) refuses it, so
        // does signing over it.
        let mut b = signed.clone();
        let n = b.len();
        b[n - 1] ^= 0x80;
        let a = Archive::from_bytes(b.clone()).unwrap();
        assert!(matches!(a.verify(), Err(ArchiveError::BadSignature { .. })));
        assert!(matches!(sign_bytes(&b, &k), Err(ArchiveError::BadSignature { .. })));
        // Any damage: never signed.
        let mut b = unsigned();
        let n = b.len();
        b[n / 2] ^= 1;
        assert!(sign_bytes(&b, &k).is_err());
    }

    #[test]
    fn key_text_round_trips_and_the_two_kinds_are_not_confused() {
        let k = key(7);
        let p = k.public_key();
        assert_eq!(PublicKey::from_text(&p.to_text()).unwrap(), p);
        assert_eq!(PublicKey::from_text(&format!("  {}  ", p.to_text().to_uppercase())).unwrap(), p);
        let secret = k.to_text();
        assert_eq!(secret.trim().len(), 128);
        assert_eq!(SecretKey::from_text(&secret).unwrap().public_key(), p);
        let e = PublicKey::from_text(&secret).unwrap_err().to_string();
        assert!(e.contains("private key"), "{e}");
        let e = SecretKey::from_text(&p.to_text()).unwrap_err().to_string();
        assert!(e.contains("public key"), "{e}");
        // A secret whose public half belongs to another seed.
        let mut mixed = secret.trim()[..64].to_string();
        mixed += key(8).public_key().to_text().trim();
        assert!(SecretKey::from_text(&mixed).is_err());
        for bad in ["", "zz", &"g".repeat(64), &"0".repeat(63)] {
            assert!(PublicKey::from_text(bad).is_err(), "{bad}");
            assert!(SecretKey::from_text(bad).is_err(), "{bad}");
        }
        assert!(!format!("{k:?}").contains(&secret.trim()[..64]), "Debug does not print the secret");
    }

    #[test]
    fn key_files_are_written_once_and_an_exposed_private_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let name = dir.path().join("studio");
        let k = key(5);
        let (secret, public) = write_key_pair(&name, &k).unwrap();
        assert_eq!(PublicKey::read(&public).unwrap(), k.public_key());
        assert_eq!(SecretKey::read(&secret).unwrap().public_key(), k.public_key());
        let e = write_key_pair(&name, &key(6)).unwrap_err().to_string();
        assert!(e.contains("never overwritten"), "{e}");
        assert_eq!(SecretKey::read(&secret).unwrap().public_key(), k.public_key(), "the first key is intact");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777, 0o600);
            std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o640)).unwrap();
            let e = SecretKey::read(&secret).unwrap_err().to_string();
            assert!(e.contains("mode 0640") && e.contains("chmod 600"), "{e}");
        }
    }

    #[test]
    fn sign_archive_writes_durably_and_open_verified_checks_before_returning() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.granary");
        std::fs::write(&path, unsigned()).unwrap();
        let k = key(1);
        assert!(matches!(
            Archive::open_verified(&path, &k.public_key()),
            Err(ArchiveError::Unsigned { path: Some(_), .. })
        ));
        let n = sign_archive(&path, &k, &path).unwrap();
        assert_eq!(n as u64, std::fs::metadata(&path).unwrap().len());
        let a = Archive::open_verified(&path, &k.public_key()).unwrap();
        assert!(a.lookup_label("post/tonemap").unwrap().is_some());
        let e = Archive::open_verified(&path, &key(2).public_key()).err().unwrap().to_string();
        assert!(e.starts_with(&path.display().to_string()) && e.contains("not by the required key"), "{e}");
    }
}
