//! `public-api RUSTDOC_JSON`: prints the crate's public API, one sorted line per item
//! (`granary_tidy::api`), for `scripts/public-api.sh`.

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: public-api RUSTDOC_JSON");
        std::process::exit(2);
    };
    let doc: serde_json::Value = match std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("public-api: {path}: {e}");
            std::process::exit(2);
        }
    };
    match granary_tidy::api::list(&doc) {
        Ok(lines) => {
            for l in lines {
                println!("{l}");
            }
        }
        Err(e) => {
            eprintln!("public-api: {path}: {e}");
            std::process::exit(2);
        }
    }
}
