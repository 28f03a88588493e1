//! `Tensor`: a validated pair of buffer list and context, with its
//! descriptor decoded — what a capsule carries, owned.
use crate::buffer::BufferList;
use crate::context::{checked_version, TensorContext};
use crate::descriptor::Descriptor;
use crate::error::{Error, Result};
use crate::sys;

/// A tensor whose every buffer was checked against its descriptor.
///
/// Fields drop in declaration order: the descriptor (this crate's), then
/// the buffer list, then the context — the list before the context, as
/// ADR-023 § 5 asks of a consumer that owns a capsule's handles.
pub struct Tensor {
    descriptor: Descriptor,
    list: BufferList,
    context: TensorContext,
}

impl Tensor {
    /// Takes ownership of a raw list and context pair, such as a capsule's
    /// pointer and context, after the checks a consumer owes a producer, in
    /// ADR-034's order: the context's ABI version first, then its
    /// descriptor bytes (decoded and validated), then the buffers against
    /// the descriptor. On Err nothing is taken: both pointers are still the
    /// caller's, untouched.
    ///
    /// # Safety
    /// `context` must be NULL or point to at least 8 readable bytes; if it
    /// passes the version check it must be a live context, and `list` a live
    /// list (or NULL). On Ok both become this Tensor's: nothing else may use
    /// or destroy them.
    pub unsafe fn from_raw(
        list: *mut sys::HurrayBufferList,
        context: *mut sys::HurrayTensorContext,
    ) -> Result<Tensor> {
        // SAFETY: the caller's promise; reads the frozen header only.
        let version = unsafe { checked_version(context) }?;
        if list.is_null() {
            return Err(Error::new(sys::HURRAY_ERROR_NULL_ARGUMENT, "the buffer list is NULL"));
        }
        let descriptor = {
            let (mut bytes, mut len) = (std::ptr::null(), 0u64);
            // SAFETY: a context of this ABI version (checked above).
            crate::error::check(unsafe { sys::hurray_tensor_context_descriptor(context, &mut bytes, &mut len) })?;
            if bytes.is_null() || len > isize::MAX as u64 {
                return Err(Error::new(sys::HURRAY_ERROR_INVALID_DESCRIPTOR, "the context lent no descriptor"));
            }
            // SAFETY: lent by the live context for `len` bytes.
            Descriptor::decode(unsafe { std::slice::from_raw_parts(bytes, len as usize) })?
        };
        // SAFETY: both handles are live; nothing is taken yet.
        crate::error::check(unsafe { sys::hurray_descriptor_check_buffers(descriptor.as_ptr(), list) })?;
        // Every check passed: now, and only now, take both.
        // SAFETY: both non-NULL and live; the caller hands them over on Ok.
        let list = unsafe { BufferList::from_raw(list) }?;
        let context = TensorContext::adopt_checked(context, version, list)?;
        Ok(Tensor { descriptor, list: context.1, context: context.0 })
    }

    /// A tensor over handles this program owns: checks the context's
    /// descriptor against the list. On Err both are destroyed.
    pub fn from_parts(list: BufferList, context: TensorContext) -> Result<Tensor> {
        let descriptor = Descriptor::decode(context.descriptor_bytes()?)?;
        descriptor.check_buffers(&list)?;
        Ok(Tensor { descriptor, list, context })
    }

    /// A tensor of `descriptor` over copies of `buffers` (one per buffer index).
    pub fn new(descriptor: &Descriptor, buffers: &[&[u8]]) -> Result<Tensor> {
        let mut list = BufferList::new()?;
        for bytes in buffers {
            list.push_copy(bytes)?;
        }
        let context = TensorContext::new(&descriptor.encode()?)?;
        Tensor::from_parts(list, context)
    }

    /// A tensor of `descriptor` that takes `buffers` without copying.
    pub fn from_vecs(descriptor: &Descriptor, buffers: Vec<Vec<u8>>) -> Result<Tensor> {
        let mut list = BufferList::new()?;
        for bytes in buffers {
            list.push_vec(bytes)?;
        }
        let context = TensorContext::new(&descriptor.encode()?)?;
        Tensor::from_parts(list, context)
    }

    pub fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// The producer's C ABI version (checked on entry).
    pub fn abi_version(&self) -> u32 {
        self.context.abi_version()
    }

    /// How many buffers the tensor has (the descriptor's count; the list was proved to match).
    pub fn buffer_count(&self) -> Result<u64> {
        self.list.len()
    }

    /// The bytes of buffer `index`: every byte the descriptor can reach in
    /// it lies inside this slice.
    pub fn buffer(&self, index: u64) -> Result<&[u8]> {
        self.list.get(index)
    }

    /// Whether buffer `index` may only be read (ADR-059): asked of the
    /// context, which answers "writable" for a version-4 pair (ABI 4's
    /// promise) without reading its buffers.
    pub fn is_readonly(&self, index: u64) -> Result<bool> {
        let mut flags = 0u32;
        // SAFETY: a live pair of a checked version; `flags` is an out-parameter.
        crate::error::check(unsafe {
            sys::hurray_tensor_context_buffer_flags(self.context.as_ptr(), self.list.as_ptr(), index, &mut flags)
        })?;
        Ok(flags & sys::HURRAY_BUFFER_READONLY != 0)
    }

    /// The bytes of buffer `index`, to write: only a buffer its producer did
    /// not mark read-only. `&mut self`, so no other borrow of the tensor's
    /// buffers can overlap (ADR-042's proposal, ADR-059).
    pub fn buffer_mut(&mut self, index: u64) -> Result<&mut [u8]> {
        if self.is_readonly(index)? {
            return Err(Error::new(
                sys::HURRAY_ERROR_INVALID_ARGUMENT,
                format!("buffer {index} is read-only: its producer marked it so"),
            ));
        }
        let bytes = self.list.get(index)?;
        let (ptr, len) = (bytes.as_ptr() as *mut u8, bytes.len());
        // SAFETY: the producer lent these bytes writable (not marked read-only)
        // for as long as the list lives; `&mut self` makes this the only borrow.
        Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
    }

    /// Every buffer, in index order.
    pub fn buffers(&self) -> Result<Vec<&[u8]>> {
        (0..self.list.len()?).map(|i| self.list.get(i)).collect()
    }

    pub fn list(&self) -> &BufferList {
        &self.list
    }

    pub fn context(&self) -> &TensorContext {
        &self.context
    }

    /// Gives both handles back, undestroyed: (list, context).
    pub fn into_raw(self) -> (*mut sys::HurrayBufferList, *mut sys::HurrayTensorContext) {
        let Tensor { descriptor, list, context } = self;
        drop(descriptor);
        (list.into_raw(), context.into_raw())
    }
}


impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor").field("descriptor", &self.descriptor).field("buffers", &self.list.len()).finish()
    }
}
