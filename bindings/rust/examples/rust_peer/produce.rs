//! Producing: a tensor built with the crate's safe API, its buffers and its
//! owner counted, handed out as the raw (list, context) pair a capsule carries.
use hurray::{
    sys, BufferList, Descriptor, Dtype, Error, GgmlType, Granularity, Packing, Part, PartLayout, Quantization, Role,
    Scheme, Tensor, TensorContext,
};

use crate::counters::{CountedBytes, CountedOwner};

/// What the caller asks for, in hurray.h codes.
pub struct Spec<'a> {
    pub dtype: u32,
    pub shape: &'a [u64],
    pub strides: Option<&'a [i64]>,
    pub packing: Option<u32>,
    pub quantization: Quantization,
    /// (role, dtype, buffer index, byte offset, layout), in role order.
    pub parts: Vec<[u64; 5]>,
    pub buffers: Vec<&'a [u8]>,
}

impl Spec<'_> {
    pub fn quantization(scheme: u32, granularity: u32, axis: u32, block_size: u64, ggml_type: u32) -> Quantization {
        Quantization {
            scheme: Scheme(scheme),
            granularity: Granularity(granularity),
            axis,
            block_size,
            ggml_type: GgmlType(ggml_type),
        }
    }
}

fn code(value: u64, what: &str) -> hurray::Result<u32> {
    u32::try_from(value).map_err(|_| Error::new(sys::HURRAY_ERROR_OUT_OF_RANGE, format!("{what} {value}")))
}

/// The descriptor the spec states, validated by the library.
fn descriptor(spec: &Spec) -> hurray::Result<Descriptor> {
    let mut d = Descriptor::new(Dtype(spec.dtype), spec.shape)?;
    if let Some(strides) = spec.strides {
        d.set_strides(strides)?;
    }
    if let Some(packing) = spec.packing {
        d.set_packing(Packing(packing))?;
    }
    d.set_quantization(spec.quantization)?;
    for &[role, dtype, buffer_index, byte_offset, layout] in &spec.parts {
        let part = Part {
            dtype: Dtype(code(dtype, "part dtype")?),
            buffer_index,
            byte_offset,
            layout: PartLayout(code(layout, "part layout")?),
        };
        d.set_part(Role(code(role, "role")?), part)?;
    }
    d.validate()?;
    Ok(d)
}

/// A checked tensor over counted copies of the spec's buffers, given back as
/// its raw (list, context) pair, and its encoded descriptor.
pub fn produce(spec: &Spec) -> hurray::Result<(*mut sys::HurrayBufferList, *mut sys::HurrayTensorContext, Vec<u8>)> {
    let encoded = descriptor(spec)?.encode()?;
    let mut list = BufferList::new()?;
    for bytes in &spec.buffers {
        list.push_owned(CountedBytes::new(bytes.to_vec()))?;
    }
    let context = TensorContext::with_owner(&encoded, CountedOwner::new())?;
    // A producer checks its own tensor too: on Err both handles are destroyed here.
    let (list, context) = Tensor::from_parts(list, context)?.into_raw();
    Ok((list, context, encoded))
}

/// Destroys a pair `produce` handed out that no consumer took.
///
/// # Safety
/// Both are from `produce`, untaken, and destroyed by nothing else.
pub unsafe fn discard(list: *mut sys::HurrayBufferList, context: *mut sys::HurrayTensorContext) {
    // SAFETY: the caller's promise; each handle is adopted once and dropped,
    // the list first (ADR-023 § 5).
    unsafe {
        drop(BufferList::from_raw(list));
        drop(TensorContext::from_raw(context));
    }
}
