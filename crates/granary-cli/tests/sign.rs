//! `granary sign` and `granary verify --key` end to end on the bundled example: key
//! generation, signing, the right key, another key, tampering anywhere, unsigned archives, and
//! that commands writing new content (merge, prune, salvage) write unsigned archives.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::EXAMPLE;
use granary_archive::{Section, FIXED_HEADER, SECTION_ROW};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn granary(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_granary")).args(args).output().expect("run granary")
}
fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}
fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}
/// Runs granary and checks its exit status, printing its output when it differs.
fn run(args: &[&str], status: i32) -> String {
    let o = granary(args);
    assert_eq!(o.status.code(), Some(status), "granary {args:?}:\n{}", text(&o));
    text(&o)
}
fn harvest(out: &Path) {
    run(&["harvest", EXAMPLE, "-o", s(out)], 0);
}
/// Generates the key pair `dir/name.{key,pub}` and returns (private, public, key id).
fn keypair(dir: &Path, name: &str) -> (PathBuf, PathBuf, String) {
    let base = dir.join(name);
    let out = run(&["sign", "--generate-key", s(&base)], 0);
    let public = dir.join(format!("{name}.pub"));
    let id = std::fs::read_to_string(&public).unwrap().trim()[..16].to_string();
    assert!(out.contains(&id), "{out}");
    (dir.join(format!("{name}.key")), public, id)
}
/// (offset, length) of section `sec`, from the section table.
fn section(bytes: &[u8], sec: Section) -> (usize, usize) {
    let row = FIXED_HEADER + (sec as usize - 1) * SECTION_ROW;
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    (word(row + 8), word(row + 16))
}

#[test]
fn sign_then_verify_with_the_right_key_another_key_and_after_tampering() {
    let dir = common::tempdir();
    let (key, public, id) = keypair(dir.path(), "studio");
    let (_, other_pub, other_id) = keypair(dir.path(), "other");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    }
    // A key is never overwritten.
    let out = run(&["sign", "--generate-key", s(&dir.path().join("studio"))], 2);
    assert!(out.contains("never overwritten"), "{out}");

    let unsigned = dir.path().join("unsigned.granary");
    harvest(&unsigned);
    let signed = dir.path().join("signed.granary");
    let out = run(&["sign", s(&unsigned), "--key", s(&key), "-o", s(&signed)], 0);
    assert!(out.contains(&format!("with key {id}")), "{out}");

    // The right key: exit 0, and it says who signed.
    let out = run(&["verify", s(&signed), "--key", s(&public)], 0);
    assert!(out.contains(": ok (") && out.contains(&format!("signed by key {id} (the --key)")), "{out}");
    // Another key: exit 1, naming both.
    let out = run(&["verify", s(&signed), "--key", s(&other_pub)], 1);
    assert!(
        out.contains("FAILED") && out.contains(&format!("signed by key {id}, not by the required key {other_id}")),
        "{out}"
    );
    // Unsigned, where a key is required: exit 1.
    let out = run(&["verify", s(&unsigned), "--key", s(&public)], 1);
    assert!(out.contains("archive is unsigned"), "{out}");
    // Without --key the unsigned archive verifies, and says it is unsigned.
    let out = run(&["verify", s(&unsigned)], 0);
    assert!(out.contains("; unsigned"), "{out}");

    // One changed byte anywhere — in a blob, in the header, in the signature — is refused,
    // with or without --key (without it, the signature is checked under its own key).
    let bytes = std::fs::read(&signed).unwrap();
    let (blob_off, blob_len) = section(&bytes, Section::BlobData);
    let (sig_off, sig_len) = section(&bytes, Section::Signature);
    assert_eq!((sig_len, sig_off + sig_len), (112, bytes.len()), "the signature ends the file");
    for (at, what) in [
        (blob_off + blob_len / 2, "a blob"),
        (30, "the header"),
        (sig_off + 20, "the signature's public key"),
        (bytes.len() - 1, "the signature"),
    ] {
        let mut b = bytes.clone();
        b[at] ^= 0x10;
        let bad = dir.path().join("tampered.granary");
        std::fs::write(&bad, &b).unwrap();
        let out = run(&["verify", s(&bad), "--key", s(&public)], 1);
        assert!(out.contains("FAILED"), "{what}: {out}");
        run(&["verify", s(&bad)], 1);
    }
    // A changed blob whose checksums a forger recomputed: "changed after it was signed".
    let mut b = bytes.clone();
    b[blob_off] ^= 0x10;
    let row = FIXED_HEADER + (Section::BlobData as usize - 1) * SECTION_ROW;
    let sum = granary_archive::checksum64(&b[blob_off..blob_off + blob_len]);
    b[row + 24..row + 32].copy_from_slice(&sum.to_le_bytes());
    let hl = granary_archive::HEADER_LEN;
    let sum = granary_archive::checksum64(&b[..hl - 8]);
    b[hl - 8..hl].copy_from_slice(&sum.to_le_bytes());
    let forged = dir.path().join("forged.granary");
    std::fs::write(&forged, &b).unwrap();
    let out = run(&["verify", s(&forged), "--key", s(&public)], 1);
    assert!(out.contains("does not verify: the archive was changed after it was signed"), "{out}");

    // Signing is deterministic: twice from the unsigned archive, and again over the signed one.
    let again = dir.path().join("again.granary");
    run(&["sign", s(&unsigned), "--key", s(&key), "-o", s(&again)], 0);
    assert_eq!(std::fs::read(&again).unwrap(), bytes);
    let out = run(&["sign", s(&again), "--key", s(&key)], 0);
    assert!(out.contains("signed by this key already"), "{out}");
    assert_eq!(std::fs::read(&again).unwrap(), bytes);
    // The signed archive is the unsigned one plus its signature section.
    let raw = std::fs::read(&unsigned).unwrap();
    assert_eq!(bytes.len(), raw.len() + 112);
    let first = granary_archive::align_up(hl);
    assert_eq!(&bytes[first..raw.len()], &raw[first..]);
}

#[test]
fn key_files_are_checked_before_signing() {
    let dir = common::tempdir();
    let (key, public, _) = keypair(dir.path(), "studio");
    let archive = dir.path().join("a.granary");
    std::fs::write(&archive, granary_archive::__doc_example_archive()).unwrap();
    // The public key where the private key belongs.
    let out = run(&["sign", s(&archive), "--key", s(&public)], 2);
    assert!(out.contains("not a private key"), "{out}");
    // A private key others may read.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let out = run(&["sign", s(&archive), "--key", s(&key)], 2);
        assert!(out.contains("mode 0644") && out.contains("chmod 600"), "{out}");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    // A damaged archive is never signed.
    let mut b = std::fs::read(&archive).unwrap();
    let n = b.len();
    b[n - 20] ^= 1;
    let bad = dir.path().join("bad.granary");
    std::fs::write(&bad, &b).unwrap();
    run(&["sign", s(&bad), "--key", s(&key)], 2);
    assert_eq!(std::fs::read(&bad).unwrap(), b, "left as it was");
    run(&["sign", s(&archive), "--key", s(&key)], 0);
    // Neither ARCHIVE nor --key: a usage error.
    run(&["sign"], 2);
}

#[test]
fn ls_and_verify_show_the_signature_and_rewrites_are_unsigned() {
    let dir = common::tempdir();
    let (key, public, id) = keypair(dir.path(), "studio");
    let unsigned = dir.path().join("unsigned.granary");
    harvest(&unsigned);
    let signed = dir.path().join("signed.granary");
    run(&["sign", s(&unsigned), "--key", s(&key), "-o", s(&signed)], 0);

    // ls, text and JSON.
    let out = run(&["ls", s(&signed)], 0);
    assert!(out.contains(&format!("signed by key {id}")), "{out}");
    let out = run(&["ls", s(&unsigned)], 0);
    assert!(out.lines().any(|l| l == "unsigned"), "{out}");
    let ls: serde_json::Value = serde_json::from_str(&run(&["ls", s(&signed), "--json"], 0)).unwrap();
    assert_eq!(ls["signature"]["signed"], true);
    assert_eq!(ls["signature"]["key_id"], id.as_str());
    assert_eq!(ls["signature"]["key"].as_str().unwrap(), std::fs::read_to_string(&public).unwrap().trim());
    let ls: serde_json::Value = serde_json::from_str(&run(&["ls", s(&unsigned), "--json"], 0)).unwrap();
    assert_eq!(ls["signature"], serde_json::json!({"signed": false}));

    // verify --json, with and without the key; a signed archive passes plain verify.
    let out = run(&["verify", s(&signed)], 0);
    assert!(out.contains(&format!("signed by key {id} (pass --key")), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&run(&["verify", s(&signed), "--json", "--key", s(&public)], 0)).unwrap();
    let v = &v["archives"];
    assert_eq!((v[0]["ok"].clone(), v[0]["signature"]["signed"].clone()), (true.into(), true.into()));
    let v: serde_json::Value =
        serde_json::from_str(&run(&["verify", s(&unsigned), "--json", "--key", s(&public)], 1)).unwrap();
    let v = &v["archives"];
    assert_eq!(v[0]["ok"], false);
    assert_eq!(v[0]["signature"]["signed"], false);
    assert!(v[0]["error"].as_str().unwrap().contains("unsigned"), "{v}");

    // merge, prune and salvage write new content: unsigned, and byte for byte what they write
    // from the unsigned archive.
    let unsigned_bytes = std::fs::read(&unsigned).unwrap();
    let merged = dir.path().join("merged.granary");
    run(&["merge", s(&signed), s(&signed), "-o", s(&merged)], 0);
    let pruned = dir.path().join("pruned.granary");
    run(&["prune", s(&signed), "--script", EXAMPLE, "-o", s(&pruned)], 0);
    let salvaged = dir.path().join("salvaged.granary");
    run(&["salvage", s(&signed), "-o", s(&salvaged)], 0);
    for out in [&merged, &pruned, &salvaged] {
        assert_eq!(std::fs::read(out).unwrap(), unsigned_bytes, "{}", out.display());
        let v = run(&["verify", s(out), "--key", s(&public)], 1);
        assert!(v.contains("archive is unsigned"), "{}: {v}", out.display());
    }
}
