//! rust-peer: the Rust binding as a peer of the interop matrix
//! (docs/interop.md; tests/peers/adapters.py drives it through ctypes).
//!
//! A cdylib that produces and consumes tensors with the crate's safe API
//! only, as a user's Rust code would, and speaks in the raw pair a
//! "hurray_tensor" capsule carries: the `HurrayBufferList *` (the capsule's
//! pointer) and the `HurrayTensorContext *` (its context). The capsule
//! itself is made, renamed and destroyed by the caller.
//!
//! - produce: `rust_peer_produce` builds the descriptor, copies the bytes
//!   into buffers it owns and counts (`rust_peer_counters`), checks the
//!   tensor, and hands out the pair; an untaken pair goes back through
//!   `rust_peer_discard`.
//! - consume: `rust_peer_take` is `hurray::Tensor::from_raw`: the context's
//!   ABI version first, then the descriptor, then the buffers; on a refusal
//!   nothing is taken. The held tensor answers `rust_peer_fields`,
//!   `rust_peer_descriptor`, `rust_peer_buffer`, and, after `rust_peer_walk`
//!   gathered each part by its layout, `rust_peer_element`; then
//!   `rust_peer_release` drops it (the list, then the context).
//!
//! Statuses are `HurrayStatus` codes, with the reason written into the
//! caller's `message` buffer; -1 is a panic caught here (none crosses into C).
use std::os::raw::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};

use common::write_text;
use hurray::{sys, Error, Role, Tensor};

#[path = "../common/mod.rs"]
mod common;
mod counters;
mod produce;
mod walk;

/// A tensor this peer took, and what its walk gathered.
pub struct Held {
    tensor: Tensor,
    elements: Vec<(u32, Vec<u8>)>,
}

/// The descriptor as the accessors read it. Parts: (role, dtype, buffer
/// index, byte offset, layout), `part_count` of them, in role order.
#[repr(C)]
pub struct Fields {
    pub abi_version: u32,
    pub dtype: u32,
    pub rank: u32,
    pub byte_order: u32,
    pub packing: u32,
    pub scheme: u32,
    pub granularity: u32,
    pub axis: u32,
    pub ggml_type: u32,
    pub part_count: u32,
    pub block_size: u64,
    pub buffer_count: u64,
    pub shape: [u64; sys::HURRAY_MAX_RANK as usize],
    pub strides: [i64; sys::HURRAY_MAX_RANK as usize],
    pub parts: [[u64; 5]; sys::HURRAY_MAX_PARTS as usize],
}

/// Runs `body`; 0, the refusal's status, or -1 for a panic, the reason in `message`.
fn guarded(message: *mut c_char, cap: usize, body: impl FnOnce() -> hurray::Result<()>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => {
            write_text("", message, cap);
            0
        }
        Ok(Err(e)) => {
            write_text(&e.to_string(), message, cap);
            e.status() as c_int
        }
        Err(_) => {
            write_text("a panic was caught inside rust-peer", message, cap);
            -1
        }
    }
}

fn null(what: &str) -> Error {
    Error::new(sys::HURRAY_ERROR_NULL_ARGUMENT, format!("{what} is NULL"))
}

/// `len` values at `ptr` (NULL allowed when `len` is 0).
///
/// # Safety
/// `ptr` is NULL or points to `len` values that outlive the result.
unsafe fn items<'a, T>(ptr: *const T, len: usize, what: &str) -> hurray::Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(null(what));
    }
    // SAFETY: the caller's promise.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// # Safety
/// `held` is NULL or a pointer `rust_peer_take` returned, not yet released.
unsafe fn held<'a>(held: *mut Held) -> hurray::Result<&'a mut Held> {
    // SAFETY: the caller's promise.
    unsafe { held.as_mut() }.ok_or_else(|| null("the held tensor"))
}

/// Copies the five counters (buffers made, buffers released, owners made,
/// owners released, bad releases) into `out`.
///
/// # Safety
/// `out` points to 5 writable `u64`.
#[no_mangle]
pub unsafe extern "C" fn rust_peer_counters(out: *mut u64) {
    if !out.is_null() {
        let now = counters::snapshot();
        // SAFETY: the caller's promise.
        unsafe { std::ptr::copy_nonoverlapping(now.as_ptr(), out, now.len()) };
    }
}

/// Produces a tensor. `strides` NULL: row-major; `packing` -1: the
/// library's default; `parts`: `part_count` rows of (role, dtype, buffer
/// index, byte offset, layout). Each of the `buffer_count` buffers is a
/// copy of `lens[i]` bytes at `buffers[i]`. On 0, `*out_list` and
/// `*out_context` are the caller's (a capsule's pointer and context) and
/// the encoded descriptor is in `out_descriptor`.
///
/// # Safety
/// Every pointer points to as many valid values as its count says; the
/// out-parameters are writable; `message` holds `message_cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn rust_peer_produce(
    dtype: u32,
    rank: u32,
    shape: *const u64,
    strides: *const i64,
    packing: i32,
    scheme: u32,
    granularity: u32,
    axis: u32,
    block_size: u64,
    ggml_type: u32,
    part_count: u32,
    parts: *const u64,
    buffer_count: u64,
    buffers: *const *const u8,
    lens: *const u64,
    out_list: *mut *mut sys::HurrayBufferList,
    out_context: *mut *mut sys::HurrayTensorContext,
    out_descriptor: *mut u8,
    descriptor_cap: u64,
    out_descriptor_len: *mut u64,
    message: *mut c_char,
    message_cap: usize,
) -> c_int {
    guarded(message, message_cap, || {
        if out_list.is_null() || out_context.is_null() || out_descriptor.is_null() || out_descriptor_len.is_null() {
            return Err(null("an out-parameter"));
        }
        // SAFETY (every `items` below): the caller's promise on counts.
        let shape = unsafe { items(shape, rank as usize, "shape") }?;
        let strides = if strides.is_null() { None } else { Some(unsafe { items(strides, rank as usize, "strides") }?) };
        let rows = unsafe { items(parts, 5 * part_count as usize, "parts") }?;
        let pointers = unsafe { items(buffers, buffer_count as usize, "buffers") }?;
        let lens = unsafe { items(lens, buffer_count as usize, "lens") }?;
        let buffers = pointers
            .iter()
            .zip(lens)
            .map(|(&ptr, &len)| unsafe { items(ptr, len as usize, "a buffer") })
            .collect::<hurray::Result<Vec<_>>>()?;
        let spec = produce::Spec {
            dtype,
            shape,
            strides,
            packing: u32::try_from(packing).ok(),
            quantization: produce::Spec::quantization(scheme, granularity, axis, block_size, ggml_type),
            parts: rows.chunks(5).map(|r| [r[0], r[1], r[2], r[3], r[4]]).collect(),
            buffers,
        };
        let (list, context, encoded) = produce::produce(&spec)?;
        if encoded.len() as u64 > descriptor_cap {
            // SAFETY: the pair just made, taken by nobody.
            unsafe { produce::discard(list, context) };
            return Err(Error::new(sys::HURRAY_ERROR_OVERFLOW, "the descriptor is longer than out_descriptor"));
        }
        // SAFETY: checked non-NULL; `out_descriptor` holds `descriptor_cap` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(encoded.as_ptr(), out_descriptor, encoded.len());
            *out_descriptor_len = encoded.len() as u64;
            *out_list = list;
            *out_context = context;
        }
        Ok(())
    })
}

/// Destroys a pair `rust_peer_produce` made that no consumer took (a
/// capsule's destructor calls this while the capsule has its first name).
///
/// # Safety
/// Both come from `rust_peer_produce`, untaken, and are discarded once.
#[no_mangle]
pub unsafe extern "C" fn rust_peer_discard(list: *mut sys::HurrayBufferList, context: *mut sys::HurrayTensorContext) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the caller's promise.
        unsafe { produce::discard(list, context) }
    }));
}

/// Checks, then takes, a capsule's pointer and context. On 0 `*out_held`
/// owns both; on a refusal nothing was taken or touched beyond what the
/// checks read.
///
/// # Safety
/// `context` is NULL or points to 8 readable bytes; if it is a context of
/// this ABI version it is live, and `list` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn rust_peer_take(
    list: *mut sys::HurrayBufferList,
    context: *mut sys::HurrayTensorContext,
    out_held: *mut *mut Held,
    message: *mut c_char,
    message_cap: usize,
) -> c_int {
    guarded(message, message_cap, || {
        if out_held.is_null() {
            return Err(null("out_held"));
        }
        // SAFETY: the caller's promise; on Err nothing is taken.
        let tensor = unsafe { Tensor::from_raw(list, context) }?;
        // SAFETY: checked non-NULL.
        unsafe { *out_held = Box::into_raw(Box::new(Held { tensor, elements: Vec::new() })) };
        Ok(())
    })
}

/// The held tensor's descriptor fields, read through the crate's accessors.
///
/// # Safety
/// `held` as for `rust_peer_release`; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn rust_peer_fields(held: *mut Held, out: *mut Fields, message: *mut c_char, cap: usize) -> c_int {
    guarded(message, cap, || {
        // SAFETY: the caller's promise.
        let (tensor, out) = (&unsafe { self::held(held) }?.tensor, unsafe { out.as_mut() }.ok_or_else(|| null("out"))?);
        let d = tensor.descriptor();
        let q = d.quantization();
        out.abi_version = tensor.abi_version();
        out.dtype = d.dtype().0;
        out.rank = d.rank() as u32;
        out.byte_order = d.byte_order().0;
        out.packing = d.packing().0;
        out.scheme = q.scheme.0;
        out.granularity = q.granularity.0;
        out.axis = q.axis;
        out.ggml_type = q.ggml_type.0;
        out.block_size = q.block_size;
        out.buffer_count = d.buffer_count()?;
        out.shape[..d.rank()].copy_from_slice(d.shape());
        out.strides[..d.rank()].copy_from_slice(d.strides());
        out.part_count = 0;
        for role in Role::ALL {
            if let Some(p) = d.part(role) {
                out.parts[out.part_count as usize] =
                    [role.0.into(), p.dtype.0.into(), p.buffer_index, p.byte_offset, p.layout.0.into()];
                out.part_count += 1;
            }
        }
        Ok(())
    })
}

/// Lends bytes owned by the held tensor (valid until it is released).
///
/// # Safety
/// `out_ptr` and `out_len` writable.
unsafe fn lend(bytes: &[u8], out_ptr: *mut *const u8, out_len: *mut u64) -> hurray::Result<()> {
    if out_ptr.is_null() || out_len.is_null() {
        return Err(null("an out-parameter"));
    }
    // SAFETY: the caller's promise.
    unsafe {
        *out_ptr = bytes.as_ptr();
        *out_len = bytes.len() as u64;
    }
    Ok(())
}

/// The descriptor bytes the context carries, lent.
///
/// # Safety
/// `held` as for `rust_peer_release`; the out-parameters writable.
#[no_mangle]
pub unsafe extern "C" fn rust_peer_descriptor(
    held: *mut Held,
    out_ptr: *mut *const u8,
    out_len: *mut u64,
    message: *mut c_char,
    cap: usize,
) -> c_int {
    guarded(message, cap, || {
        // SAFETY: the caller's promise.
        let tensor = &unsafe { self::held(held) }?.tensor;
        unsafe { lend(tensor.context().descriptor_bytes()?, out_ptr, out_len) }
    })
}

/// Buffer `index`'s bytes, lent.
///
/// # Safety
/// `held` as for `rust_peer_release`; the out-parameters writable.
#[no_mangle]
pub unsafe extern "C" fn rust_peer_buffer(
    held: *mut Held,
    index: u64,
    out_ptr: *mut *const u8,
    out_len: *mut u64,
    message: *mut c_char,
    cap: usize,
) -> c_int {
    guarded(message, cap, || {
        // SAFETY: the caller's promise.
        let tensor = &unsafe { self::held(held) }?.tensor;
        unsafe { lend(tensor.buffer(index)?, out_ptr, out_len) }
    })
}

/// Walks every part's layout; `rust_peer_element` then lends the result.
///
/// # Safety
/// `held` as for `rust_peer_release`.
#[no_mangle]
pub unsafe extern "C" fn rust_peer_walk(held: *mut Held, message: *mut c_char, cap: usize) -> c_int {
    guarded(message, cap, || {
        // SAFETY: the caller's promise.
        let held = unsafe { self::held(held) }?;
        held.elements = walk::elements(&held.tensor)?;
        Ok(())
    })
}

/// The elements the last walk gathered for `role`, lent; HURRAY_ERROR_NOT_FOUND
/// when the tensor has no such part.
///
/// # Safety
/// `held` as for `rust_peer_release`; the out-parameters writable.
#[no_mangle]
pub unsafe extern "C" fn rust_peer_element(
    held: *mut Held,
    role: u32,
    out_ptr: *mut *const u8,
    out_len: *mut u64,
    message: *mut c_char,
    cap: usize,
) -> c_int {
    guarded(message, cap, || {
        // SAFETY: the caller's promise.
        let held = unsafe { self::held(held) }?;
        match held.elements.iter().find(|(r, _)| *r == role) {
            Some((_, bytes)) => unsafe { lend(bytes, out_ptr, out_len) },
            None => Err(Error::new(sys::HURRAY_ERROR_NOT_FOUND, format!("no elements walked for role {role}"))),
        }
    })
}

/// Drops a held tensor: its list, then its context, whose owner the
/// producer releases there.
///
/// # Safety
/// `held` is NULL or a pointer `rust_peer_take` returned, released once.
#[no_mangle]
pub unsafe extern "C" fn rust_peer_release(held: *mut Held) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if !held.is_null() {
            // SAFETY: the caller's promise.
            drop(unsafe { Box::from_raw(held) });
        }
    }));
}
