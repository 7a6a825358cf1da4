//! Signing archives (features `sign` and `write`): the secret key, its key-pair files, and
//! `sign_archive` / `sign_bytes`, which add the signature section to an archive that passes
//! verification (docs/FORMAT.md §1.12). Above the reader and the keys (`sign`), which know
//! nothing of it.

use crate::error::ArchiveError;
use crate::format::{Section, SIGNATURE_LEN};
use crate::reader::Archive;
use crate::sign::{hex, parse_hex, with_key_path, PublicKey};
use std::path::Path;

type Result<T> = std::result::Result<T, ArchiveError>;
use crate::format::{
    FIXED_HEADER, HEADER_LEN, SECTION_ROW, SIGNATURE_HEAD, SIGNATURE_MAGIC, SIGNATURE_SCHEME_ED25519, SIGNATURE_SECTION,
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
pub struct SecretKey(pub(crate) SigningKey);

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
                    "this is a public key (64 hex digits), not a private key (128 hex digits): use the .key file".into()
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
