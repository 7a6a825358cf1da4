use granary::compiler::{Compiler, CompilerOptions};
use granary::script::Script;
use granary_vulkan::{VulkanBackend, VulkanOptions};
use std::path::Path;

#[test]
fn example_on_driver() {
    let backend = match VulkanBackend::open(&VulkanOptions::default()) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("SKIPPED: {e}");
            return;
        }
    };
    eprintln!("{}", backend.identity().describe());
    let script = Script::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/renderer/pipelines.json")).unwrap();
    let compiler = Compiler::new(CompilerOptions::default());
    let mut ok = 0;
    for p in &script.pipelines {
        let Ok(desc) = &p.descriptor else { continue };
        let fs: Vec<_> = desc.stages().iter().map(|(s, f)| compiler.frontend().function(f, *s).unwrap()).collect();
        let layout = granary::backend::merge_layout(desc, &fs).unwrap();
        match backend.compile(desc, &fs, &layout) {
            Ok(c) => {
                ok += 1;
                let sizes: Vec<String> = c.binaries.iter().map(|(k, d)| format!("{}B key {}", d.len(), k.len())).collect();
                eprintln!("{} lib={} bins={:?}", p.display_name(), c.library, sizes);
            }
            Err(e) => eprintln!("{}: {e}", p.display_name()),
        }
    }
    eprintln!("{ok}/{} {:?} cache {} bytes", script.pipelines.len(), backend.stats(), backend.cache_data().unwrap().len());
}
