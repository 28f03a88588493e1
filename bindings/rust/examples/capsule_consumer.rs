//! A cdylib that Python loads (ctypes.PyDLL) and hands `obj.__hurray__()`.
//!
//! It reads the "hurray_tensor" capsule through the CPython C API, declared
//! here by hand, and takes ownership as ADR-023 § 5 says a consumer does:
//! every check first (name, ABI version, descriptor, buffers: all in
//! `hurray::Tensor::from_raw`), then the capsule is renamed
//! "used_hurray_tensor" and its context cleared, and from then on the
//! handles are the Rust `Tensor`'s, destroyed once by its Drop. A refused
//! capsule is left exactly as it was found.
//!
//! Every exported function catches panics: none crosses into C.
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use hurray::{sys, Error, Tensor};

#[path = "common/mod.rs"]
mod common;

use common::write_text;

/// A Python object: only ever pointed to.
#[repr(C)]
pub struct PyObject {
    _opaque: [u8; 0],
}

// The CPython C API, as Python.h declares it. Called with the GIL held
// (the caller loads this library with ctypes.PyDLL).
extern "C" {
    fn PyCapsule_IsValid(capsule: *mut PyObject, name: *const c_char) -> c_int;
    fn PyCapsule_GetPointer(capsule: *mut PyObject, name: *const c_char) -> *mut c_void;
    fn PyCapsule_GetContext(capsule: *mut PyObject) -> *mut c_void;
    fn PyCapsule_SetName(capsule: *mut PyObject, name: *const c_char) -> c_int;
    fn PyCapsule_SetContext(capsule: *mut PyObject, context: *mut c_void) -> c_int;
    fn PyErr_Occurred() -> *mut PyObject;
    fn PyErr_Clear();
}

// Static: a capsule keeps a pointer to its name, never a copy.
static CAPSULE_NAME: &CStr = c"hurray_tensor";
static USED_NAME: &CStr = c"used_hurray_tensor";

/// Checks, then takes, the capsule's handles.
fn take(capsule: *mut PyObject) -> hurray::Result<Tensor> {
    if capsule.is_null() {
        return Err(Error::new(sys::HURRAY_ERROR_NULL_ARGUMENT, "no capsule"));
    }
    // SAFETY: `capsule` is a live Python object (the caller passes one);
    // IsValid accepts any object and sets no exception.
    if unsafe { PyCapsule_IsValid(capsule, CAPSULE_NAME.as_ptr()) } == 0 {
        return Err(Error::new(sys::HURRAY_ERROR_INVALID_ARGUMENT, "not an unused capsule named 'hurray_tensor'"));
    }
    // SAFETY: a valid capsule of that name.
    let (list, context) = unsafe {
        let list = PyCapsule_GetPointer(capsule, CAPSULE_NAME.as_ptr());
        let context = PyCapsule_GetContext(capsule);
        if !PyErr_Occurred().is_null() {
            PyErr_Clear();
        }
        (list as *mut sys::HurrayBufferList, context as *mut sys::HurrayTensorContext)
    };
    // SAFETY: a capsule of this name carries a list and a context that
    // starts with the frozen header (or something the version check
    // refuses). On Err nothing was taken.
    let tensor = unsafe { Tensor::from_raw(list, context) }?;
    // SAFETY: as above; the names are static.
    let renamed = unsafe { PyCapsule_SetName(capsule, USED_NAME.as_ptr()) } == 0
        && unsafe { PyCapsule_SetContext(capsule, std::ptr::null_mut()) } == 0;
    if !renamed {
        // The capsule still owns its handles: give them back, undestroyed.
        // SAFETY: clearing the exception the failed call set.
        unsafe { PyErr_Clear() };
        let _ = tensor.into_raw();
        return Err(Error::new(sys::HURRAY_ERROR_INVALID_ARGUMENT, "the capsule could not be renamed"));
    }
    Ok(tensor)
}

fn guarded(out: *mut c_char, cap: usize, body: impl FnOnce() -> hurray::Result<String>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(text)) => {
            write_text(&text, out, cap);
            0
        }
        Ok(Err(e)) => {
            write_text(&format!("refused: {e}"), out, cap);
            e.status() as c_int
        }
        Err(_) => {
            write_text("panic caught inside the Rust consumer", out, cap);
            -1
        }
    }
}

/// Takes the capsule. On success (0) `*out_tensor` is the Rust tensor (free
/// it with `hurray_rust_release`) and `text` says what was read; otherwise
/// the HurrayStatus of the refusal, its reason in `text`, and the capsule
/// untouched.
///
/// # Safety
/// `capsule` is a live Python object and the GIL is held; `out_tensor` is
/// NULL or writable; `text` holds `cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn hurray_rust_take(
    capsule: *mut PyObject,
    out_tensor: *mut *mut c_void,
    text: *mut c_char,
    cap: usize,
) -> c_int {
    guarded(text, cap, || {
        if out_tensor.is_null() {
            return Err(Error::new(sys::HURRAY_ERROR_NULL_ARGUMENT, "out_tensor is NULL"));
        }
        let tensor = take(capsule)?;
        let report = common::report(&tensor)?;
        // SAFETY: checked non-NULL above.
        unsafe { *out_tensor = Box::into_raw(Box::new(tensor)) as *mut c_void };
        Ok(report)
    })
}

/// What a taken tensor holds, read again.
///
/// # Safety
/// `tensor` is NULL or a pointer `hurray_rust_take` returned and not yet
/// released; `text` holds `cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn hurray_rust_describe(tensor: *const c_void, text: *mut c_char, cap: usize) -> c_int {
    guarded(text, cap, || {
        // SAFETY: NULL or a pointer hurray_rust_take returned and not yet released.
        match unsafe { (tensor as *const Tensor).as_ref() } {
            Some(tensor) => common::report(tensor),
            None => Err(Error::new(sys::HURRAY_ERROR_NULL_ARGUMENT, "no tensor")),
        }
    })
}

/// Drops a taken tensor: its list, then its context (whose owner is released there).
///
/// # Safety
/// `tensor` is NULL or a pointer `hurray_rust_take` returned, released once.
#[no_mangle]
pub unsafe extern "C" fn hurray_rust_release(tensor: *mut c_void) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if !tensor.is_null() {
            // SAFETY: a pointer hurray_rust_take returned, released once.
            drop(unsafe { Box::from_raw(tensor as *mut Tensor) });
        }
    }));
}
