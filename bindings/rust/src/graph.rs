//! The nodes of a version-2 descriptor (a graph of nodes, ADR-054), read
//! once through the accessors of hurray.h into Rust values. The library
//! has validated them: references point to later nodes, in canonical
//! order, and every field fits its kind (docs/impl/descriptor-encoding.md,
//! "Version 2").
use crate::codes::{Addressing, ByteOrder, Dtype, Form, GgmlType, NodeKind, Packing, PartLayout, ValueRule};
use crate::error::{check, Error, Result};
use crate::sys;

/// Elements in a buffer: where each code lies, and what it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredNode {
    pub dtype: Dtype,
    pub shape: Vec<u64>,
    /// In elements (elements addressing) or containers (words addressing).
    pub strides: Vec<i64>,
    pub buffer_index: u64,
    pub byte_offset: u64,
    pub byte_order: ByteOrder,
    pub layout: PartLayout,
    pub addressing: Addressing,
    pub packing: Packing,
    /// Words addressing: the container width and the packed axis; 0 otherwise.
    pub container_bits: u32,
    pub packed_axis: u32,
    /// Slots packing: containers per chunk, flags (`HURRAY_SLOTS_PLANAR`),
    /// the chunk stride, and the slot order; 0 and empty otherwise.
    pub chunk_containers: u64,
    pub slot_flags: u32,
    pub chunk_stride: u64,
    pub order: Vec<u8>,
    pub code_offset: i32,
    /// A node index, 0 for none.
    pub codebook: u32,
    pub value_rule: ValueRule,
}

/// `y = form(x, scale, offset)` in `arithmetic`, grouped by `blocks`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepNode {
    pub form: Form,
    pub arithmetic: Dtype,
    pub shape: Vec<u64>,
    /// Node indices; `offset` 0 for none.
    pub x: u32,
    pub scale: u32,
    pub offset: u32,
    /// Elements per group along each axis; 0 on the indexed axis.
    pub blocks: Vec<u64>,
    /// `HURRAY_STEP_RAGGED`: the last block along an axis may be partial.
    pub flags: u32,
    pub indexed_axis: u32,
    /// A node index, 0 for none.
    pub group_index: u32,
}

/// One node of a version-2 descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    Stored(StoredNode),
    /// One value: its dtype and little-endian bytes as a u64.
    Constant { dtype: Dtype, value_bits: u64 },
    Step(StepNode),
    Ggml { ggml_type: GgmlType, shape: Vec<u64>, buffer_index: u64, byte_offset: u64 },
    /// `Σ inputs[k] << shifts[k] + offset`.
    Bits { shape: Vec<u64>, inputs: Vec<u32>, shifts: Vec<u32>, offset: i32 },
    /// `y[..., i, ...] = x[..., index[i], ...]` along `axis`.
    Gather { shape: Vec<u64>, x: u32, index: u32, axis: u32 },
}

impl Node {
    pub fn kind(&self) -> NodeKind {
        match self {
            Node::Stored(_) => NodeKind::STORED,
            Node::Constant { .. } => NodeKind::CONSTANT,
            Node::Step(_) => NodeKind::STEP,
            Node::Ggml { .. } => NodeKind::GGML,
            Node::Bits { .. } => NodeKind::BITS,
            Node::Gather { .. } => NodeKind::GATHER,
        }
    }

    /// The node's shape (empty for a constant).
    pub fn shape(&self) -> &[u64] {
        match self {
            Node::Stored(s) => &s.shape,
            Node::Constant { .. } => &[],
            Node::Step(s) => &s.shape,
            Node::Ggml { shape, .. } | Node::Bits { shape, .. } | Node::Gather { shape, .. } => shape,
        }
    }
}

/// A copy of `len` values the library lends.
pub(crate) fn lent<T: Copy>(ptr: *const T, len: u32) -> Result<Vec<T>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if ptr.is_null() {
        return Err(Error::new(sys::HURRAY_ERROR_NULL_ARGUMENT, "the library lent a NULL array"));
    }
    // SAFETY: the library lends `len` values, alive while the descriptor is.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len as usize) }.to_vec())
}

/// Every node of a live descriptor (none for version 1).
pub(crate) fn read_nodes(d: *const sys::HurrayDescriptor) -> Result<Vec<Node>> {
    let mut count = 0u32;
    // SAFETY: a live descriptor; `count` is an out-parameter.
    check(unsafe { sys::hurray_descriptor_node_count(d, &mut count) })?;
    (0..count).map(|i| read_node(d, i)).collect()
}

fn read_node(d: *const sys::HurrayDescriptor, i: u32) -> Result<Node> {
    let (mut kind, mut rank, mut shape_ptr) = (0u32, 0u32, std::ptr::null());
    // SAFETY: a live descriptor, a node below its count, valid out-parameters.
    unsafe {
        check(sys::hurray_descriptor_node_kind(d, i, &mut kind))?;
        check(sys::hurray_descriptor_node_shape(d, i, &mut rank, &mut shape_ptr))?;
    }
    let shape = lent(shape_ptr, rank)?;
    match NodeKind(kind) {
        NodeKind::STORED => read_stored(d, i, shape, rank).map(Node::Stored),
        NodeKind::CONSTANT => {
            let (mut dtype, mut value_bits) = (0u32, 0u64);
            // SAFETY: as above.
            check(unsafe { sys::hurray_descriptor_constant(d, i, &mut dtype, &mut value_bits) })?;
            Ok(Node::Constant { dtype: Dtype(dtype), value_bits })
        }
        NodeKind::STEP => read_step(d, i, shape, rank).map(Node::Step),
        NodeKind::GGML => {
            let (mut ggml, mut buffer_index, mut byte_offset) = (0u32, 0u64, 0u64);
            // SAFETY: as above.
            check(unsafe { sys::hurray_descriptor_ggml_node(d, i, &mut ggml, &mut buffer_index, &mut byte_offset) })?;
            Ok(Node::Ggml { ggml_type: GgmlType(ggml), shape, buffer_index, byte_offset })
        }
        NodeKind::BITS => {
            let (mut n, mut inputs, mut shifts, mut offset) = (0u32, [0u32; 4], [0u32; 4], 0i32);
            // SAFETY: as above; the two arrays hold 4 each, as the accessor writes.
            check(unsafe {
                sys::hurray_descriptor_bits(d, i, &mut n, inputs.as_mut_ptr(), shifts.as_mut_ptr(), &mut offset)
            })?;
            let n = (n as usize).min(4);
            Ok(Node::Bits { shape, inputs: inputs[..n].to_vec(), shifts: shifts[..n].to_vec(), offset })
        }
        NodeKind::GATHER => {
            let (mut x, mut index, mut axis) = (0u32, 0u32, 0u32);
            // SAFETY: as above.
            check(unsafe { sys::hurray_descriptor_gather(d, i, &mut x, &mut index, &mut axis) })?;
            Ok(Node::Gather { shape, x, index, axis })
        }
        other => Err(Error::new(sys::HURRAY_ERROR_UNSUPPORTED, format!("node {i}: kind {other} is unknown to this crate"))),
    }
}

fn read_stored(d: *const sys::HurrayDescriptor, i: u32, shape: Vec<u64>, rank: u32) -> Result<StoredNode> {
    let (mut dtype, mut buffer_index, mut byte_offset, mut byte_order, mut layout) = (0u32, 0u64, 0u64, 0u32, 0u32);
    let mut strides_ptr = std::ptr::null();
    let (mut addressing, mut packing, mut container_bits, mut packed_axis) = (0u32, 0u32, 0u32, 0u32);
    let (mut chunk_containers, mut slot_flags, mut chunk_stride, mut slots) = (0u64, 0u32, 0u64, 0u32);
    let mut order_ptr = std::ptr::null();
    let (mut code_offset, mut codebook, mut value_rule) = (0i32, 0u32, 0u32);
    // SAFETY: a live descriptor, a stored node below its count, valid out-parameters.
    unsafe {
        check(sys::hurray_descriptor_stored(
            d,
            i,
            &mut dtype,
            &mut buffer_index,
            &mut byte_offset,
            &mut byte_order,
            &mut layout,
        ))?;
        check(sys::hurray_descriptor_stored_strides(d, i, &mut strides_ptr))?;
        check(sys::hurray_descriptor_stored_packing(
            d,
            i,
            &mut addressing,
            &mut packing,
            &mut container_bits,
            &mut packed_axis,
            &mut chunk_containers,
            &mut slot_flags,
            &mut chunk_stride,
            &mut slots,
            &mut order_ptr,
        ))?;
        check(sys::hurray_descriptor_stored_codes(d, i, &mut code_offset, &mut codebook, &mut value_rule))?;
    }
    Ok(StoredNode {
        dtype: Dtype(dtype),
        shape,
        strides: lent(strides_ptr, rank)?,
        buffer_index,
        byte_offset,
        byte_order: ByteOrder(byte_order),
        layout: PartLayout(layout),
        addressing: Addressing(addressing),
        packing: Packing(packing),
        container_bits,
        packed_axis,
        chunk_containers,
        slot_flags,
        chunk_stride,
        order: lent(order_ptr, slots)?,
        code_offset,
        codebook,
        value_rule: ValueRule(value_rule),
    })
}

fn read_step(d: *const sys::HurrayDescriptor, i: u32, shape: Vec<u64>, rank: u32) -> Result<StepNode> {
    let (mut form, mut arithmetic, mut x, mut scale, mut offset) = (0u32, 0u32, 0u32, 0u32, 0u32);
    let (mut blocks_ptr, mut flags, mut indexed_axis, mut group_index) = (std::ptr::null(), 0u32, 0u32, 0u32);
    // SAFETY: a live descriptor, a step below its count, valid out-parameters.
    unsafe {
        check(sys::hurray_descriptor_step(d, i, &mut form, &mut arithmetic, &mut x, &mut scale, &mut offset))?;
        check(sys::hurray_descriptor_step_groups(d, i, &mut blocks_ptr, &mut flags, &mut indexed_axis, &mut group_index))?;
    }
    Ok(StepNode {
        form: Form(form),
        arithmetic: Dtype(arithmetic),
        shape,
        x,
        scale,
        offset,
        blocks: lent(blocks_ptr, rank)?,
        flags,
        indexed_axis,
        group_index,
    })
}
