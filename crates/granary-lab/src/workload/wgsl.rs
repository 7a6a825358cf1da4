//! Spelling numbers as WGSL literals.

/// An `f32` literal with four decimals (always has a decimal point; never `-0.0000`).
pub(crate) fn lit(x: f64) -> String {
    let s = format!("{x:.4}");
    if s == "-0.0000" {
        "0.0000".into()
    } else {
        s
    }
}

/// A `vec3<f32>` constructor.
pub(crate) fn vec3(v: [f64; 3]) -> String {
    format!("vec3<f32>({}, {}, {})", lit(v[0]), lit(v[1]), lit(v[2]))
}
