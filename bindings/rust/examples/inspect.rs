//! `cargo run --offline --example inspect -- FILE`: a header row, then one
//! tab-separated line per tensor of a .hurray file: name, dtype, shape (as
//! `python -m hurray inspect` writes it: `32x16`, `scalar` for a scalar),
//! scheme, buffer count, and the 64-bit FNV-1a of each buffer in lowercase
//! hex, comma-separated.
use std::process::ExitCode;

#[path = "common/mod.rs"]
mod common;

fn run(path: &str) -> hurray::Result<()> {
    let file = hurray::File::open(path)?;
    println!("{}", common::INSPECT_HEADER);
    for index in 0..file.len()? {
        let name = file.name(index)?;
        let tensor = file.tensor(index)?;
        println!("{}", common::inspect_line(&name, &tensor)?);
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, path] = args.as_slice() else {
        eprintln!("usage: inspect FILE");
        return ExitCode::from(2);
    };
    match run(path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("inspect: {path}: {e}");
            ExitCode::FAILURE
        }
    }
}
