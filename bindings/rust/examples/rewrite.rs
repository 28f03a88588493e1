//! `cargo run --offline --example rewrite -- IN OUT`: reads every tensor of
//! IN and writes it to OUT with a descriptor rebuilt field by field through
//! the builder, and buffers copied into new memory — a Rust producer
//! writing what a Python producer wrote. The rebuilt descriptor must encode
//! to the very bytes it was read from; the metadata is copied too.
use std::process::ExitCode;

use hurray::{Descriptor, Error, File, Role, Tensor, Writer};

fn rebuild(original: &Descriptor) -> hurray::Result<Descriptor> {
    let mut d = Descriptor::new(original.dtype(), original.shape())?;
    d.set_strides(original.strides())?;
    d.set_byte_order(original.byte_order())?;
    d.set_packing(original.packing())?;
    d.set_quantization(original.quantization())?;
    for role in Role::ALL {
        if let Some(part) = original.part(role) {
            d.set_part(role, part)?;
        }
    }
    if d.encode()? != original.encode()? {
        return Err(Error::new(hurray::sys::HURRAY_ERROR_INVALID_DESCRIPTOR, "the rebuilt descriptor differs"));
    }
    Ok(d)
}

fn run(input: &str, output: &str) -> hurray::Result<()> {
    let file = File::open(input)?;
    let mut writer = Writer::create(output)?;
    for (key, value) in file.metadata()? {
        writer.set_metadata(&key, &value)?;
    }
    for index in 0..file.len()? {
        let name = file.name(index)?;
        let read = file.tensor(index)?;
        let descriptor = rebuild(read.descriptor())?;
        let copies: Vec<Vec<u8>> = read.buffers()?.iter().map(|b| b.to_vec()).collect();
        drop(read);
        let tensor = Tensor::from_vecs(&descriptor, copies)?;
        writer.add(&name, &tensor)?;
    }
    writer.finish()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output] = args.as_slice() else {
        eprintln!("usage: rewrite IN OUT");
        return ExitCode::from(2);
    };
    match run(input, output) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rewrite: {e}");
            ExitCode::FAILURE
        }
    }
}
