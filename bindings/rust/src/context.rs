//! `TensorContext`: what a capsule carries beside its buffers (ADR-034).
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

use crate::error::{check, Error, Result};
use crate::sys;

/// A `HurrayTensorContext` whose ABI version was read first and is one this
/// crate reads: 4 (whose buffers are all writable by contract) or 5 (whose
/// buffers say whether they are read-only; ADR-059).
pub struct TensorContext {
    raw: NonNull<sys::HurrayTensorContext>,
    version: u32,
}

// SAFETY: a handle may be used from any thread, one thread at a time
// (hurray.h): Send, and not Sync, because even the accessors call C
// with the handle; the owner given to `with_owner` must be Send.
unsafe impl Send for TensorContext {}

/// ADR-034 § 4: the ABI version, read before anything else about `ctx` is
/// trusted, and judged. Reads only the frozen 8-byte header.
///
/// # Safety
/// `ctx` must be NULL or point to at least 8 readable bytes.
pub(crate) unsafe fn checked_version(ctx: *const sys::HurrayTensorContext) -> Result<u32> {
    if ctx.is_null() {
        return Err(Error::new(sys::HURRAY_ERROR_NULL_ARGUMENT, "the tensor context is NULL"));
    }
    let mut version = 0u32;
    // SAFETY: the caller's promise; the library reads the header only.
    check(unsafe { sys::hurray_tensor_context_abi_version(ctx, &mut version) })?;
    if !(sys::HURRAY_C_ABI_MIN_VERSION..=sys::HURRAY_C_ABI_VERSION).contains(&version) {
        return Err(Error::new(
            sys::HURRAY_ERROR_ABI_VERSION,
            format!(
                "the context has C ABI version {version}; this binding reads versions {} to {}",
                sys::HURRAY_C_ABI_MIN_VERSION,
                sys::HURRAY_C_ABI_VERSION
            ),
        ));
    }
    Ok(version)
}

impl TensorContext {
    /// A context of this ABI version holding a copy of `descriptor_bytes`, with no owner.
    pub fn new(descriptor_bytes: &[u8]) -> Result<TensorContext> {
        Self::make(descriptor_bytes, std::ptr::null_mut(), None)
    }

    /// As [`TensorContext::new`], keeping `owner` alive until the context
    /// is destroyed, then dropping it exactly once (on whichever thread
    /// destroys the context).
    pub fn with_owner<T: Send + 'static>(descriptor_bytes: &[u8], owner: T) -> Result<TensorContext> {
        unsafe extern "C" fn release<T>(owner: *mut c_void) {
            // Never unwind into C.
            let _ = catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: the Box made in with_owner, released exactly once.
                drop(unsafe { Box::from_raw(owner as *mut T) });
            }));
        }
        let owner = Box::into_raw(Box::new(owner)) as *mut c_void;
        Self::make(descriptor_bytes, owner, Some(release::<T>)).inspect_err(|_| {
            // SAFETY: on failure ownership did not pass; the Box is ours.
            drop(unsafe { Box::from_raw(owner as *mut T) });
        })
    }

    fn make(
        bytes: &[u8],
        owner: *mut c_void,
        release: Option<unsafe extern "C" fn(*mut c_void)>,
    ) -> Result<TensorContext> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the slice is valid; `raw` is an out-parameter.
        check(unsafe {
            sys::hurray_tensor_context_new(
                sys::HURRAY_C_ABI_VERSION,
                bytes.as_ptr(),
                bytes.len() as u64,
                owner,
                release,
                &mut raw,
            )
        })?;
        NonNull::new(raw)
            .map(|raw| TensorContext { raw, version: sys::HURRAY_C_ABI_VERSION })
            .ok_or_else(|| Error::new(sys::HURRAY_ERROR_NULL_ARGUMENT, "the library returned no context"))
    }

    /// Takes ownership of a context made elsewhere, after reading its ABI
    /// version first and refusing any but this crate's. On Err nothing is
    /// taken: the pointer is still the caller's, untouched.
    ///
    /// # Safety
    /// `raw` must be NULL or point to at least 8 readable bytes; if it is a
    /// context of this ABI version, nothing else may destroy or use it once
    /// this call returns Ok.
    pub unsafe fn from_raw(raw: *mut sys::HurrayTensorContext) -> Result<TensorContext> {
        // SAFETY: the caller's promise.
        let version = unsafe { checked_version(raw) }?;
        NonNull::new(raw)
            .map(|raw| TensorContext { raw, version })
            .ok_or_else(|| Error::new(sys::HURRAY_ERROR_NULL_ARGUMENT, "the tensor context is NULL"))
    }

    /// Wraps a context whose version `checked_version` accepted, with the
    /// list it travels with (returned alongside, so that a NULL here, which
    /// the check already excluded, gives the list back undestroyed).
    pub(crate) fn adopt_checked(
        raw: *mut sys::HurrayTensorContext,
        version: u32,
        list: crate::BufferList,
    ) -> Result<(TensorContext, crate::BufferList)> {
        match NonNull::new(raw) {
            Some(raw) => Ok((TensorContext { raw, version }, list)),
            None => {
                let _ = list.into_raw();
                Err(Error::new(sys::HURRAY_ERROR_NULL_ARGUMENT, "the tensor context is NULL"))
            }
        }
    }

    /// Gives the handle back without destroying it.
    pub fn into_raw(self) -> *mut sys::HurrayTensorContext {
        let raw = self.raw.as_ptr();
        std::mem::forget(self);
        raw
    }

    pub fn as_ptr(&self) -> *const sys::HurrayTensorContext {
        self.raw.as_ptr()
    }

    /// The ABI version that made the context (4 or 5: checked on entry).
    pub fn abi_version(&self) -> u32 {
        self.version
    }

    /// The descriptor bytes the context carries, borrowed.
    pub fn descriptor_bytes(&self) -> Result<&[u8]> {
        let (mut bytes, mut len) = (std::ptr::null(), 0u64);
        // SAFETY: a live context of this ABI version.
        check(unsafe { sys::hurray_tensor_context_descriptor(self.as_ptr(), &mut bytes, &mut len) })?;
        if bytes.is_null() || len > isize::MAX as u64 {
            return Err(Error::new(sys::HURRAY_ERROR_INVALID_DESCRIPTOR, "the context lent no descriptor bytes"));
        }
        // SAFETY: lent for as long as the context lives; `&self` borrows it.
        Ok(unsafe { std::slice::from_raw_parts(bytes, len as usize) })
    }
}

impl Drop for TensorContext {
    fn drop(&mut self) {
        let mut raw = self.raw.as_ptr();
        // SAFETY: this value owns the context and destroys it once; the
        // owner's release runs inside, exactly once.
        unsafe { sys::hurray_tensor_context_destroy(&mut raw) };
    }
}

impl std::fmt::Debug for TensorContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorContext").field("abi_version", &self.abi_version()).finish()
    }
}
