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
use crate::format::{Section, PUBLIC_KEY_LEN, SIGNATURE_LEN};
use crate::reader::Archive;
use crate::reader::SignatureInfo;
use ed25519_dalek::{Signature, VerifyingKey};
use std::path::Path;

type Result<T> = std::result::Result<T, ArchiveError>;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses exactly `N` bytes of hex (either case) from `text` with surrounding white space.
fn parse_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
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
pub struct PublicKey(VerifyingKey);

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

fn with_key_path(e: ArchiveError, path: &Path) -> ArchiveError {
    match e {
        ArchiveError::Key { path: None, what } => ArchiveError::Key { path: Some(path.to_path_buf()), what },
        other => other,
    }
}

/// The bytes the signature covers: every byte of the file before the signature, which is the
/// file's last 64 bytes (the reader checks that the signature section ends the file).
fn signed_message(archive: &Archive) -> Result<&[u8]> {
    let b = archive.bytes();
    let (off, _) = archive.section(Section::Signature);
    b.len()
        .checked_sub(SIGNATURE_LEN)
        .filter(|end| *end >= off)
        .and_then(|end| b.get(..end))
        .ok_or_else(|| ArchiveError::corrupt(off, "signature section is too short for a signature"))
}

fn verify_with(archive: &Archive, key: &VerifyingKey, info: &SignatureInfo) -> Result<()> {
    let msg = signed_message(archive)?;
    let sig = Signature::from_bytes(&info.signature);
    key.verify_strict(msg, &sig)
        .map_err(|_| ArchiveError::BadSignature { path: None, key: info.public_key }.with_path_opt(archive.path()))
}

/// `verify`'s signature check: the signature verifies under the key its section names. This
/// detects any changed byte (a crafted archive re-signed with another key passes; only
/// [`Archive::verify_signature`] with a trusted key tells who signed).
pub(crate) fn check_under_own_key(archive: &Archive, info: &SignatureInfo) -> Result<()> {
    let (off, _) = archive.section(Section::Signature);
    let key = VerifyingKey::from_bytes(&info.public_key).map_err(|_| {
        ArchiveError::corrupt(off + 16, "the signature section's public key is not a valid Ed25519 key")
            .with_path_opt(archive.path())
    })?;
    verify_with(archive, &key, info)
}

impl Archive {
    /// Checks that this archive is signed by `key` and unchanged since: every byte of the file
    /// except the signature itself is covered. Refuses an unsigned archive
    /// ([`ArchiveError::Unsigned`]), one signed by another key ([`ArchiveError::WrongKey`],
    /// naming both) and one whose bytes changed after signing
    /// ([`ArchiveError::BadSignature`]); a damaged signature section is
    /// [`ArchiveError::Corrupt`]. Reads the whole file once (SHA-512), in constant memory.
    ///
    /// On a memory-mapped archive ([`Archive::open`]) this holds only while nobody rewrites
    /// the file in place: to keep unverified bytes from reaching a driver, use
    /// [`Archive::open_verified`], which checks a private copy.
    pub fn verify_signature(&self, key: &PublicKey) -> Result<()> {
        let Some(info) = self.signature()? else {
            return Err(ArchiveError::Unsigned { path: None, expected: key.to_bytes() }.with_path_opt(self.path()));
        };
        if info.public_key != key.to_bytes() {
            return Err(ArchiveError::WrongKey { path: None, signed_by: info.public_key, expected: key.to_bytes() }
                .with_path_opt(self.path()));
        }
        verify_with(self, &key.0, &info)
    }

    /// Reads `path` into memory ([`Archive::read`]: a private copy, immune to later changes
    /// of the file) and returns it only if it is signed by `key` and unchanged since
    /// ([`Archive::verify_signature`]). What a game that downloads archives opens them
    /// with: nothing it looks up afterwards can be bytes the studio did not sign.
    pub fn open_verified(path: &Path, key: &PublicKey) -> Result<Archive> {
        let archive = Archive::read(path)?;
        archive.verify_signature(key)?;
        Ok(archive)
    }

    /// [`Archive::open_verified`] for bytes already in memory (an embedded archive, or one
    /// the game's own file system layer read).
    pub fn from_bytes_verified(bytes: Vec<u8>, key: &PublicKey) -> Result<Archive> {
        let archive = Archive::from_bytes(bytes)?;
        archive.verify_signature(key)?;
        Ok(archive)
    }
}

#[cfg(feature = "write")]
pub use signing::{sign_archive, sign_bytes, write_key_pair, SecretKey};

#[cfg(feature = "write")]
mod signing {
    use super::*;
    use crate::format::{
        FIXED_HEADER, HEADER_LEN, SECTION_ROW, SIGNATURE_HEAD, SIGNATURE_MAGIC, SIGNATURE_SCHEME_ED25519,
        SIGNATURE_SECTION,
    };
    use crate::key::checksum64;
    use ed25519_dalek::{Signer, SigningKey};
    use std::io::Write;
    use std::path::PathBuf;

    /// An Ed25519 signing key (a studio's private key). Its bytes are zeroized when it is
    /// dropped; `Debug` prints only the public key's id.
    ///
    /// `Send + Sync`; signing takes `&self`. Not `Clone`, so that the secret is not copied
    /// around by accident.
    pub struct SecretKey(SigningKey);

    impl SecretKey {
        /// The key whose 32-byte secret seed is `seed` (RFC 8032). `seed` must come from a
        /// cryptographically secure random source (`granary sign --generate-key` uses the
        /// operating system's).
        pub fn from_seed(seed: &[u8; 32]) -> SecretKey {
            SecretKey(SigningKey::from_bytes(seed))
        }
        /// The matching public key: what games pin.
        pub fn public_key(&self) -> PublicKey {
            PublicKey(self.0.verifying_key())
        }
        /// The key from the text of a `.key` file: 128 hex digits, the seed then the public
        /// key; refused if the public half does not belong to the seed.
        pub fn from_text(text: &str) -> Result<SecretKey> {
            let Some(mut pair) = parse_hex::<64>(text) else {
                return Err(ArchiveError::Key {
                    path: None,
                    what: if parse_hex::<32>(text).is_some() {
                        "this is a public key (64 hex digits), not a private key (128 hex digits): use the .key file"
                            .into()
                    } else {
                        "a private key file holds 128 hex digits (the Ed25519 seed, then the public key)".into()
                    },
                });
            };
            let key = SigningKey::from_keypair_bytes(&pair);
            pair.iter_mut().for_each(|b| *b = 0);
            key.map(SecretKey).map_err(|_| ArchiveError::Key {
                path: None,
                what: "the private key's public half does not match its seed (the file is damaged)".into(),
            })
        }
        /// Reads a `.key` file ([`SecretKey::from_text`]). On Unix, refuses a file that group
        /// or others may read or write (mode `& 0o077` not zero): `chmod 600` it.
        pub fn read(path: &Path) -> Result<SecretKey> {
            let mut file = std::fs::File::open(path).map_err(|e| ArchiveError::io(path, e))?;
            let mut text = String::new();
            let read = std::io::Read::read_to_string(&mut file, &mut text);
            // What the file holds first (a public key file given by mistake is said to be
            // one), then whether it is exposed.
            let key = read.map_err(|e| ArchiveError::io(path, e)).and_then(|_| Self::from_text(&text));
            wipe(text);
            let key = key.map_err(|e| with_key_path(e, path))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = file.metadata().map_err(|e| ArchiveError::io(path, e))?.permissions().mode() & 0o777;
                if mode & 0o077 != 0 {
                    return Err(ArchiveError::Key {
                        path: Some(path.to_path_buf()),
                        what: format!(
                            "private key file is accessible by group or others (mode {mode:04o}): chmod 600 {}",
                            path.display()
                        ),
                    });
                }
            }
            Ok(key)
        }
        pub(super) fn to_text(&self) -> String {
            hex(&self.0.to_keypair_bytes()) + "\n"
        }
    }

    /// Overwrites a copy of secret key text before it is freed (best effort; the key itself
    /// is zeroized on drop by ed25519-dalek).
    fn wipe(text: String) {
        let mut bytes = text.into_bytes();
        bytes.fill(0);
        std::hint::black_box(&mut bytes);
    }

    impl std::fmt::Debug for SecretKey {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "SecretKey(public key {})", self.public_key().key_id())
        }
    }

    /// Writes `key` as `NAME.key` (mode 0600 on Unix) and its public key as `NAME.pub`, where
    /// `NAME` is `name` with `.key` / `.pub` appended. Refuses (before writing anything) if
    /// either file exists: a key is never overwritten. Both files are flushed to disk, with
    /// their directory. Returns the two paths.
    pub fn write_key_pair(name: &Path, key: &SecretKey) -> Result<(PathBuf, PathBuf)> {
        let with = |ext: &str| {
            let mut s = name.as_os_str().to_os_string();
            s.push(ext);
            PathBuf::from(s)
        };
        let (secret, public) = (with(".key"), with(".pub"));
        for p in [&secret, &public] {
            if std::fs::symlink_metadata(p).is_ok() {
                return Err(ArchiveError::Key {
                    path: Some(p.clone()),
                    what: "exists already; a key is never overwritten (choose another NAME)".into(),
                });
            }
        }
        let create = |path: &Path, mode: u32, text: &str| -> std::io::Result<()> {
            let mut o = std::fs::OpenOptions::new();
            o.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut o, mode);
            #[cfg(not(unix))]
            let _ = mode;
            let mut f = o.open(path)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()
        };
        let text = key.to_text();
        let written = create(&secret, 0o600, &text);
        wipe(text);
        written.map_err(|e| ArchiveError::io(&secret, e))?;
        create(&public, 0o644, &key.public_key().to_text()).map_err(|e| ArchiveError::io(&public, e))?;
        let dir = crate::durable::parent_dir(&secret);
        crate::durable::sync_dir(dir).map_err(|e| ArchiveError::io(dir, e))?;
        Ok((secret, public))
    }

    /// The archive `bytes`, signed with `key` (docs/FORMAT.md §1.12): the same bytes with the
    /// signature section filled in and the header updated (file length, the signature row,
    /// the header checksum). A pure function of `bytes` and `key`: Ed25519 signatures are
    /// deterministic, so signing twice gives identical bytes.
    ///
    /// Refuses input that does not pass [`Archive::verify`] (a damaged archive is never
    /// signed), including a signed archive whose signature does not verify under its own key;
    /// an archive with an intact signature is re-signed (its old signature replaced).
    pub fn sign_bytes(bytes: &[u8], key: &SecretKey) -> Result<Vec<u8>> {
        sign_archive_ref(&Archive::from_bytes(bytes.to_vec())?, key)
    }

    /// Reads the archive at `input`, signs it ([`sign_bytes`]) and replaces `output` with the
    /// result durably (temporary file, flush, rename; `output` may be `input`). Returns the
    /// signed file's size.
    pub fn sign_archive(input: &Path, key: &SecretKey, output: &Path) -> Result<usize> {
        let archive = Archive::read(input)?;
        let signed = sign_archive_ref(&archive, key).map_err(|e| e.with_path(input))?;
        crate::durable::write_atomic(output, &signed)?;
        Ok(signed.len())
    }

    fn sign_archive_ref(archive: &Archive, key: &SecretKey) -> Result<Vec<u8>> {
        archive.verify()?;
        let (off, _) = archive.section(Section::Signature);
        let b = archive.bytes();
        let body = b.get(..off).ok_or_else(|| ArchiveError::corrupt(off, "signature section past the end"))?;
        let mut out = Vec::with_capacity(off + SIGNATURE_SECTION);
        out.extend_from_slice(body);
        out.extend_from_slice(&SIGNATURE_MAGIC);
        out.extend_from_slice(&SIGNATURE_SCHEME_ED25519.to_le_bytes());
        out.extend_from_slice(&[0u8; 8]);
        out.extend_from_slice(&key.0.verifying_key().to_bytes());
        let head_sum = checksum64(&out[off..]);
        out.extend_from_slice(&[0u8; SIGNATURE_LEN]);
        debug_assert_eq!(out.len(), off + SIGNATURE_SECTION);
        // The header as it is in the signed file: its length, the signature row, the checksum.
        let len = out.len() as u64;
        let row = FIXED_HEADER + (Section::Signature as usize - 1) * SECTION_ROW;
        out[48..56].copy_from_slice(&len.to_le_bytes());
        out[row + 16..row + 24].copy_from_slice(&(SIGNATURE_SECTION as u64).to_le_bytes());
        out[row + 24..row + 32].copy_from_slice(&head_sum.to_le_bytes());
        let header_sum = checksum64(&out[..HEADER_LEN - 8]);
        out[HEADER_LEN - 8..HEADER_LEN].copy_from_slice(&header_sum.to_le_bytes());
        let end = out.len() - SIGNATURE_LEN;
        let signature = key.0.sign(&out[..end]);
        out[end..].copy_from_slice(&signature.to_bytes());
        debug_assert_eq!(SIGNATURE_HEAD + SIGNATURE_LEN, SIGNATURE_SECTION);
        Ok(out)
    }
}

#[cfg(all(test, feature = "write"))]
mod tests {
    use super::*;
    use crate::format::{FIXED_HEADER, HEADER_LEN, SECTION_ROW, SIGNATURE_SECTION};
    use crate::key::checksum64;

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
