//! Finds SPIRV-Tools' static library and links it, so that SPIR-V is validated in process
//! (`frontend::tool::spirv_tools`) instead of by one `spirv-val` process per module.
//!
//! Optional by design: a machine with only the Rust toolchain builds granary without it, and
//! granary then runs the `spirv-val` program (or reports outputs unchecked). Found when:
//! - `GRANARY_SPIRV_TOOLS_LIB_DIR` names a folder holding `libSPIRV-Tools.a`, or
//! - the target is the host and a system folder holds it (Debian's `spirv-tools` package puts
//!   it in `/usr/lib/<multiarch>`).
//!
//! `GRANARY_SPIRV_TOOLS=off` builds without it wherever it is. The library is linked
//! statically (with the C++ runtime the translators already link), so the binary runs on
//! machines without SPIRV-Tools. When linked, the build sets `cfg(granary_spirv_tools)`.

use std::path::PathBuf;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(granary_spirv_tools)");
    println!("cargo:rerun-if-env-changed=GRANARY_SPIRV_TOOLS");
    println!("cargo:rerun-if-env-changed=GRANARY_SPIRV_TOOLS_LIB_DIR");
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("GRANARY_SPIRV_TOOLS").is_ok_and(|v| v == "off") {
        return;
    }
    let Some(dir) = find() else { return };
    println!("cargo:rerun-if-changed={}", dir.join("libSPIRV-Tools.a").display());
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static=SPIRV-Tools");
    println!("cargo:rustc-link-lib=dylib=stdc++");
    println!("cargo:rustc-cfg=granary_spirv_tools");
}

/// The folder holding `libSPIRV-Tools.a`, if one is found.
fn find() -> Option<PathBuf> {
    let has = |d: &PathBuf| d.join("libSPIRV-Tools.a").is_file();
    if let Some(dir) = std::env::var_os("GRANARY_SPIRV_TOOLS_LIB_DIR") {
        let dir = PathBuf::from(dir);
        return has(&dir).then_some(dir);
    }
    let (target, host) = (std::env::var("TARGET").ok()?, std::env::var("HOST").ok()?);
    if target != host || std::env::var("CARGO_CFG_TARGET_OS").ok()? != "linux" {
        return None;
    }
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").ok()?;
    let multiarch = match arch.as_str() {
        "x86_64" => "x86_64-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        _ => return None,
    };
    [format!("/usr/lib/{multiarch}"), "/usr/lib".into(), "/usr/local/lib".into(), "/usr/lib64".into()]
        .into_iter()
        .map(PathBuf::from)
        .find(has)
}
