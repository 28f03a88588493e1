//! Consuming: each part's elements gathered by walking the layout the
//! descriptor states, bounds-checked element by element (the library proved
//! the buffers large enough; a walker re-checks every index it computes).
//!
//! Values come out in logical row-major order, one element per
//! ceil(storage bits / 8) bytes with sub-byte codes in the low bits; GGML
//! values as their block bytes; parameter parts as stored.
use hurray::{sys, Descriptor, Error, Granularity, Packing, PartLayout, Role, Scheme, Tensor};

fn too_small(what: String) -> Error {
    Error::new(sys::HURRAY_ERROR_BUFFER_TOO_SMALL, what)
}

fn slice(data: &[u8], start: u64, len: u64, what: &str) -> hurray::Result<Vec<u8>> {
    let end = start.checked_add(len).filter(|&end| end <= data.len() as u64);
    match end {
        Some(end) => Ok(data[start as usize..end as usize].to_vec()),
        None => Err(too_small(format!("{what}: bytes {start}+{len} pass a buffer of {}", data.len()))),
    }
}

fn count(shape: &[u64]) -> u64 {
    shape.iter().product()
}

/// The values, walked through shape, strides, byte offset and packing.
fn values(d: &Descriptor, data: &[u8], offset: u64) -> hurray::Result<Vec<u8>> {
    let n = count(d.shape());
    if d.scheme() == Scheme::GGML {
        let (block_elements, block_bytes) = d.quantization().ggml_type.block()?;
        return slice(data, offset, n / block_elements * block_bytes, "GGML blocks");
    }
    let storage = if d.packing() == Packing::PADDED { 8 } else { d.dtype().bits()? };
    let width = storage.div_ceil(8) as i128;
    let mut out = Vec::new();
    let mut index = vec![0u64; d.rank()];
    for flat in 0..n {
        let bit: i128 = if d.packing() == Packing::GGML_SPLIT {
            let j = flat % 32;
            8 * (offset + flat / 32 * 16 + j % 16) as i128 + if j < 16 { 0 } else { 4 }
        } else {
            let step: i128 = index.iter().zip(d.strides()).map(|(&i, &s)| i as i128 * s as i128).sum();
            8 * offset as i128 + storage as i128 * step
        };
        let byte = bit.div_euclid(8);
        if byte < 0 || byte + width > data.len() as i128 {
            return Err(too_small(format!("element {flat} at byte {byte} passes a buffer of {}", data.len())));
        }
        let byte = byte as usize;
        if storage % 8 == 0 {
            out.extend_from_slice(&data[byte..byte + width as usize]);
        } else {
            out.push((data[byte] >> bit.rem_euclid(8)) & ((1u16 << storage) - 1) as u8);
        }
        // The next index in row-major order.
        for axis in (0..index.len()).rev() {
            index[axis] += 1;
            if index[axis] < d.shape()[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    Ok(out)
}

/// How many elements a parameter part holds.
fn parameter_count(d: &Descriptor, role: Role, layout: PartLayout) -> hurray::Result<u64> {
    let q = d.quantization();
    if role == Role::GLOBAL_SCALE || q.granularity == Granularity::PER_TENSOR {
        return Ok(1);
    }
    if q.granularity == Granularity::PER_AXIS {
        return Ok(d.shape()[q.axis as usize]);
    }
    if q.granularity == Granularity::PER_BLOCK {
        if layout == PartLayout::SWIZZLED_128X4 {
            let rows = d.shape()[0].div_ceil(128) * 128;
            let cols = (d.shape()[1] / q.block_size).div_ceil(4) * 4;
            return Ok(rows * cols);
        }
        return Ok(count(d.shape()) / q.block_size);
    }
    Err(Error::new(sys::HURRAY_ERROR_UNSUPPORTED, format!("granularity {} has no parameter part", q.granularity)))
}

/// (role code, elements) for every part the descriptor has, in role order.
pub fn elements(tensor: &Tensor) -> hurray::Result<Vec<(u32, Vec<u8>)>> {
    let d = tensor.descriptor();
    let mut out = Vec::new();
    for role in Role::ALL {
        let Some(part) = d.part(role) else { continue };
        let data = tensor.buffer(part.buffer_index)?;
        let gathered = if role == Role::VALUES {
            values(d, data, part.byte_offset)?
        } else {
            let bits = parameter_count(d, role, part.layout)? * u64::from(part.dtype.bits()?);
            slice(data, part.byte_offset, bits.div_ceil(8), "a parameter part")?
        };
        out.push((role.0, gathered));
    }
    Ok(out)
}
