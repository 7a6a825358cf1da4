//! Granary compiles every GPU pipeline an application will use, from all cores at once, and
//! captures the results into one offline archive that the application reads at run time.
pub mod archive;
pub mod backend;
pub mod capture;
pub mod compiler;
pub mod descriptor;
pub mod fault;
pub mod frontend;
pub mod script;
pub mod sync;
pub mod util;
pub mod harvest;
pub mod gen;
pub mod stress;
pub mod bench;
