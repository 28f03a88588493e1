//! `frame_echo`: reads hurray-io frames from stdin until a clean end, and
//! writes each tensor back to stdout as a new frame whose tensor is rebuilt
//! in Rust (the descriptor decoded and encoded again, the buffers copied).
use std::io::{self, BufReader, BufWriter};
use std::process::ExitCode;

use hurray::{Descriptor, Tensor};

fn run() -> hurray::Result<usize> {
    let mut input = BufReader::new(io::stdin().lock());
    let mut output = BufWriter::new(io::stdout().lock());
    let mut count = 0;
    while let Some((name, read)) = hurray::read_frame(&mut input)? {
        let descriptor = Descriptor::decode(&read.descriptor().encode()?)?;
        let copies: Vec<Vec<u8>> = read.buffers()?.iter().map(|b| b.to_vec()).collect();
        hurray::write_frame(&mut output, &name, &Tensor::from_vecs(&descriptor, copies)?)?;
        count += 1;
    }
    Ok(count)
}

fn main() -> ExitCode {
    match run() {
        Ok(count) => {
            eprintln!("frame_echo: {count} frames");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("frame_echo: {e}");
            ExitCode::FAILURE
        }
    }
}
