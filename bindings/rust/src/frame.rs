//! Frames: one named tensor on a byte stream (hurray_io.h), over any
//! `std::io::Write` or `std::io::Read`. The C library calls back into Rust
//! for the bytes; the callbacks catch panics and keep the stream's
//! `io::Error` so that the `hurray::Error` can say what the stream refused.
use std::io::{self, Read, Write};
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::buffer::BufferList;
use crate::context::TensorContext;
use crate::error::{Error, Result};
use crate::sys;
use crate::tensor::Tensor;

/// The stream and the first error it gave, behind the callbacks' `void *`.
struct Stream<S> {
    inner: S,
    error: Option<io::Error>,
}

unsafe extern "C" fn write_all<W: Write>(stream: *mut c_void, data: *const c_void, len: u64) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `stream` is the Stream<W> write_frame passed, alive for the call.
        let stream = unsafe { &mut *(stream as *mut Stream<W>) };
        let bytes = if len == 0 {
            &[][..]
        } else {
            // SAFETY: the library passes `len` readable bytes at `data`.
            unsafe { std::slice::from_raw_parts(data as *const u8, len as usize) }
        };
        match stream.inner.write_all(bytes) {
            Ok(()) => 0,
            Err(e) => {
                stream.error.get_or_insert(e);
                -1
            }
        }
    }));
    // A caught panic is a failed write or read, never an unwind into C.
    outcome.unwrap_or(-1)
}

unsafe extern "C" fn read_some<R: Read>(stream: *mut c_void, data: *mut c_void, len: u64, out_read: *mut u64) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `stream` is the Stream<R> read_frame passed, alive for the call.
        let stream = unsafe { &mut *(stream as *mut Stream<R>) };
        let want = len.min(isize::MAX as u64) as usize;
        let buf = if want == 0 {
            &mut [][..]
        } else {
            // SAFETY: the library passes `len` writable bytes at `data`.
            unsafe { std::slice::from_raw_parts_mut(data as *mut u8, want) }
        };
        loop {
            match stream.inner.read(buf) {
                Ok(n) => {
                    // SAFETY: a valid out-parameter.
                    unsafe { *out_read = n as u64 };
                    return 0;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    stream.error.get_or_insert(e);
                    return -1;
                }
            }
        }
    }));
    // A caught panic is a failed write or read, never an unwind into C.
    outcome.unwrap_or(-1)
}

/// The library's error, with the stream's own error when it had one.
fn failed<S>(status: sys::HurrayStatus, stream: &mut Stream<S>) -> Error {
    let error = Error::from_library(status);
    match stream.error.take() {
        Some(io) => Error::new(status, format!("{} ({io})", error.message())),
        None => error,
    }
}

/// Writes `tensor` under `name` as one frame.
pub fn write_frame<W: Write>(writer: W, name: &str, tensor: &Tensor) -> Result<()> {
    let mut stream = Stream { inner: writer, error: None };
    // SAFETY: the callback matches the stream's type; both handles are live.
    let status = unsafe {
        sys::hurray_frame_write(
            Some(write_all::<W>),
            &mut stream as *mut Stream<W> as *mut c_void,
            name.as_ptr() as *const c_char,
            name.len() as u64,
            tensor.context().as_ptr(),
            tensor.list().as_ptr(),
        )
    };
    if status != sys::HURRAY_OK {
        return Err(failed(status, &mut stream));
    }
    stream.inner.flush().map_err(|e| Error::new(sys::HURRAY_ERROR_IO, format!("flushing the stream: {e}")))
}

/// Reads one frame: `(name, tensor)`, or None at a clean end of the stream.
/// The checksum is verified and the tensor checked as any producer's is.
pub fn read_frame<R: Read>(reader: R) -> Result<Option<(String, Tensor)>> {
    let mut stream = Stream { inner: reader, error: None };
    let (mut name, mut context, mut list) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: the callback matches the stream's type; out-parameters are valid.
    let status = unsafe {
        sys::hurray_frame_read(
            Some(read_some::<R>),
            &mut stream as *mut Stream<R> as *mut c_void,
            sys::HURRAY_READ_DEFAULT,
            &mut name,
            &mut context,
            &mut list,
        )
    };
    if status != sys::HURRAY_OK {
        return Err(failed(status, &mut stream));
    }
    if name.is_null() && context.is_null() && list.is_null() {
        return Ok(None);
    }
    // Ours from here: wrap everything first so that an error below destroys it.
    let name_bytes = {
        let (mut data, mut len) = (std::ptr::null_mut(), 0u64);
        let got = if name.is_null() {
            sys::HURRAY_ERROR_NULL_ARGUMENT
        } else {
            // SAFETY: a live buffer the library handed over.
            unsafe { sys::hurray_buffer_data(name, &mut data, &mut len) }
        };
        let bytes = match got {
            sys::HURRAY_OK if len == 0 => Ok(Vec::new()),
            sys::HURRAY_OK if !data.is_null() && len <= isize::MAX as u64 => {
                // SAFETY: the buffer spans `len` bytes at `data`; copied before it is destroyed.
                Ok(unsafe { std::slice::from_raw_parts(data as *const u8, len as usize) }.to_vec())
            }
            _ => Err(Error::new(sys::HURRAY_ERROR_CORRUPT, "a frame came without its name")),
        };
        // SAFETY: ours, destroyed once (NULL does nothing).
        unsafe { sys::hurray_buffer_destroy(&mut name) };
        bytes
    };
    // SAFETY: the library handed both over.
    let list = unsafe { BufferList::from_raw(list) };
    let context = unsafe { TensorContext::from_raw(context) };
    let tensor = match (list, context) {
        (Ok(list), Ok(context)) => Tensor::from_parts(list, context)?,
        (Err(e), _) | (_, Err(e)) => return Err(e),
    };
    let name = String::from_utf8(name_bytes?)
        .map_err(|_| Error::new(sys::HURRAY_ERROR_CORRUPT, "a frame's name is not UTF-8"))?;
    Ok(Some((name, tensor)))
}
