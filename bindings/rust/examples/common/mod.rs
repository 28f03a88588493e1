//! What the examples print about a tensor, and how the cdylib examples
//! hand text to their C callers, in one place.
#![allow(dead_code)] // each example uses part of it
use std::os::raw::c_char;

use hurray::{Role, Tensor};

/// 64-bit FNV-1a of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

fn joined<T: ToString>(items: &[T]) -> String {
    items.iter().map(T::to_string).collect::<Vec<_>>().join(",")
}

/// The header row of `inspect_line`'s lines.
pub const INSPECT_HEADER: &str = "name\tdtype\tshape\tscheme\tbuffers\tfnv1a64";

/// A shape as `python -m hurray inspect` writes it: `32x16`, or `scalar`.
pub fn shape_text(shape: &[u64]) -> String {
    if shape.is_empty() {
        return "scalar".to_string();
    }
    shape.iter().map(u64::to_string).collect::<Vec<_>>().join("x")
}

/// One tab-separated line: name, dtype, shape, scheme, buffer count, FNV-1a of each buffer.
pub fn inspect_line(name: &str, tensor: &Tensor) -> hurray::Result<String> {
    let d = tensor.descriptor();
    let hashes: Vec<String> = tensor.buffers()?.iter().map(|b| format!("{:016x}", fnv1a64(b))).collect();
    Ok(format!(
        "{name}\t{}\t{}\t{}\t{}\t{}",
        d.dtype(),
        shape_text(d.shape()),
        d.scheme(),
        tensor.buffer_count()?,
        hashes.join(",")
    ))
}

/// Several lines: every field a consumer reads, then each buffer's size and hash.
pub fn report(tensor: &Tensor) -> hurray::Result<String> {
    let d = tensor.descriptor();
    let q = d.quantization();
    let mut out = format!(
        "abi {}\ndtype {}\nshape {}\nstrides {}\nbyte_order {}\npacking {}\nscheme {} {} axis {} block {} ggml {}\n",
        tensor.abi_version(),
        d.dtype(),
        joined(d.shape()),
        joined(d.strides()),
        d.byte_order(),
        d.packing(),
        q.scheme,
        q.granularity,
        q.axis,
        q.block_size,
        q.ggml_type,
    );
    for role in Role::ALL {
        if let Some(p) = d.part(role) {
            out += &format!("part {role} {} buffer {} offset {} {}\n", p.dtype, p.buffer_index, p.byte_offset, p.layout);
        }
    }
    for (i, b) in tensor.buffers()?.iter().enumerate() {
        out += &format!("buffer {i} {} {:016x}\n", b.len(), fnv1a64(b));
    }
    Ok(out)
}

/// Writes `text` into a C caller's buffer, truncated and NUL-terminated.
pub fn write_text(text: &str, out: *mut c_char, cap: usize) {
    if out.is_null() || cap == 0 {
        return;
    }
    let n = text.len().min(cap - 1);
    // SAFETY: the caller's buffer holds `cap` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), out as *mut u8, n);
        *out.add(n) = 0;
    }
}
