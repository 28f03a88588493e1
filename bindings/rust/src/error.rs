//! `hurray::Error`: a status and the library's message for it.
use std::ffi::CStr;
use std::fmt;

use crate::sys;

/// A failure: the `HurrayStatus` code, its name (`"HURRAY_ERROR_..."`) and
/// the message the library (or this crate) gave for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: u32,
    name: String,
    message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

/// A C string owned by the library, copied; "" for NULL.
pub(crate) fn c_text(ptr: *const std::os::raw::c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: the library returns NUL-terminated static or thread-local strings.
    unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
}

fn status_name(status: u32) -> String {
    // SAFETY: takes any value; returns a static string, never NULL.
    let name = c_text(unsafe { sys::hurray_status_name(status) });
    if name.is_empty() {
        "HURRAY_ERROR_UNKNOWN".to_string()
    } else {
        name
    }
}

impl Error {
    /// A refusal made by this crate, named with the library's status names.
    pub fn new(status: u32, message: impl Into<String>) -> Error {
        Error { status, name: status_name(status), message: message.into() }
    }

    /// The status a library call returned, with the thread's message for it.
    /// Call it right after the failing call, on the same thread.
    pub(crate) fn from_library(status: u32) -> Error {
        // SAFETY: no arguments; the message belongs to this thread.
        let message = c_text(unsafe { sys::hurray_last_error_message() });
        Error { status, name: status_name(status), message }
    }

    /// The `HurrayStatus` code.
    pub fn status(&self) -> u32 {
        self.status
    }

    /// The status's name, such as `"HURRAY_ERROR_ABI_VERSION"`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What went wrong, in the library's (or this crate's) words.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.message)
    }
}

impl std::error::Error for Error {}

/// Ok for HURRAY_OK, else the library's error.
pub(crate) fn check(status: sys::HurrayStatus) -> Result<()> {
    if status == sys::HURRAY_OK {
        Ok(())
    } else {
        Err(Error::from_library(status))
    }
}
