//! `granary sign`: sign an archive with a studio's private key, or generate a key pair.

use anyhow::Context as _;
use granary_archive::{sign_archive, write_key_pair, Archive, SecretKey};
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(after_help = "\
Why: checksums catch damage, not a crafted archive. Whoever can edit the file (or the CDN it is
downloaded from) can substitute shader code or driver binaries and recompute every checksum.
A signature (Ed25519, over every byte of the archive but the signature) lets the game refuse
any archive the studio did not sign: it pins the public key and opens archives with
granary_archive::Archive::open_verified (cargo feature `sign`).

  granary sign --generate-key studio            # studio.key (private, mode 0600), studio.pub
  granary sign game.granary --key studio.key    # signs game.granary in place
  granary verify game.granary --key studio.pub  # exit 1: unsigned, another key's, or changed

Keep NAME.key secret (it never needs to ship); ship or compile in NAME.pub. Signing is
deterministic: the same archive and key give the same bytes. Signing a signed archive replaces
its signature; merge, prune, salvage and harvest --resume write new, unsigned archives: sign
their output again. A signature does not stop rollback to an older archive the same key
signed: pin the version you expect (docs/FORMAT.md §1.12).

Key files: NAME.pub is the 32-byte public key as 64 hex digits; NAME.key is the 32-byte seed
followed by the public key, as 128 hex digits. A private key file that group or others may
read is refused (chmod 600).")]
pub struct SignArgs {
    /// The archive to sign (replaced atomically, unless -o names another file).
    #[arg(required_unless_present = "generate_key", conflicts_with = "generate_key")]
    archive: Option<PathBuf>,
    /// The private key file (NAME.key, written by --generate-key; must be mode 0600).
    #[arg(long, value_name = "PRIVATE_KEY_FILE", required_unless_present = "generate_key")]
    key: Option<PathBuf>,
    /// Where to write the signed archive (default: ARCHIVE itself).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Instead of signing: generate a new key pair from the operating system's random source,
    /// NAME.key (private, mode 0600) and NAME.pub (public). Never overwrites a file.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["key", "output"])]
    generate_key: Option<PathBuf>,
}

pub fn run(a: SignArgs) -> anyhow::Result<i32> {
    if let Some(name) = &a.generate_key {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| anyhow::anyhow!("the operating system's random source failed: {e}"))?;
        let key = SecretKey::from_seed(&seed);
        seed.fill(0);
        std::hint::black_box(&mut seed);
        let (secret, public) = write_key_pair(name, &key)?;
        outln!(
            "wrote {} (private: keep it secret, never ship it) and {} (public key {})",
            secret.display(),
            public.display(),
            key.public_key().key_id()
        );
        return Ok(0);
    }
    // clap enforces both (required unless --generate-key).
    let (Some(archive), Some(key_file)) = (&a.archive, &a.key) else {
        anyhow::bail!("give ARCHIVE and --key PRIVATE_KEY_FILE, or --generate-key NAME");
    };
    let key = SecretKey::read(key_file)?;
    let previous = Archive::open(archive)?.signature().with_context(|| format!("cannot sign {}", archive.display()))?;
    let output = a.output.as_ref().unwrap_or(archive);
    let bytes = sign_archive(archive, &key, output).with_context(|| format!("cannot sign {}", archive.display()))?;
    outln!(
        "signed {} with key {} into {} ({bytes} bytes){}",
        archive.display(),
        key.public_key().key_id(),
        output.display(),
        match previous {
            Some(p) if p.public_key == key.public_key().to_bytes() => "; it was signed by this key already".into(),
            Some(p) => format!("; replaced the signature by key {}", p.key_id()),
            None => String::new(),
        }
    );
    Ok(0)
}
