//! The inputs and outputs of a stage function, as seen by link checks.

use crate::descriptor::ScalarKind;

/// The type of one user-defined interface value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IoType {
    /// Scalar kind.
    pub kind: ScalarKind,
    /// Component count, 1–4.
    pub components: u8,
}

impl std::fmt::Display for IoType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self.kind {
            ScalarKind::Float => "f32",
            ScalarKind::Sint => "i32",
            ScalarKind::Uint => "u32",
        };
        if self.components == 1 {
            f.write_str(s)
        } else {
            write!(f, "vec{}<{s}>", self.components)
        }
    }
}

/// User-defined (`@location`) inputs and outputs of one entry point, sorted by location.
/// Built-ins are not listed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Interface {
    /// Inputs.
    pub inputs: Vec<(u32, IoType)>,
    /// Outputs.
    pub outputs: Vec<(u32, IoType)>,
}

/// Reads the interface of the single entry point of `module`.
pub fn reflect(module: &naga::Module, entry: &str, stage: naga::ShaderStage) -> Interface {
    let mut iface = Interface::default();
    let Some(ep) = module.entry_points.iter().find(|ep| ep.name == entry && ep.stage == stage) else {
        return iface;
    };
    for arg in &ep.function.arguments {
        collect(module, arg.ty, arg.binding.as_ref(), &mut iface.inputs);
    }
    if let Some(r) = &ep.function.result {
        collect(module, r.ty, r.binding.as_ref(), &mut iface.outputs);
    }
    iface.inputs.sort_by_key(|x| x.0);
    iface.outputs.sort_by_key(|x| x.0);
    iface
}

fn collect(
    module: &naga::Module,
    ty: naga::Handle<naga::Type>,
    binding: Option<&naga::Binding>,
    out: &mut Vec<(u32, IoType)>,
) {
    match binding {
        Some(naga::Binding::Location { location, .. }) => {
            if let Some(t) = io_type(&module.types[ty].inner) {
                out.push((*location, t));
            }
        }
        Some(naga::Binding::BuiltIn(_)) => {}
        None => {
            if let naga::TypeInner::Struct { members, .. } = &module.types[ty].inner {
                for m in members {
                    collect(module, m.ty, m.binding.as_ref(), out);
                }
            }
        }
    }
}

fn io_type(inner: &naga::TypeInner) -> Option<IoType> {
    let (scalar, components) = match inner {
        naga::TypeInner::Scalar(s) => (*s, 1),
        naga::TypeInner::Vector { size, scalar } => (*scalar, *size as u8),
        _ => return None,
    };
    let kind = match scalar.kind {
        naga::ScalarKind::Float => ScalarKind::Float,
        naga::ScalarKind::Sint => ScalarKind::Sint,
        naga::ScalarKind::Uint => ScalarKind::Uint,
        _ => return None,
    };
    Some(IoType { kind, components })
}
