//! `File` and `Writer`: .hurray files through hurray-io (hurray_io.h).
//!
//! A tensor read from a file is the same pair a capsule carries; `File`
//! hands it out as a [`Tensor`], checked like any other producer's, and
//! `Writer::add` takes a `Tensor` as it is.
use std::ffi::CString;
use std::os::raw::c_char;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::NonNull;

use crate::buffer::BufferList;
use crate::context::TensorContext;
use crate::error::{check, Error, Result};
use crate::sys;
use crate::tensor::Tensor;

fn c_path(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        Error::new(sys::HURRAY_ERROR_INVALID_ARGUMENT, format!("the path {} holds a NUL byte", path.display()))
    })
}

/// Bytes the library lends (not NUL-terminated), as a String.
fn lent_text(ptr: *const c_char, len: u64, what: &str) -> Result<String> {
    if len == 0 {
        return Ok(String::new());
    }
    if ptr.is_null() || len > isize::MAX as u64 {
        return Err(Error::new(sys::HURRAY_ERROR_CORRUPT, format!("the library lent no bytes for a {what}")));
    }
    // SAFETY: the reader lends `len` bytes for as long as it lives; copied now.
    let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len as usize) };
    String::from_utf8(bytes.to_vec())
        .map_err(|_| Error::new(sys::HURRAY_ERROR_CORRUPT, format!("a {what} in the file is not UTF-8")))
}

/// A .hurray file, open for random access. Tensors taken from it stay
/// valid after it is dropped.
pub struct File {
    raw: NonNull<sys::HurrayReader>,
}

// SAFETY: a handle may be used from any thread, one thread at a time.
unsafe impl Send for File {}

impl File {
    /// Opens `path`, verifying each tensor's checksum as it is read.
    pub fn open(path: impl AsRef<Path>) -> Result<File> {
        File::open_with(path, sys::HURRAY_READ_DEFAULT)
    }

    /// Opens with reader flags (`sys::HURRAY_READ_NO_VERIFY`, `sys::HURRAY_READ_NO_MMAP`).
    pub fn open_with(path: impl AsRef<Path>, flags: u32) -> Result<File> {
        let path = c_path(path.as_ref())?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path; `raw` is an out-parameter.
        check(unsafe { sys::hurray_reader_open(path.as_ptr(), flags, &mut raw) })?;
        NonNull::new(raw)
            .map(|raw| File { raw })
            .ok_or_else(|| Error::new(sys::HURRAY_ERROR_NULL_ARGUMENT, "the library returned no reader"))
    }

    fn ptr(&self) -> *const sys::HurrayReader {
        self.raw.as_ptr()
    }

    /// How many tensors the file holds.
    pub fn len(&self) -> Result<u64> {
        let mut n = 0u64;
        // SAFETY: a live reader.
        check(unsafe { sys::hurray_reader_count(self.ptr(), &mut n) })?;
        Ok(n)
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The name of tensor `index`.
    pub fn name(&self, index: u64) -> Result<String> {
        let (mut name, mut len) = (std::ptr::null(), 0u64);
        // SAFETY: a live reader; out-parameters are valid.
        check(unsafe { sys::hurray_reader_name(self.ptr(), index, &mut name, &mut len) })?;
        lent_text(name, len, "tensor name")
    }

    /// Every name, in file order.
    pub fn names(&self) -> Result<Vec<String>> {
        (0..self.len()?).map(|i| self.name(i)).collect()
    }

    /// The index of the tensor called `name` (HURRAY_ERROR_NOT_FOUND if none).
    pub fn find(&self, name: &str) -> Result<u64> {
        let mut index = 0u64;
        // SAFETY: `name` is valid for its length.
        check(unsafe {
            sys::hurray_reader_find(self.ptr(), name.as_ptr() as *const c_char, name.len() as u64, &mut index)
        })?;
        Ok(index)
    }

    /// Tensor `index`, checked as any producer's tensor is.
    pub fn tensor(&self, index: u64) -> Result<Tensor> {
        let (mut context, mut list) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: a live reader; both out-parameters are valid.
        check(unsafe { sys::hurray_reader_tensor(self.ptr(), index, &mut context, &mut list) })?;
        // Ours from here: wrap both first so an error below destroys them.
        // SAFETY: the reader handed both over.
        let list = unsafe { BufferList::from_raw(list) };
        let context = unsafe { TensorContext::from_raw(context) };
        match (list, context) {
            (Ok(list), Ok(context)) => Tensor::from_parts(list, context),
            (Err(e), _) | (_, Err(e)) => Err(e),
        }
    }

    /// The tensor called `name`.
    pub fn get(&self, name: &str) -> Result<Tensor> {
        self.tensor(self.find(name)?)
    }

    /// Verifies tensor `index`'s checksum now, whatever the flags.
    pub fn verify(&self, index: u64) -> Result<()> {
        // SAFETY: a live reader.
        check(unsafe { sys::hurray_reader_verify(self.ptr(), index) })
    }

    /// The file-level string metadata, in file order.
    pub fn metadata(&self) -> Result<Vec<(String, String)>> {
        let mut n = 0u64;
        // SAFETY: a live reader.
        check(unsafe { sys::hurray_reader_metadata_count(self.ptr(), &mut n) })?;
        let mut out = Vec::new();
        for i in 0..n {
            let (mut key, mut key_len, mut value, mut value_len) = (std::ptr::null(), 0u64, std::ptr::null(), 0u64);
            // SAFETY: out-parameters are valid.
            check(unsafe {
                sys::hurray_reader_metadata_get(self.ptr(), i, &mut key, &mut key_len, &mut value, &mut value_len)
            })?;
            out.push((lent_text(key, key_len, "metadata key")?, lent_text(value, value_len, "metadata value")?));
        }
        Ok(out)
    }
}

impl Drop for File {
    fn drop(&mut self) {
        let mut raw = self.raw.as_ptr();
        // SAFETY: this value owns the reader and destroys it once.
        unsafe { sys::hurray_reader_destroy(&mut raw) };
    }
}

/// A .hurray file being written: to a temporary file, renamed over the path
/// by [`Writer::finish`]. Dropped unfinished, it removes the temporary and
/// leaves the path untouched.
pub struct Writer {
    raw: NonNull<sys::HurrayWriter>,
}

// SAFETY: a handle may be used from any thread, one thread at a time.
unsafe impl Send for Writer {}

impl Writer {
    pub fn create(path: impl AsRef<Path>) -> Result<Writer> {
        Writer::create_with(path, sys::HURRAY_WRITE_DEFAULT)
    }

    /// With writer flags (`sys::HURRAY_WRITE_PAGE_ALIGN`).
    pub fn create_with(path: impl AsRef<Path>, flags: u32) -> Result<Writer> {
        let path = c_path(path.as_ref())?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path; `raw` is an out-parameter.
        check(unsafe { sys::hurray_writer_open(path.as_ptr(), flags, &mut raw) })?;
        NonNull::new(raw)
            .map(|raw| Writer { raw })
            .ok_or_else(|| Error::new(sys::HURRAY_ERROR_NULL_ARGUMENT, "the library returned no writer"))
    }

    pub fn set_metadata(&mut self, key: &str, value: &str) -> Result<()> {
        // SAFETY: both strings are valid for their lengths.
        check(unsafe {
            sys::hurray_writer_set_metadata(
                self.raw.as_ptr(),
                key.as_ptr() as *const c_char,
                key.len() as u64,
                value.as_ptr() as *const c_char,
                value.len() as u64,
            )
        })
    }

    /// Adds `tensor` under `name`; the bytes are written now, the tensor stays the caller's.
    pub fn add(&mut self, name: &str, tensor: &Tensor) -> Result<()> {
        // SAFETY: the name is valid for its length; both handles are live.
        check(unsafe {
            sys::hurray_writer_add(
                self.raw.as_ptr(),
                name.as_ptr() as *const c_char,
                name.len() as u64,
                tensor.context().as_ptr(),
                tensor.list().as_ptr(),
            )
        })
    }

    /// Writes the index and trailer, syncs, and renames over the path.
    pub fn finish(self) -> Result<()> {
        // SAFETY: a live writer; Drop destroys it afterwards.
        check(unsafe { sys::hurray_writer_finish(self.raw.as_ptr()) })
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let mut raw = self.raw.as_ptr();
        // SAFETY: this value owns the writer and destroys it once.
        unsafe { sys::hurray_writer_destroy(&mut raw) };
    }
}
