//! Spelling numbers as WGSL literals.

use super::rng::Rng;

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

/// The three columns of a random near-identity 3×3 matrix: each column is the unit vector
/// plus noise in `[-spread, spread]` per component (drawn column by column, x, y, z).
pub(crate) fn near_identity_columns(rng: &mut Rng, spread: f64) -> (String, String, String) {
    let mut col = |i: usize| {
        let mut v = [rng.coef(-spread, spread), rng.coef(-spread, spread), rng.coef(-spread, spread)];
        v[i] += 1.0;
        vec3(v)
    };
    (col(0), col(1), col(2))
}
