//! hurray: a safe Rust binding of hurray-ffi (`hurray.h`) and hurray-io
//! (`hurray_io.h`).
//!
//! Ownership is exactly the C ABI's: each Rust value owns one handle and
//! destroys it once, in `Drop`. Nothing here trusts a producer: a
//! [`Tensor`] exists only after the context's ABI version was read first
//! (ADR-034 § 4), the descriptor decoded, and the buffers checked against
//! it, so the `&[u8]` it lends cover every byte its layout can reach.
//!
//! The raw declarations are in [`sys`], the one module that speaks C.
pub mod sys;

mod buffer;
mod codes;
mod context;
mod descriptor;
mod error;
mod file;
mod frame;
mod graph;
mod tensor;

pub use buffer::BufferList;
pub use codes::{
    Addressing, ByteOrder, Dtype, Form, GgmlType, Granularity, NodeKind, Packing, PartLayout, Role, Scheme, ValueRule,
};
pub use context::TensorContext;
pub use descriptor::{Descriptor, Part, Quantization};
pub use error::{Error, Result};
pub use file::{File, Writer};
pub use frame::{read_frame, write_frame};
pub use graph::{Node, StepNode, StoredNode};
pub use tensor::Tensor;

/// The C ABI version this crate was written for (`HURRAY_C_ABI_VERSION`).
pub const C_ABI_VERSION: u32 = sys::HURRAY_C_ABI_VERSION;

/// The C ABI version of the linked libhurray.
pub fn linked_abi_version() -> u32 {
    // SAFETY: no arguments; reads a constant.
    unsafe { sys::hurray_c_abi_version() }
}
