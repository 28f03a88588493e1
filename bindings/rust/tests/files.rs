//! File and Writer over hurray-io: what Rust writes, Rust reads back; a
//! corrupt or missing file is an Err, never a panic.
use std::fs;
use std::path::PathBuf;

use hurray::{sys, Descriptor, Dtype, File, GgmlType, Granularity, Part, PartLayout, Quantization, Role, Scheme, Tensor, Writer};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hurray-rust-files-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("a scratch directory");
    dir.join(name)
}

fn le_f32(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Two tensors: float32 (2, 3) and int8 affine per tensor with a float32 scale.
fn write_two(path: &PathBuf) -> (Vec<u8>, Vec<u8>) {
    let plain = le_f32(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let q: Vec<u8> = (0..8u8).map(|i| i.wrapping_mul(37)).collect();
    let mut affine = Descriptor::new(Dtype::INT8, &[8]).expect("int8");
    affine
        .set_quantization(Quantization { scheme: Scheme::AFFINE, granularity: Granularity::PER_TENSOR, ..Quantization::NONE })
        .expect("affine");
    affine
        .set_part(Role::SCALE, Part { dtype: Dtype::FLOAT32, buffer_index: 1, byte_offset: 0, layout: PartLayout::ROW_MAJOR })
        .expect("scale");
    let mut writer = Writer::create(path).expect("create");
    writer.set_metadata("by", "rust").expect("metadata");
    let t = Tensor::new(&Descriptor::new(Dtype::FLOAT32, &[2, 3]).expect("f32"), &[&plain]).expect("plain");
    writer.add("plain", &t).expect("add plain");
    let t = Tensor::new(&affine, &[&q, &le_f32(&[0.5])]).expect("affine");
    writer.add("affine", &t).expect("add affine");
    writer.finish().expect("finish");
    (plain, q)
}

#[test]
fn what_rust_writes_rust_reads() {
    let path = scratch("two.hurray");
    let (plain, q) = write_two(&path);
    let file = File::open(&path).expect("open");
    assert_eq!(file.len(), Ok(2));
    assert_eq!(file.names().expect("names"), vec!["plain".to_string(), "affine".to_string()]);
    assert_eq!(file.metadata().expect("metadata"), vec![("by".to_string(), "rust".to_string())]);
    let t = file.get("plain").expect("plain");
    assert_eq!(t.descriptor().shape(), &[2, 3]);
    assert_eq!(t.buffer(0).expect("buffer"), &plain[..]);
    let a = file.get("affine").expect("affine");
    assert_eq!(a.descriptor().scheme(), Scheme::AFFINE);
    assert_eq!(a.buffer(0).expect("values"), &q[..]);
    assert_eq!(a.buffer(1).expect("scale"), &le_f32(&[0.5])[..]);
    file.verify(1).expect("verify");
    // Tensors outlive the file they came from.
    drop(file);
    assert_eq!(t.buffer(0).expect("buffer after close"), &plain[..]);
    for flags in [sys::HURRAY_READ_NO_MMAP, sys::HURRAY_READ_NO_VERIFY] {
        let file = File::open_with(&path, flags).expect("open with flags");
        assert_eq!(file.get("plain").expect("plain").buffer(0).expect("buffer"), &plain[..]);
    }
}

#[test]
fn a_missing_name_or_file_is_an_error() {
    let path = scratch("names.hurray");
    write_two(&path);
    let file = File::open(&path).expect("open");
    assert_eq!(file.find("absent").expect_err("no such tensor").status(), sys::HURRAY_ERROR_NOT_FOUND);
    assert_eq!(file.tensor(2).expect_err("index 2 of 2").status(), sys::HURRAY_ERROR_OUT_OF_RANGE);
    let err = File::open(scratch("does-not-exist.hurray")).err().expect("a missing file");
    assert_eq!(err.status(), sys::HURRAY_ERROR_IO);
    assert!(!err.message().is_empty());
    assert_eq!(File::open("a\0b").err().map(|e| e.status()), Some(sys::HURRAY_ERROR_INVALID_ARGUMENT));
}

/// Reads every tensor of `path`, as inspect does; Ok only if all read.
fn read_all(path: &PathBuf) -> hurray::Result<usize> {
    let file = File::open(path)?;
    let mut n = 0;
    for i in 0..file.len()? {
        let t = file.tensor(i)?;
        n += t.buffers()?.len();
    }
    Ok(n)
}

#[test]
fn every_truncation_is_an_error() {
    let path = scratch("truncate.hurray");
    write_two(&path);
    let bytes = fs::read(&path).expect("read");
    let cut = scratch("cut.hurray");
    for len in (0..bytes.len()).step_by(7).chain([bytes.len() - 1]) {
        fs::write(&cut, &bytes[..len]).expect("write");
        assert!(read_all(&cut).is_err(), "a file cut to {len} of {} bytes was read", bytes.len());
    }
}

#[test]
fn every_flipped_byte_is_an_error_or_harmless() {
    // A flip in the data is a checksum error; in the index or trailer
    // corruption. Padding bytes may be covered by nothing; either way the
    // reader must answer, never crash, and never hand out other bytes as
    // the original tensor's.
    let path = scratch("flip.hurray");
    let (plain, _) = write_two(&path);
    let bytes = fs::read(&path).expect("read");
    let flipped = scratch("flipped.hurray");
    let mut refused = 0;
    for at in 0..bytes.len() {
        let mut copy = bytes.clone();
        copy[at] ^= 0x40;
        fs::write(&flipped, &copy).expect("write");
        match File::open(&flipped).and_then(|f| f.get("plain")) {
            Err(_) => refused += 1,
            Ok(t) => {
                if let Ok(b) = t.buffer(0) {
                    assert_eq!(b, &plain[..], "a flip at byte {at} changed the data silently");
                }
            }
        }
    }
    assert!(refused > 0);
}

#[test]
fn an_unfinished_writer_leaves_no_file() {
    let path = scratch("unfinished.hurray");
    let _ = fs::remove_file(&path);
    let mut writer = Writer::create(&path).expect("create");
    let t = Tensor::new(&Descriptor::new(Dtype::UINT8, &[3]).expect("u8"), &[&[1, 2, 3]]).expect("t");
    writer.add("t", &t).expect("add");
    drop(writer);
    assert!(!path.exists());
    let mut writer = Writer::create(&path).expect("create");
    writer.add("t", &t).expect("add");
    assert!(writer.add("t", &t).is_err(), "a duplicate name");
}

#[test]
fn a_ggml_tensor_round_trips() {
    let path = scratch("ggml.hurray");
    let mut d = Descriptor::new(Dtype::UINT8, &[1, 32]).expect("u8");
    d.set_quantization(Quantization { scheme: Scheme::GGML, ggml_type: GgmlType::Q8_0, ..Quantization::NONE })
        .expect("ggml");
    let block: Vec<u8> = (0..34u8).collect();
    let mut writer = Writer::create(&path).expect("create");
    writer.add("q", &Tensor::new(&d, &[&block]).expect("q8_0")).expect("add");
    writer.finish().expect("finish");
    let t = File::open(&path).expect("open").get("q").expect("q");
    assert_eq!(t.descriptor().quantization().ggml_type, GgmlType::Q8_0);
    assert_eq!(t.buffer(0).expect("blocks"), &block[..]);
}

#[test]
fn frames_round_trip_through_any_reader_and_writer() {
    let values = le_f32(&[1.5, -2.0, 0.25]);
    let t = Tensor::new(&Descriptor::new(Dtype::FLOAT32, &[3]).expect("f32"), &[&values]).expect("t");
    let mut stream = Vec::new();
    hurray::write_frame(&mut stream, "first", &t).expect("frame 1");
    hurray::write_frame(&mut stream, "", &t).expect("frame 2, unnamed");
    let mut reader = &stream[..];
    let (name, back) = hurray::read_frame(&mut reader).expect("read 1").expect("a frame");
    assert_eq!(name, "first");
    assert_eq!(back.buffer(0).expect("buffer"), &values[..]);
    let (name, _) = hurray::read_frame(&mut reader).expect("read 2").expect("a frame");
    assert_eq!(name, "");
    assert!(hurray::read_frame(&mut reader).expect("clean end").is_none());
    // Every cut inside a frame is an error, never a panic.
    for len in 1..stream.len() / 2 {
        let mut cut = &stream[..len];
        assert!(hurray::read_frame(&mut cut).is_err(), "a frame cut to {len} bytes was read");
    }
}

#[test]
fn a_stream_that_refuses_is_an_error_naming_its_reason() {
    struct Refuses;
    impl std::io::Write for Refuses {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("the disk is on fire"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let t = Tensor::new(&Descriptor::new(Dtype::UINT8, &[2]).expect("u8"), &[&[1, 2]]).expect("t");
    let err = hurray::write_frame(Refuses, "x", &t).expect_err("a refusing stream");
    assert!(err.message().contains("the disk is on fire"), "{err}");
    struct Panics;
    impl std::io::Read for Panics {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            panic!("a reader that panics")
        }
    }
    assert!(hurray::read_frame(Panics).is_err(), "a panic in the stream is caught, not carried into C");
}
