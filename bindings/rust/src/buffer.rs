//! `BufferList`: the buffers of one tensor, owning a `HurrayBufferList`.
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

use crate::error::{check, Error, Result};
use crate::sys;

/// The alignment of buffers this crate allocates (the file format's).
const ALIGNMENT: u64 = 64;

/// A list of buffers; destroying it destroys every buffer, each once.
pub struct BufferList {
    raw: NonNull<sys::HurrayBufferList>,
}

// SAFETY: a handle may be used from any thread, one thread at a time
// (hurray.h): Send, and not Sync, because even the accessors call C
// with the handle.
unsafe impl Send for BufferList {}

impl BufferList {
    pub fn new() -> Result<BufferList> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: `raw` is an out-parameter.
        check(unsafe { sys::hurray_buffer_list_new(&mut raw) })?;
        // SAFETY: on HURRAY_OK the list is ours.
        unsafe { BufferList::from_raw(raw) }
    }

    /// Takes ownership of a list made elsewhere (a capsule's pointer, a
    /// reader's output). Refuses NULL.
    ///
    /// # Safety
    /// `raw` must be a live `HurrayBufferList` that nothing else will
    /// destroy or use once this call returns Ok.
    pub unsafe fn from_raw(raw: *mut sys::HurrayBufferList) -> Result<BufferList> {
        NonNull::new(raw)
            .map(|raw| BufferList { raw })
            .ok_or_else(|| Error::new(sys::HURRAY_ERROR_NULL_ARGUMENT, "the buffer list is NULL"))
    }

    /// Gives the handle back without destroying it.
    pub fn into_raw(self) -> *mut sys::HurrayBufferList {
        let raw = self.raw.as_ptr();
        std::mem::forget(self);
        raw
    }

    pub fn as_ptr(&self) -> *const sys::HurrayBufferList {
        self.raw.as_ptr()
    }

    /// Appends a copy of `bytes`, in memory the library allocates (64-byte aligned).
    pub fn push_copy(&mut self, bytes: &[u8]) -> Result<()> {
        let mut buf = std::ptr::null_mut();
        // SAFETY: `buf` is an out-parameter.
        check(unsafe { sys::hurray_buffer_new(bytes.len() as u64, ALIGNMENT, &mut buf) })?;
        let (mut data, mut len) = (std::ptr::null_mut(), 0u64);
        // SAFETY: `buf` is live; out-parameters are valid.
        let status = unsafe { sys::hurray_buffer_data(buf, &mut data, &mut len) };
        if status != sys::HURRAY_OK || len != bytes.len() as u64 || (data.is_null() && !bytes.is_empty()) {
            let error = if status != sys::HURRAY_OK {
                Error::from_library(status)
            } else {
                Error::new(sys::HURRAY_ERROR_INVALID_ARGUMENT, format!("a new buffer of {} bytes has {len}", bytes.len()))
            };
            // SAFETY: the buffer is still ours.
            unsafe { sys::hurray_buffer_destroy(&mut buf) };
            return Err(error);
        }
        // SAFETY: `data` holds `len` == bytes.len() writable bytes of a new buffer.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), data as *mut u8, bytes.len()) };
        self.push_raw(buf)
    }

    /// Appends `bytes` without copying: the buffer owns the Vec and drops it
    /// when the list is destroyed.
    pub fn push_vec(&mut self, bytes: Vec<u8>) -> Result<()> {
        self.push_owned(bytes)
    }

    /// Appends the bytes `owner` holds without copying: the buffer owns
    /// `owner` and drops it exactly once, on whichever thread destroys the
    /// list (or here, if the push fails). A `Box<[u8]>`, a pool's block that
    /// returns itself on Drop, or any type that counts its releases will do.
    ///
    /// `AsMut`, not `AsRef`: an unmarked buffer may be written by its
    /// consumer, so only memory the owner holds exclusively may be handed
    /// over this way (shared memory goes through [`BufferList::push_shared`],
    /// marked read-only; ADR-042, ADR-059). The slice
    /// is taken once, after `owner` is boxed, and must stay where it is until
    /// `owner` drops (true of every type that owns its bytes).
    pub fn push_owned<T: AsMut<[u8]> + Send + 'static>(&mut self, owner: T) -> Result<()> {
        let mut boxed = Box::new(owner);
        let (ptr, len) = {
            let bytes = (*boxed).as_mut();
            (bytes.as_mut_ptr() as *mut c_void, bytes.len() as u64)
        };
        self.push_boxed(boxed, ptr, len, false)
    }

    /// Appends the bytes `owner` shares without copying, marked read-only
    /// (ABI 5, ADR-059): an `Arc<[u8]>` shared with other threads, a
    /// `&'static [u8]`, a mapping someone else owns. A consumer learns the
    /// mark through the context ([`crate::Tensor::is_readonly`]) and must not
    /// write; the buffer owns `owner` and drops it exactly once.
    pub fn push_shared<T: AsRef<[u8]> + Send + Sync + 'static>(&mut self, owner: T) -> Result<()> {
        let boxed = Box::new(owner);
        let (ptr, len) = {
            let bytes = (*boxed).as_ref();
            (bytes.as_ptr() as *mut c_void, bytes.len() as u64)
        };
        self.push_boxed(boxed, ptr, len, true)
    }

    /// Wraps the `len` bytes at `ptr`, which `boxed` owns and keeps where
    /// they are, in a buffer that drops `boxed` exactly once (on whichever
    /// thread destroys the list, or here if anything fails), marks it
    /// read-only when asked (before any consumer can see it), and appends it.
    fn push_boxed<T: Send + 'static>(&mut self, boxed: Box<T>, ptr: *mut c_void, len: u64, readonly: bool) -> Result<()> {
        unsafe extern "C" fn release<T>(context: *mut c_void) {
            // Never unwind into C.
            let _ = catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: `context` is the Box made in push_boxed, released exactly once.
                drop(unsafe { Box::from_raw(context as *mut T) });
            }));
        }
        let context = Box::into_raw(boxed) as *mut c_void;
        let mut buf = std::ptr::null_mut();
        // SAFETY: `ptr` holds `len` bytes that live as long as `context`.
        let status = unsafe { sys::hurray_buffer_from_ptr(ptr, len, Some(release::<T>), context, &mut buf) };
        if status != sys::HURRAY_OK {
            let error = Error::from_library(status);
            // SAFETY: on failure ownership did not pass; the Box is still ours.
            drop(unsafe { Box::from_raw(context as *mut T) });
            return Err(error);
        }
        if readonly {
            // SAFETY: a live buffer this crate just made.
            let status = unsafe { sys::hurray_buffer_mark_readonly(buf) };
            if status != sys::HURRAY_OK {
                let error = Error::from_library(status);
                // SAFETY: still ours; destroying it drops `boxed` once.
                unsafe { sys::hurray_buffer_destroy(&mut buf) };
                return Err(error);
            }
        }
        self.push_raw(buf)
    }

    fn push_raw(&mut self, mut buf: *mut sys::HurrayBuffer) -> Result<()> {
        // SAFETY: both handles are live; on success the list takes `buf`.
        let status = unsafe { sys::hurray_buffer_list_push(self.raw.as_ptr(), &mut buf) };
        if status != sys::HURRAY_OK {
            let error = Error::from_library(status);
            // SAFETY: on failure the buffer is still ours.
            unsafe { sys::hurray_buffer_destroy(&mut buf) };
            return Err(error);
        }
        Ok(())
    }

    /// How many buffers the list holds.
    pub fn len(&self) -> Result<u64> {
        let mut len = 0u64;
        // SAFETY: a live list; `len` is an out-parameter.
        check(unsafe { sys::hurray_buffer_list_len(self.as_ptr(), &mut len) })?;
        Ok(len)
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The bytes of buffer `index`, borrowed from the list.
    ///
    /// The bytes belong to the producer, which could in principle change
    /// them while they are lent; a validated [`crate::Tensor`] is the way to
    /// read elements through a descriptor.
    pub fn get(&self, index: u64) -> Result<&[u8]> {
        let mut buf = std::ptr::null();
        // SAFETY: a live list; `buf` is an out-parameter.
        check(unsafe { sys::hurray_buffer_list_get(self.as_ptr(), index, &mut buf) })?;
        let (mut data, mut len) = (std::ptr::null_mut(), 0u64);
        // SAFETY: `buf` is borrowed from the live list.
        check(unsafe { sys::hurray_buffer_data(buf, &mut data, &mut len) })?;
        if len == 0 {
            return Ok(&[]);
        }
        if data.is_null() || len > isize::MAX as u64 {
            return Err(Error::new(
                sys::HURRAY_ERROR_INVALID_ARGUMENT,
                format!("buffer {index} has {len} bytes at {data:?}"),
            ));
        }
        // SAFETY: the library's buffer spans `len` bytes at `data`, alive as
        // long as the list, which `&self` borrows.
        Ok(unsafe { std::slice::from_raw_parts(data as *const u8, len as usize) })
    }
}

impl Drop for BufferList {
    fn drop(&mut self) {
        let mut raw = self.raw.as_ptr();
        // SAFETY: this value owns the list and destroys it once.
        unsafe { sys::hurray_buffer_list_destroy(&mut raw) };
    }
}

impl std::fmt::Debug for BufferList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferList").field("len", &self.len()).finish()
    }
}
