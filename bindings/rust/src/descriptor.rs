//! `Descriptor`: layers 1-3 and the role-to-buffer map, held as a C
//! `HurrayDescriptor`. Every rule is the library's: decoding and encoding
//! validate in C; this type only reads the fields back, once, into Rust
//! values, so its accessors cannot fail. A descriptor of encoding version 2
//! (a graph of nodes) is read too: its nodes, result dtype and version.
use std::ptr::NonNull;

use crate::buffer::BufferList;
use crate::codes::{ByteOrder, Dtype, Granularity, GgmlType, Packing, PartLayout, Role, Scheme};
use crate::error::{check, Error, Result};
use crate::graph::{lent, read_nodes, Node};
use crate::sys;

/// Where one role's elements live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub dtype: Dtype,
    pub buffer_index: u64,
    pub byte_offset: u64,
    pub layout: PartLayout,
}

/// How stored values map back to real numbers (fields a scheme does not use are zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quantization {
    pub scheme: Scheme,
    pub granularity: Granularity,
    pub axis: u32,
    pub block_size: u64,
    pub ggml_type: GgmlType,
}

impl Quantization {
    /// No quantization.
    pub const NONE: Quantization = Quantization {
        scheme: Scheme::NONE,
        granularity: Granularity::NONE,
        axis: 0,
        block_size: 0,
        ggml_type: GgmlType(0),
    };
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Fields {
    dtype: Dtype,
    shape: Vec<u64>,
    strides: Vec<i64>,
    byte_order: ByteOrder,
    packing: Packing,
    quantization: Quantization,
    parts: [Option<Part>; 4],
    encoding_version: u32,
    result_dtype: Dtype,
    nodes: Vec<Node>,
}

/// A descriptor, decoded from bytes or built field by field.
pub struct Descriptor {
    raw: NonNull<sys::HurrayDescriptor>,
    fields: Fields,
}

// SAFETY: a handle may be used from any thread, one thread at a time
// (hurray.h): Send, and not Sync, because `&self` methods such as
// encode and check_buffers call C with the handle.
unsafe impl Send for Descriptor {}

impl Descriptor {
    /// Decodes descriptor bytes; the library validates every field.
    pub fn decode(bytes: &[u8]) -> Result<Descriptor> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the slice is valid for its length; `raw` is an out-parameter.
        check(unsafe { sys::hurray_descriptor_decode(bytes.as_ptr(), bytes.len() as u64, &mut raw) })?;
        Descriptor::adopt(raw)
    }

    /// A new descriptor to build on: row-major, little-endian, values in
    /// buffer 0 at byte 0, no quantization.
    pub fn new(dtype: Dtype, shape: &[u64]) -> Result<Descriptor> {
        let rank = rank_u32(shape.len())?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: `shape` holds `rank` values; `raw` is an out-parameter.
        check(unsafe { sys::hurray_descriptor_new(dtype.0, rank, shape.as_ptr(), &mut raw) })?;
        Descriptor::adopt(raw)
    }

    fn adopt(raw: *mut sys::HurrayDescriptor) -> Result<Descriptor> {
        let raw = NonNull::new(raw)
            .ok_or_else(|| Error::new(sys::HURRAY_ERROR_NULL_ARGUMENT, "the library returned no descriptor"))?;
        // From here on Drop destroys the handle, on the error path too.
        let mut desc = Descriptor { raw, fields: Fields::empty() };
        desc.fields = desc.read_fields()?;
        Ok(desc)
    }

    pub(crate) fn as_ptr(&self) -> *const sys::HurrayDescriptor {
        self.raw.as_ptr()
    }

    fn ptr(&self) -> *const sys::HurrayDescriptor {
        self.raw.as_ptr()
    }

    fn read_fields(&self) -> Result<Fields> {
        let d = self.ptr();
        let (mut dtype, mut rank, mut byte_order, mut packing) = (0u32, 0u32, 0u32, 0u32);
        let (mut scheme, mut granularity, mut axis, mut block_size, mut ggml) = (0u32, 0u32, 0u32, 0u64, 0u32);
        let (mut shape_ptr, mut strides_ptr) = (std::ptr::null(), std::ptr::null());
        let (mut encoding_version, mut result_dtype) = (0u32, 0u32);
        // SAFETY: `d` is a live descriptor and every out-parameter is valid.
        unsafe {
            check(sys::hurray_descriptor_encoding_version(d, &mut encoding_version))?;
            check(sys::hurray_descriptor_result_dtype(d, &mut result_dtype))?;
            // A version-2 descriptor has no values part: its values are node 0's.
            let status = sys::hurray_descriptor_dtype(d, &mut dtype);
            if !(encoding_version == 2 && status == sys::HURRAY_ERROR_NOT_FOUND) {
                check(status)?;
            }
            check(sys::hurray_descriptor_rank(d, &mut rank))?;
            check(sys::hurray_descriptor_shape(d, &mut shape_ptr))?;
            check(sys::hurray_descriptor_strides(d, &mut strides_ptr))?;
            check(sys::hurray_descriptor_byte_order(d, &mut byte_order))?;
            check(sys::hurray_descriptor_packing(d, &mut packing))?;
            check(sys::hurray_descriptor_quantization(
                d,
                &mut scheme,
                &mut granularity,
                &mut axis,
                &mut block_size,
                &mut ggml,
            ))?;
        }
        if rank > sys::HURRAY_MAX_RANK {
            return Err(Error::new(sys::HURRAY_ERROR_INVALID_DESCRIPTOR, format!("rank {rank} exceeds 64")));
        }
        let shape = lent(shape_ptr, rank)?;
        let strides = lent(strides_ptr, rank)?;
        let mut parts = [None; 4];
        for (slot, role) in parts.iter_mut().zip(Role::ALL) {
            let (mut pd, mut index, mut offset, mut layout) = (0u32, 0u64, 0u64, 0u32);
            // SAFETY: as above.
            let status =
                unsafe { sys::hurray_descriptor_part(d, role.0, &mut pd, &mut index, &mut offset, &mut layout) };
            if status == sys::HURRAY_ERROR_NOT_FOUND {
                continue;
            }
            check(status)?;
            *slot = Some(Part { dtype: Dtype(pd), buffer_index: index, byte_offset: offset, layout: PartLayout(layout) });
        }
        Ok(Fields {
            dtype: Dtype(dtype),
            shape,
            strides,
            byte_order: ByteOrder(byte_order),
            packing: Packing(packing),
            quantization: Quantization {
                scheme: Scheme(scheme),
                granularity: Granularity(granularity),
                axis,
                block_size,
                ggml_type: GgmlType(ggml),
            },
            parts,
            encoding_version,
            result_dtype: Dtype(result_dtype),
            nodes: read_nodes(d)?,
        })
    }

    /// After a setter: the fields read back from C.
    fn refresh(&mut self, status: sys::HurrayStatus) -> Result<()> {
        check(status)?;
        self.fields = self.read_fields()?;
        Ok(())
    }

    fn ptr_mut(&mut self) -> *mut sys::HurrayDescriptor {
        self.raw.as_ptr()
    }

    /// Replaces the strides (in elements, one per dimension).
    pub fn set_strides(&mut self, strides: &[i64]) -> Result<()> {
        let rank = rank_u32(strides.len())?;
        // SAFETY: `strides` holds `rank` values.
        let status = unsafe { sys::hurray_descriptor_set_strides(self.ptr_mut(), rank, strides.as_ptr()) };
        self.refresh(status)
    }

    pub fn set_byte_order(&mut self, order: ByteOrder) -> Result<()> {
        // SAFETY: a live descriptor.
        let status = unsafe { sys::hurray_descriptor_set_byte_order(self.ptr_mut(), order.0) };
        self.refresh(status)
    }

    pub fn set_packing(&mut self, packing: Packing) -> Result<()> {
        // SAFETY: a live descriptor.
        let status = unsafe { sys::hurray_descriptor_set_packing(self.ptr_mut(), packing.0) };
        self.refresh(status)
    }

    pub fn set_quantization(&mut self, q: Quantization) -> Result<()> {
        // SAFETY: a live descriptor.
        let status = unsafe {
            sys::hurray_descriptor_set_quantization(
                self.ptr_mut(),
                q.scheme.0,
                q.granularity.0,
                q.axis,
                q.block_size,
                q.ggml_type.0,
            )
        };
        self.refresh(status)
    }

    /// Where `role`'s elements live (for the values role: moves them).
    pub fn set_part(&mut self, role: Role, part: Part) -> Result<()> {
        // SAFETY: a live descriptor.
        let status = unsafe {
            sys::hurray_descriptor_set_part(
                self.ptr_mut(),
                role.0,
                part.dtype.0,
                part.buffer_index,
                part.byte_offset,
                part.layout.0,
            )
        };
        self.refresh(status)
    }

    /// Runs the library's validation (decoding and encoding run it too).
    pub fn validate(&self) -> Result<()> {
        // SAFETY: a live descriptor.
        check(unsafe { sys::hurray_descriptor_validate(self.ptr()) })
    }

    /// The canonical bytes; validates first.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut out = vec![0u8; sys::HURRAY_MAX_DESCRIPTOR_V2_LEN as usize];
        let mut len = 0u64;
        // SAFETY: `out` has the capacity passed; `len` is an out-parameter.
        check(unsafe { sys::hurray_descriptor_encode(self.ptr(), out.as_mut_ptr(), out.len() as u64, &mut len) })?;
        if len > out.len() as u64 {
            return Err(Error::new(sys::HURRAY_ERROR_OVERFLOW, format!("an encoding of {len} bytes")));
        }
        out.truncate(len as usize);
        Ok(out)
    }

    /// Proves that `list` holds exactly this descriptor's buffers and that
    /// every byte its layout can reach lies inside them.
    pub fn check_buffers(&self, list: &BufferList) -> Result<()> {
        // SAFETY: both handles are live.
        check(unsafe { sys::hurray_descriptor_check_buffers(self.ptr(), list.as_ptr()) })
    }

    /// The values' element type; `Dtype(0)` (no name) for a version-2
    /// descriptor, whose values are node 0's.
    pub fn dtype(&self) -> Dtype {
        self.fields.dtype
    }

    /// 1, or 2 for a descriptor that is a graph of nodes.
    pub fn encoding_version(&self) -> u32 {
        self.fields.encoding_version
    }

    /// The nodes of a version-2 descriptor, node 0 the tensor; empty for
    /// version 1.
    pub fn nodes(&self) -> &[Node] {
        &self.fields.nodes
    }

    /// The dtype the format's own dequantization returns, `Dtype(0)` when
    /// unstated (and for version 1); informative.
    pub fn result_dtype(&self) -> Dtype {
        self.fields.result_dtype
    }

    pub fn rank(&self) -> usize {
        self.fields.shape.len()
    }

    pub fn shape(&self) -> &[u64] {
        &self.fields.shape
    }

    /// Strides in elements (negative allowed).
    pub fn strides(&self) -> &[i64] {
        &self.fields.strides
    }

    pub fn byte_order(&self) -> ByteOrder {
        self.fields.byte_order
    }

    pub fn packing(&self) -> Packing {
        self.fields.packing
    }

    pub fn quantization(&self) -> Quantization {
        self.fields.quantization
    }

    pub fn scheme(&self) -> Scheme {
        self.fields.quantization.scheme
    }

    /// The part of `role`, or None when the descriptor has none.
    pub fn part(&self, role: Role) -> Option<Part> {
        Role::ALL.iter().position(|r| *r == role).and_then(|i| self.fields.parts[i])
    }

    /// How many buffers the parts use (buffers `0 .. n`). Fails for a
    /// descriptor still being built whose buffer indices leave a gap.
    pub fn buffer_count(&self) -> Result<u64> {
        let mut count = 0u64;
        // SAFETY: a live descriptor; `count` is an out-parameter.
        check(unsafe { sys::hurray_descriptor_buffer_count(self.ptr(), &mut count) })?;
        Ok(count)
    }
}

impl Drop for Descriptor {
    fn drop(&mut self) {
        let mut raw = self.raw.as_ptr();
        // SAFETY: this value owns the handle and destroys it once.
        unsafe { sys::hurray_descriptor_destroy(&mut raw) };
    }
}

impl PartialEq for Descriptor {
    /// Equal when the fields are equal (the canonical bytes would be too).
    fn eq(&self, other: &Descriptor) -> bool {
        self.fields == other.fields
    }
}

impl std::fmt::Debug for Descriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Descriptor")
            .field("dtype", &self.fields.dtype)
            .field("shape", &self.fields.shape)
            .field("strides", &self.fields.strides)
            .field("scheme", &self.fields.quantization.scheme)
            .field("nodes", &self.fields.nodes)
            .finish()
    }
}

impl Fields {
    fn empty() -> Fields {
        Fields {
            dtype: Dtype(0),
            shape: Vec::new(),
            strides: Vec::new(),
            byte_order: ByteOrder(0),
            packing: Packing(0),
            quantization: Quantization::NONE,
            parts: [None; 4],
            encoding_version: 0,
            result_dtype: Dtype(0),
            nodes: Vec::new(),
        }
    }
}

fn rank_u32(len: usize) -> Result<u32> {
    if len > sys::HURRAY_MAX_RANK as usize {
        return Err(Error::new(sys::HURRAY_ERROR_INVALID_ARGUMENT, format!("rank {len} exceeds 64")));
    }
    Ok(len as u32)
}
