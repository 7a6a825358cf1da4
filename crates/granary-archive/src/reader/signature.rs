//! The reading side of archive signatures (feature `sign`, docs/FORMAT.md §1.12):
//! [`Archive::verify_signature`], [`Archive::open_verified`], and `verify`'s check that the
//! signature verifies under the key its section names. Uses the keys (`crate::sign`), which
//! know nothing of the reader.

use super::*;
use crate::sign::PublicKey;
use ed25519_dalek::{Signature, VerifyingKey};

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
