//! The C ABI, declared once: every function of hurray.h and hurray_io.h.
//!
//! These declarations are checked against the installed headers by
//! `tests/header_drift.rs`, which turns each one back into C and compiles
//! it after the headers with `-Werror`: a type that drifts is a conflicting
//! redeclaration, a name the headers lack is an undeclared identifier, and a
//! header function missing here is reported by name. Keep to the plain form
//! the test reads: `pub fn name(arg: Type, ...) -> Type;`, with the types
//! below, `*const`/`*mut` pointers, and callbacks written as
//! `Option<unsafe extern "C" fn(...)>`.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

pub const HURRAY_C_ABI_VERSION: u32 = 5;
pub const HURRAY_C_ABI_MIN_VERSION: u32 = 4;
pub const HURRAY_BUFFER_READONLY: u32 = 1;
pub const HURRAY_TENSOR_CONTEXT_MAGIC: u32 = 0x48525443;
pub const HURRAY_MAX_RANK: u32 = 64;
pub const HURRAY_MAX_PARTS: u32 = 4;
pub const HURRAY_MAX_DESCRIPTOR_LEN: u32 = 1120;
pub const HURRAY_IO_VERSION: u32 = 1;
pub const HURRAY_READ_DEFAULT: u32 = 0;
pub const HURRAY_READ_NO_VERIFY: u32 = 1;
pub const HURRAY_READ_NO_MMAP: u32 = 2;
pub const HURRAY_WRITE_DEFAULT: u32 = 0;
pub const HURRAY_WRITE_PAGE_ALIGN: u32 = 1;

/// `enum HurrayStatus`: held as its unsigned value, never as a Rust enum, so
/// that a code this crate does not know cannot be undefined behaviour.
pub type HurrayStatus = u32;
pub const HURRAY_OK: HurrayStatus = 0;
pub const HURRAY_ERROR_NULL_ARGUMENT: HurrayStatus = 1;
pub const HURRAY_ERROR_INVALID_ARGUMENT: HurrayStatus = 2;
pub const HURRAY_ERROR_OUT_OF_RANGE: HurrayStatus = 3;
pub const HURRAY_ERROR_OVERFLOW: HurrayStatus = 4;
pub const HURRAY_ERROR_NO_MEMORY: HurrayStatus = 5;
pub const HURRAY_ERROR_NOT_A_CONTEXT: HurrayStatus = 6;
pub const HURRAY_ERROR_ABI_VERSION: HurrayStatus = 7;
pub const HURRAY_ERROR_INVALID_DESCRIPTOR: HurrayStatus = 8;
pub const HURRAY_ERROR_UNSUPPORTED: HurrayStatus = 9;
pub const HURRAY_ERROR_BUFFER_TOO_SMALL: HurrayStatus = 10;
pub const HURRAY_ERROR_NOT_FOUND: HurrayStatus = 11;
pub const HURRAY_ERROR_IO: HurrayStatus = 12;
pub const HURRAY_ERROR_CORRUPT: HurrayStatus = 13;
pub const HURRAY_ERROR_CHECKSUM: HurrayStatus = 14;

/// `enum HurrayDtype` codes.
pub const HURRAY_DTYPE_BOOL: u32 = 1;
pub const HURRAY_DTYPE_INT8: u32 = 2;
pub const HURRAY_DTYPE_INT16: u32 = 3;
pub const HURRAY_DTYPE_INT32: u32 = 4;
pub const HURRAY_DTYPE_INT64: u32 = 5;
pub const HURRAY_DTYPE_UINT8: u32 = 6;
pub const HURRAY_DTYPE_UINT16: u32 = 7;
pub const HURRAY_DTYPE_UINT32: u32 = 8;
pub const HURRAY_DTYPE_UINT64: u32 = 9;
pub const HURRAY_DTYPE_INT1: u32 = 10;
pub const HURRAY_DTYPE_INT2: u32 = 11;
pub const HURRAY_DTYPE_INT4: u32 = 12;
pub const HURRAY_DTYPE_UINT1: u32 = 13;
pub const HURRAY_DTYPE_UINT2: u32 = 14;
pub const HURRAY_DTYPE_UINT4: u32 = 15;
pub const HURRAY_DTYPE_FLOAT16: u32 = 16;
pub const HURRAY_DTYPE_FLOAT32: u32 = 17;
pub const HURRAY_DTYPE_FLOAT64: u32 = 18;
pub const HURRAY_DTYPE_BFLOAT16: u32 = 19;
pub const HURRAY_DTYPE_COMPLEX32: u32 = 20;
pub const HURRAY_DTYPE_COMPLEX64: u32 = 21;
pub const HURRAY_DTYPE_COMPLEX128: u32 = 22;
pub const HURRAY_DTYPE_FLOAT8_E3M4: u32 = 23;
pub const HURRAY_DTYPE_FLOAT8_E4M3: u32 = 24;
pub const HURRAY_DTYPE_FLOAT8_E4M3B11FNUZ: u32 = 25;
pub const HURRAY_DTYPE_FLOAT8_E4M3FN: u32 = 26;
pub const HURRAY_DTYPE_FLOAT8_E4M3FNUZ: u32 = 27;
pub const HURRAY_DTYPE_FLOAT8_E5M2: u32 = 28;
pub const HURRAY_DTYPE_FLOAT8_E5M2FNUZ: u32 = 29;
pub const HURRAY_DTYPE_FLOAT8_E8M0FNU: u32 = 30;
pub const HURRAY_DTYPE_FLOAT6_E2M3FN: u32 = 31;
pub const HURRAY_DTYPE_FLOAT6_E3M2FN: u32 = 32;
pub const HURRAY_DTYPE_FLOAT4_E2M1FN: u32 = 33;
pub const HURRAY_DTYPE_BCOMPLEX32: u32 = 34;

/// `enum HurrayByteOrder` codes.
pub const HURRAY_BYTE_ORDER_LITTLE: u32 = 0;
pub const HURRAY_BYTE_ORDER_BIG: u32 = 1;

/// `enum HurrayPacking` codes.
pub const HURRAY_PACKING_NONE: u32 = 0;
pub const HURRAY_PACKING_PADDED: u32 = 1;
pub const HURRAY_PACKING_LSB_FIRST: u32 = 2;
pub const HURRAY_PACKING_GGML_SPLIT: u32 = 3;

/// `enum HurrayScheme` codes.
pub const HURRAY_SCHEME_NONE: u32 = 0;
pub const HURRAY_SCHEME_AFFINE: u32 = 1;
pub const HURRAY_SCHEME_MICROSCALING: u32 = 2;
pub const HURRAY_SCHEME_GGML: u32 = 3;

/// `enum HurrayGranularity` codes.
pub const HURRAY_GRANULARITY_NONE: u32 = 0;
pub const HURRAY_GRANULARITY_PER_TENSOR: u32 = 1;
pub const HURRAY_GRANULARITY_PER_AXIS: u32 = 2;
pub const HURRAY_GRANULARITY_PER_BLOCK: u32 = 3;

/// `enum HurrayRole` codes.
pub const HURRAY_ROLE_VALUES: u32 = 1;
pub const HURRAY_ROLE_SCALE: u32 = 2;
pub const HURRAY_ROLE_ZERO_POINT: u32 = 3;
pub const HURRAY_ROLE_GLOBAL_SCALE: u32 = 4;

/// `enum HurrayPartLayout` codes.
pub const HURRAY_PART_LAYOUT_ROW_MAJOR: u32 = 0;
pub const HURRAY_PART_LAYOUT_SWIZZLED_128X4: u32 = 1;

/// `enum HurrayGgmlType` codes.
pub const HURRAY_GGML_Q4_0: u32 = 2;
pub const HURRAY_GGML_Q4_1: u32 = 3;
pub const HURRAY_GGML_Q5_0: u32 = 6;
pub const HURRAY_GGML_Q5_1: u32 = 7;
pub const HURRAY_GGML_Q8_0: u32 = 8;
pub const HURRAY_GGML_Q4_K: u32 = 12;
pub const HURRAY_GGML_Q6_K: u32 = 14;
pub const HURRAY_GGML_MXFP4: u32 = 39;

/// Opaque handles: never constructed, never read, only pointed to.
#[repr(C)]
pub struct HurrayBuffer {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct HurrayBufferList {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct HurrayDescriptor {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct HurrayTensorContext {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct HurrayReader {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct HurrayWriter {
    _opaque: [u8; 0],
}

/// `HurrayWriteFn` and `HurrayReadFn` of hurray_io.h.
pub type HurrayWriteFn = Option<unsafe extern "C" fn(stream: *mut c_void, data: *const c_void, len: u64) -> c_int>;
pub type HurrayReadFn =
    Option<unsafe extern "C" fn(stream: *mut c_void, data: *mut c_void, len: u64, out_read: *mut u64) -> c_int>;

extern "C" {
    // ---- hurray.h: library
    pub fn hurray_c_abi_version() -> u32;
    pub fn hurray_status_name(status: HurrayStatus) -> *const c_char;
    pub fn hurray_last_error_message() -> *const c_char;

    // ---- HurrayBuffer
    pub fn hurray_buffer_from_ptr(
        ptr: *mut c_void,
        len: u64,
        release: Option<unsafe extern "C" fn(release_context: *mut c_void)>,
        release_context: *mut c_void,
        out: *mut *mut HurrayBuffer,
    ) -> HurrayStatus;
    pub fn hurray_buffer_new(len: u64, alignment: u64, out: *mut *mut HurrayBuffer) -> HurrayStatus;
    pub fn hurray_buffer_data(buf: *const HurrayBuffer, out_data: *mut *mut c_void, out_len: *mut u64) -> HurrayStatus;
    pub fn hurray_buffer_destroy(buf: *mut *mut HurrayBuffer);
    pub fn hurray_buffer_mark_readonly(buf: *mut HurrayBuffer) -> HurrayStatus;
    pub fn hurray_buffer_flags(buf: *const HurrayBuffer, out: *mut u32) -> HurrayStatus;

    // ---- HurrayBufferList
    pub fn hurray_buffer_list_new(out: *mut *mut HurrayBufferList) -> HurrayStatus;
    pub fn hurray_buffer_list_push(list: *mut HurrayBufferList, buf: *mut *mut HurrayBuffer) -> HurrayStatus;
    pub fn hurray_buffer_list_len(list: *const HurrayBufferList, out: *mut u64) -> HurrayStatus;
    pub fn hurray_buffer_list_get(
        list: *const HurrayBufferList,
        index: u64,
        out: *mut *const HurrayBuffer,
    ) -> HurrayStatus;
    pub fn hurray_buffer_list_destroy(list: *mut *mut HurrayBufferList);

    // ---- HurrayDescriptor: decoding and checking
    pub fn hurray_descriptor_decode(bytes: *const u8, len: u64, out: *mut *mut HurrayDescriptor) -> HurrayStatus;
    pub fn hurray_descriptor_check_buffers(desc: *const HurrayDescriptor, list: *const HurrayBufferList)
        -> HurrayStatus;
    pub fn hurray_descriptor_destroy(desc: *mut *mut HurrayDescriptor);

    // ---- HurrayDescriptor: building and encoding
    pub fn hurray_descriptor_new(
        dtype: u32,
        rank: u32,
        shape: *const u64,
        out: *mut *mut HurrayDescriptor,
    ) -> HurrayStatus;
    pub fn hurray_descriptor_set_strides(desc: *mut HurrayDescriptor, rank: u32, strides: *const i64) -> HurrayStatus;
    pub fn hurray_descriptor_set_byte_order(desc: *mut HurrayDescriptor, byte_order: u32) -> HurrayStatus;
    pub fn hurray_descriptor_set_packing(desc: *mut HurrayDescriptor, packing: u32) -> HurrayStatus;
    pub fn hurray_descriptor_set_quantization(
        desc: *mut HurrayDescriptor,
        scheme: u32,
        granularity: u32,
        axis: u32,
        block_size: u64,
        ggml_type: u32,
    ) -> HurrayStatus;
    pub fn hurray_descriptor_set_part(
        desc: *mut HurrayDescriptor,
        role: u32,
        dtype: u32,
        buffer_index: u64,
        byte_offset: u64,
        layout: u32,
    ) -> HurrayStatus;
    pub fn hurray_descriptor_validate(desc: *const HurrayDescriptor) -> HurrayStatus;
    pub fn hurray_descriptor_encode(
        desc: *const HurrayDescriptor,
        out: *mut u8,
        capacity: u64,
        out_len: *mut u64,
    ) -> HurrayStatus;

    // ---- HurrayDescriptor: accessors (borrowed arrays live as long as the descriptor)
    pub fn hurray_descriptor_dtype(desc: *const HurrayDescriptor, out: *mut u32) -> HurrayStatus;
    pub fn hurray_descriptor_rank(desc: *const HurrayDescriptor, out: *mut u32) -> HurrayStatus;
    pub fn hurray_descriptor_shape(desc: *const HurrayDescriptor, out: *mut *const u64) -> HurrayStatus;
    pub fn hurray_descriptor_strides(desc: *const HurrayDescriptor, out: *mut *const i64) -> HurrayStatus;
    pub fn hurray_descriptor_byte_order(desc: *const HurrayDescriptor, out: *mut u32) -> HurrayStatus;
    pub fn hurray_descriptor_packing(desc: *const HurrayDescriptor, out: *mut u32) -> HurrayStatus;
    pub fn hurray_descriptor_quantization(
        desc: *const HurrayDescriptor,
        out_scheme: *mut u32,
        out_granularity: *mut u32,
        out_axis: *mut u32,
        out_block_size: *mut u64,
        out_ggml_type: *mut u32,
    ) -> HurrayStatus;
    pub fn hurray_descriptor_part(
        desc: *const HurrayDescriptor,
        role: u32,
        out_dtype: *mut u32,
        out_buffer_index: *mut u64,
        out_byte_offset: *mut u64,
        out_layout: *mut u32,
    ) -> HurrayStatus;
    pub fn hurray_descriptor_buffer_count(desc: *const HurrayDescriptor, out: *mut u64) -> HurrayStatus;

    // ---- element types
    pub fn hurray_dtype_bits(dtype: u32, out: *mut u32) -> HurrayStatus;
    pub fn hurray_dtype_name(dtype: u32) -> *const c_char;

    // ---- GGML block and layout facts
    pub fn hurray_ggml_block(ggml_type: u32, out_elements: *mut u64, out_bytes: *mut u64) -> HurrayStatus;
    pub fn hurray_ggml_name(ggml_type: u32) -> *const c_char;
    pub fn hurray_layout_row_major_strides(
        rank: u32,
        shape: *const u64,
        out_strides: *mut i64,
    ) -> HurrayStatus;
    pub fn hurray_layout_swizzled_128x4_count(rows: u64, cols: u64, out: *mut u64) -> HurrayStatus;

    // ---- HurrayTensorContext
    pub fn hurray_tensor_context_new(
        abi_version: u32,
        descriptor_bytes: *const u8,
        descriptor_len: u64,
        owner: *mut c_void,
        owner_release: Option<unsafe extern "C" fn(owner: *mut c_void)>,
        out: *mut *mut HurrayTensorContext,
    ) -> HurrayStatus;
    pub fn hurray_tensor_context_abi_version(ctx: *const HurrayTensorContext, out: *mut u32) -> HurrayStatus;
    pub fn hurray_tensor_context_descriptor(
        ctx: *const HurrayTensorContext,
        out_bytes: *mut *const u8,
        out_len: *mut u64,
    ) -> HurrayStatus;
    pub fn hurray_tensor_context_destroy(ctx: *mut *mut HurrayTensorContext);
    pub fn hurray_tensor_context_buffer_flags(
        ctx: *const HurrayTensorContext,
        list: *const HurrayBufferList,
        index: u64,
        out: *mut u32,
    ) -> HurrayStatus;

    // ---- hurray_io.h
    pub fn hurray_io_version() -> u32;
    pub fn hurray_io_checksum(data: *const c_void, len: u64, out: *mut u64) -> HurrayStatus;

    // ---- HurrayReader
    pub fn hurray_reader_open(path: *const c_char, flags: u32, out: *mut *mut HurrayReader) -> HurrayStatus;
    pub fn hurray_reader_count(reader: *const HurrayReader, out: *mut u64) -> HurrayStatus;
    pub fn hurray_reader_name(
        reader: *const HurrayReader,
        index: u64,
        out_name: *mut *const c_char,
        out_len: *mut u64,
    ) -> HurrayStatus;
    pub fn hurray_reader_find(
        reader: *const HurrayReader,
        name: *const c_char,
        name_len: u64,
        out_index: *mut u64,
    ) -> HurrayStatus;
    pub fn hurray_reader_tensor(
        reader: *const HurrayReader,
        index: u64,
        out_context: *mut *mut HurrayTensorContext,
        out_list: *mut *mut HurrayBufferList,
    ) -> HurrayStatus;
    pub fn hurray_reader_verify(reader: *const HurrayReader, index: u64) -> HurrayStatus;
    pub fn hurray_reader_metadata_count(reader: *const HurrayReader, out: *mut u64) -> HurrayStatus;
    pub fn hurray_reader_metadata_get(
        reader: *const HurrayReader,
        index: u64,
        out_key: *mut *const c_char,
        out_key_len: *mut u64,
        out_value: *mut *const c_char,
        out_value_len: *mut u64,
    ) -> HurrayStatus;
    pub fn hurray_reader_destroy(reader: *mut *mut HurrayReader);

    // ---- HurrayWriter
    pub fn hurray_writer_open(path: *const c_char, flags: u32, out: *mut *mut HurrayWriter) -> HurrayStatus;
    pub fn hurray_writer_set_metadata(
        writer: *mut HurrayWriter,
        key: *const c_char,
        key_len: u64,
        value: *const c_char,
        value_len: u64,
    ) -> HurrayStatus;
    pub fn hurray_writer_add(
        writer: *mut HurrayWriter,
        name: *const c_char,
        name_len: u64,
        context: *const HurrayTensorContext,
        list: *const HurrayBufferList,
    ) -> HurrayStatus;
    pub fn hurray_writer_finish(writer: *mut HurrayWriter) -> HurrayStatus;
    pub fn hurray_writer_destroy(writer: *mut *mut HurrayWriter);

    // ---- frames
    pub fn hurray_frame_write(
        write: HurrayWriteFn,
        stream: *mut c_void,
        name: *const c_char,
        name_len: u64,
        context: *const HurrayTensorContext,
        list: *const HurrayBufferList,
    ) -> HurrayStatus;
    pub fn hurray_frame_read(
        read: HurrayReadFn,
        stream: *mut c_void,
        flags: u32,
        out_name: *mut *mut HurrayBuffer,
        out_context: *mut *mut HurrayTensorContext,
        out_list: *mut *mut HurrayBufferList,
    ) -> HurrayStatus;
}
