//! The safe API over libhurray: descriptors, buffer lists, contexts and
//! tensors, their errors, and who destroys what (exactly once).
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use hurray::{
    sys, BufferList, Descriptor, Dtype, Error, GgmlType, Granularity, Packing, Part, PartLayout, Quantization, Role,
    Scheme, Tensor, TensorContext,
};

/// Counts its drops: the owner a context releases.
struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn float32_2x3() -> Descriptor {
    Descriptor::new(Dtype::FLOAT32, &[2, 3]).expect("a float32 (2, 3) descriptor")
}

fn counted_tensor(buffer: &[u8]) -> (Tensor, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut list = BufferList::new().expect("list");
    list.push_copy(buffer).expect("push");
    let bytes = float32_2x3().encode().expect("encode");
    let context = TensorContext::with_owner(&bytes, Counted(drops.clone())).expect("context");
    (Tensor::from_parts(list, context).expect("tensor"), drops)
}

#[test]
fn the_linked_library_speaks_this_abi() {
    assert_eq!(hurray::linked_abi_version(), hurray::C_ABI_VERSION);
    assert_eq!(hurray::C_ABI_VERSION, 5);
}

#[test]
fn a_built_descriptor_round_trips_through_its_bytes() {
    let mut d = float32_2x3();
    d.set_strides(&[1, 2]).expect("strides");
    let bytes = d.encode().expect("encode");
    let back = Descriptor::decode(&bytes).expect("decode");
    assert_eq!(back, d);
    assert_eq!(back.dtype().name(), Some("float32"));
    assert_eq!(back.shape(), &[2, 3]);
    assert_eq!(back.strides(), &[1, 2]);
    assert_eq!(back.scheme().name(), Some("none"));
    assert_eq!(back.buffer_count(), Ok(1));
    let values = back.part(Role::VALUES).expect("a values part");
    assert_eq!(values, Part { dtype: Dtype::FLOAT32, buffer_index: 0, byte_offset: 0, layout: PartLayout::ROW_MAJOR });
    assert_eq!(back.part(Role::SCALE), None);
}

#[test]
fn a_quantized_descriptor_reads_back_every_field() {
    let mut d = Descriptor::new(Dtype::INT4, &[2, 64]).expect("int4");
    d.set_packing(Packing::LSB_FIRST).expect("packing");
    d.set_quantization(Quantization {
        scheme: Scheme::AFFINE,
        granularity: Granularity::PER_BLOCK,
        axis: 1,
        block_size: 32,
        ggml_type: GgmlType(0),
    })
    .expect("quantization");
    let scale = Part { dtype: Dtype::FLOAT16, buffer_index: 1, byte_offset: 0, layout: PartLayout::ROW_MAJOR };
    d.set_part(Role::SCALE, scale).expect("scale");
    let back = Descriptor::decode(&d.encode().expect("encode")).expect("decode");
    assert_eq!(back.packing().name(), Some("lsb_first"));
    assert_eq!(back.quantization().granularity, Granularity::PER_BLOCK);
    assert_eq!(back.quantization().block_size, 32);
    assert_eq!(back.part(Role::SCALE), Some(scale));
    assert_eq!(back.buffer_count(), Ok(2));
}

#[test]
fn bad_descriptor_bytes_are_an_error_with_the_library_message() {
    let err = Descriptor::decode(b"not a descriptor").expect_err("garbage must be refused");
    assert_eq!(err.status(), sys::HURRAY_ERROR_INVALID_DESCRIPTOR);
    assert_eq!(err.name(), "HURRAY_ERROR_INVALID_DESCRIPTOR");
    assert!(!err.message().is_empty());
    assert!(err.to_string().starts_with("HURRAY_ERROR_INVALID_DESCRIPTOR: "));
    // Every prefix of a valid encoding is refused too, never read past.
    let bytes = float32_2x3().encode().expect("encode");
    for len in 0..bytes.len() {
        assert!(Descriptor::decode(&bytes[..len]).is_err(), "a {len}-byte prefix was accepted");
    }
}

#[test]
fn a_builder_mistake_is_an_error_not_a_panic() {
    let err = Descriptor::new(Dtype(9999), &[1]).expect_err("an unknown dtype");
    assert_eq!(err.status(), sys::HURRAY_ERROR_UNSUPPORTED);
    let err = Descriptor::new(Dtype::FLOAT32, &[1; 65]).expect_err("rank 65");
    assert_eq!(err.status(), sys::HURRAY_ERROR_INVALID_ARGUMENT);
    let mut d = float32_2x3();
    assert!(d.set_strides(&[1]).is_err(), "strides of the wrong rank");
    d.set_quantization(Quantization { scheme: Scheme::AFFINE, ..Quantization::NONE }).expect("setters judge codes only");
    assert!(d.encode().is_err(), "an affine scheme with no scale must not encode");
}

#[test]
fn dtype_names_are_the_librarys() {
    assert_eq!(Dtype::BFLOAT16.name(), Some("bfloat16"));
    assert_eq!(Dtype::from_name("float8_e4m3fn"), Some(Dtype::FLOAT8_E4M3FN));
    assert_eq!(Dtype(0).name(), None);
    assert_eq!(Dtype::INT4.bits(), Ok(4));
    assert_eq!(Scheme::MICROSCALING.to_string(), "microscaling");
    assert_eq!(GgmlType::from_name("q8_0"), Some(GgmlType::Q8_0));
}

#[test]
fn a_tensor_lends_its_checked_buffers() {
    let values: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let tensor = Tensor::new(&float32_2x3(), &[&values]).expect("tensor");
    assert_eq!(tensor.abi_version(), 5);
    assert_eq!(tensor.buffer_count(), Ok(1));
    assert_eq!(tensor.buffer(0).expect("buffer 0"), &values[..]);
    assert_eq!(tensor.buffer(0).expect("buffer 0").as_ptr() as usize % 64, 0, "64-byte aligned copies");
    assert_eq!(tensor.buffer(1).map(|b| b.len()).expect_err("no buffer 1").status(), sys::HURRAY_ERROR_OUT_OF_RANGE);
    let moved = Tensor::from_vecs(&float32_2x3(), vec![values.clone()]).expect("from_vecs");
    assert_eq!(moved.buffers().expect("buffers"), vec![&values[..]]);
}

#[test]
fn buffers_too_small_for_the_descriptor_are_refused() {
    let err = Tensor::new(&float32_2x3(), &[&[0u8; 20]]).expect_err("20 bytes for 24");
    assert_eq!(err.status(), sys::HURRAY_ERROR_BUFFER_TOO_SMALL);
    let err = Tensor::new(&float32_2x3(), &[]).expect_err("no buffer at all");
    assert!(err.status() == sys::HURRAY_ERROR_INVALID_ARGUMENT || err.status() == sys::HURRAY_ERROR_BUFFER_TOO_SMALL);
}

#[test]
fn the_owner_is_released_once_when_the_tensor_drops() {
    let (tensor, drops) = counted_tensor(&[0u8; 24]);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(tensor);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_refused_pair_is_destroyed_once_by_from_parts() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut list = BufferList::new().expect("list");
    list.push_copy(&[0u8; 4]).expect("push");
    let bytes = float32_2x3().encode().expect("encode");
    let context = TensorContext::with_owner(&bytes, Counted(drops.clone())).expect("context");
    let err = Tensor::from_parts(list, context).expect_err("4 bytes for 24");
    assert_eq!(err.status(), sys::HURRAY_ERROR_BUFFER_TOO_SMALL);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn raw_handles_round_trip_and_are_destroyed_once() {
    let (tensor, drops) = counted_tensor(&[7u8; 24]);
    let (list, context) = tensor.into_raw();
    assert_eq!(drops.load(Ordering::SeqCst), 0, "into_raw destroys nothing");
    // SAFETY: the handles into_raw gave back, handed over once.
    let tensor = unsafe { Tensor::from_raw(list, context) }.expect("the same pair, taken back");
    assert_eq!(tensor.buffer(0).expect("buffer"), &[7u8; 24][..]);
    drop(tensor);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

/// An 8-byte frozen context header (ADR-034 § 4) and room after it.
fn forged(magic: u32, version: u32) -> Vec<u64> {
    let mut words = vec![0u64; 8];
    words[0] = u64::from(magic) | (u64::from(version) << 32);
    words
}

fn refused(list: *mut sys::HurrayBufferList, magic: u32, version: u32) -> Error {
    let mut header = forged(magic, version);
    let context = header.as_mut_ptr() as *mut sys::HurrayTensorContext;
    // SAFETY: 64 readable bytes; a real list. Refusal takes nothing.
    match unsafe { Tensor::from_raw(list, context) } {
        Ok(t) => {
            let _ = t.into_raw();
            panic!("a forged context (magic {magic:#x}, version {version}) was accepted")
        }
        Err(e) => e,
    }
}

#[test]
fn forged_contexts_are_refused_and_nothing_is_taken() {
    let (tensor, drops) = counted_tensor(&[0u8; 24]);
    let (list, context) = tensor.into_raw();
    let magic = sys::HURRAY_TENSOR_CONTEXT_MAGIC;
    for version in [3, 6] {
        let err = refused(list, magic, version);
        assert_eq!(err.status(), sys::HURRAY_ERROR_ABI_VERSION);
        assert_eq!(
            err.message(),
            format!("the context has C ABI version {version}; this binding reads versions 4 to 5")
        );
    }
    assert_eq!(refused(list, 0, 4).status(), sys::HURRAY_ERROR_NOT_A_CONTEXT);
    assert_eq!(refused(list, 0x44454144, 4).status(), sys::HURRAY_ERROR_NOT_A_CONTEXT);
    // SAFETY: NULLs are refused before anything is read.
    let err = unsafe { Tensor::from_raw(list, std::ptr::null_mut()) }.expect_err("a NULL context");
    assert_eq!(err.status(), sys::HURRAY_ERROR_NULL_ARGUMENT);
    let err = unsafe { Tensor::from_raw(std::ptr::null_mut(), context) }.expect_err("a NULL list");
    assert_eq!(err.status(), sys::HURRAY_ERROR_NULL_ARGUMENT);
    assert_eq!(drops.load(Ordering::SeqCst), 0, "no refusal destroyed anything");
    // SAFETY: still ours, untouched.
    drop(unsafe { Tensor::from_raw(list, context) }.expect("the real pair"));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_context_lends_its_descriptor_bytes() {
    let bytes = float32_2x3().encode().expect("encode");
    let context = TensorContext::new(&bytes).expect("context");
    assert_eq!(context.abi_version(), 5);
    assert_eq!(context.descriptor_bytes().expect("bytes"), &bytes[..]);
    assert!(TensorContext::new(&[]).is_err(), "empty descriptor bytes");
}

/// Owns its bytes and counts its drops: a buffer owner with a say in its release.
struct CountedBytes(Vec<u8>, Arc<AtomicUsize>);
impl AsMut<[u8]> for CountedBytes {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}
impl Drop for CountedBytes {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn an_owned_buffer_is_lent_in_place_and_dropped_once_with_its_list() {
    let drops = Arc::new(AtomicUsize::new(0));
    let bytes: Vec<u8> = (0..24).collect();
    let address = bytes.as_ptr();
    let mut list = BufferList::new().expect("list");
    list.push_owned(CountedBytes(bytes, drops.clone())).expect("push_owned");
    let lent = list.get(0).expect("buffer 0");
    assert_eq!(lent.as_ptr(), address, "lent in place, not copied");
    assert_eq!(lent, (0..24).collect::<Vec<u8>>().as_slice());
    let context = TensorContext::new(&float32_2x3().encode().expect("encode")).expect("context");
    let tensor = Tensor::from_parts(list, context).expect("tensor");
    assert_eq!(drops.load(Ordering::SeqCst), 0, "alive while the tensor is");
    drop(tensor);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn owned_buffers_of_a_refused_pair_are_dropped_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut list = BufferList::new().expect("list");
    list.push_owned(CountedBytes(vec![0u8; 4], drops.clone())).expect("push_owned");
    list.push_owned(vec![7u8; 4].into_boxed_slice()).expect("a boxed slice owns its bytes too");
    let context = TensorContext::new(&float32_2x3().encode().expect("encode")).expect("context");
    assert!(Tensor::from_parts(list, context).is_err(), "4 bytes for 24, and one buffer too many");
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn ggml_blocks_come_from_the_librarys_table() {
    assert_eq!(GgmlType::Q8_0.block(), Ok((32, 34)));
    assert_eq!(GgmlType::Q4_K.block(), Ok((256, 144)));
    assert_eq!(GgmlType(9999).block().expect_err("no such format").status(), sys::HURRAY_ERROR_UNSUPPORTED);
}

#[test]
fn shared_memory_crosses_marked_read_only_and_writable_memory_is_lent_mutably() {
    // ADR-059: an Arc<[u8]> goes in without a copy, marked; a Vec stays writable.
    let values: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let shared: Arc<[u8]> = Arc::from(values.clone());
    let mut list = BufferList::new().expect("list");
    list.push_shared(shared.clone()).expect("push_shared");
    let context = TensorContext::new(&float32_2x3().encode().expect("encode")).expect("context");
    let mut tensor = Tensor::from_parts(list, context).expect("tensor");
    assert_eq!(tensor.buffer(0).expect("buffer 0").as_ptr(), shared.as_ptr(), "no copy");
    assert_eq!(tensor.is_readonly(0), Ok(true));
    let err = tensor.buffer_mut(0).expect_err("a read-only buffer is not lent mutably");
    assert_eq!(err.status(), sys::HURRAY_ERROR_INVALID_ARGUMENT);
    assert!(err.message().contains("read-only"), "{}", err.message());
    assert_eq!(tensor.is_readonly(1).expect_err("no buffer 1").status(), sys::HURRAY_ERROR_OUT_OF_RANGE);
    assert_eq!(Arc::strong_count(&shared), 2, "the buffer holds the Arc");
    drop(tensor);
    assert_eq!(Arc::strong_count(&shared), 1, "and drops it once");

    let mut writable = Tensor::from_vecs(&float32_2x3(), vec![values.clone()]).expect("from_vecs");
    assert_eq!(writable.is_readonly(0), Ok(false));
    writable.buffer_mut(0).expect("writable")[0] = 0xff;
    assert_eq!(writable.buffer(0).expect("buffer 0")[0], 0xff);
}
