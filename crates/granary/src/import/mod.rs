//! Importers: pipeline collections recorded by other tools, turned into a pipelines script.
//!
//! - [`foz`]: Fossilize databases (`.foz`, what Steam and the Fossilize layer record).

pub mod foz;
