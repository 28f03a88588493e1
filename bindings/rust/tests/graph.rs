//! Descriptors of encoding version 2 (a graph of nodes, ADR-054) through
//! the crate: the golden vectors of tests/vectors (graph_*) decoded, read
//! back node by node, re-encoded, and checked against buffers.
use std::fs;
use std::path::PathBuf;

use hurray::{
    sys, Addressing, BufferList, ByteOrder, Descriptor, Dtype, Form, Node, NodeKind, Packing, PartLayout, Scheme,
    StepNode, StoredNode, Tensor, TensorContext, ValueRule,
};

fn vectors() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors")
}

/// A .hex vector's bytes: hex digits, '#' comments to the end of the line.
fn read_hex(name: &str) -> Vec<u8> {
    let path = vectors().join(format!("{name}.hex"));
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let digits: String = text
        .lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .flat_map(|line| line.chars().filter(|c| !c.is_whitespace()))
        .collect();
    (0..digits.len()).step_by(2).map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("hex")).collect()
}

/// The statement's node kinds and buffer sizes, read from the .json text
/// (the crate has no JSON dependency: both are on lines of their own).
fn statement(name: &str) -> (Vec<String>, Vec<u64>) {
    let path = vectors().join(format!("{name}.json"));
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let kinds = text
        .match_indices("\"kind\": \"")
        .map(|(at, key)| text[at + key.len()..].split('"').next().unwrap_or("").to_string())
        .collect();
    let sizes_at = text.find("\"buffer_sizes\": [").expect("buffer_sizes") + "\"buffer_sizes\": [".len();
    let sizes = text[sizes_at..].split(']').next().unwrap_or("").split(',').map(|s| s.trim().parse().expect("size")).collect();
    (kinds, sizes)
}

fn graph_vectors() -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(vectors())
        .expect("tests/vectors")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_prefix("graph_").and_then(|n| n.strip_suffix(".hex")).map(|n| format!("graph_{n}")))
        .collect();
    names.sort();
    names
}

fn buffers(sizes: &[u64]) -> BufferList {
    let mut list = BufferList::new().expect("list");
    for &size in sizes {
        list.push_copy(&vec![0u8; size as usize]).expect("push");
    }
    list
}

#[test]
fn every_graph_vector_reads_back_and_re_encodes() {
    let names = graph_vectors();
    assert!(names.len() >= 7, "{names:?}");
    for name in names {
        let bytes = read_hex(&name);
        let d = Descriptor::decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (kinds, sizes) = statement(&name);
        assert_eq!(d.encoding_version(), 2, "{name}");
        assert_eq!(d.scheme(), Scheme::GRAPH, "{name}");
        assert_eq!(d.dtype(), Dtype(0), "{name}: a graph has no values part");
        let read: Vec<String> = d.nodes().iter().map(|n| n.kind().name().expect("a known kind").to_string()).collect();
        assert_eq!(read, kinds, "{name}");
        assert_eq!(d.encode().expect("encode"), bytes, "{name}");
        assert_eq!(d.buffer_count(), Ok(sizes.len() as u64), "{name}");
        d.check_buffers(&buffers(&sizes)).unwrap_or_else(|e| panic!("{name}: {e}"));
        for i in 0..sizes.len() {
            let mut short = sizes.clone();
            if short[i] == 0 {
                continue;
            }
            short[i] -= 1;
            let err = d.check_buffers(&buffers(&short)).expect_err("one byte short");
            assert_eq!(err.status(), sys::HURRAY_ERROR_BUFFER_TOO_SMALL, "{name}: {err}");
        }
    }
}

#[test]
fn the_gptq_vector_reads_field_by_field() {
    let d = Descriptor::decode(&read_hex("graph_gptq_act_order")).expect("decode");
    assert_eq!(d.result_dtype(), Dtype::FLOAT16);
    assert_eq!(d.shape(), &[16, 64]);
    assert_eq!(d.strides(), &[64, 1]);
    let nodes = d.nodes();
    assert_eq!(
        nodes[0],
        Node::Step(StepNode {
            form: Form::SUB_MUL,
            arithmetic: Dtype::FLOAT16,
            shape: vec![16, 64],
            x: 1,
            scale: 2,
            offset: 3,
            blocks: vec![1, 0],
            flags: 0,
            indexed_axis: 1,
            group_index: 4,
        })
    );
    let qweight = StoredNode {
        dtype: Dtype::UINT4,
        shape: vec![16, 64],
        strides: vec![1, 16],
        buffer_index: 0,
        byte_offset: 0,
        byte_order: ByteOrder::LITTLE,
        layout: PartLayout::ROW_MAJOR,
        addressing: Addressing::WORDS,
        packing: Packing::DENSE,
        container_bits: 32,
        packed_axis: 1,
        chunk_containers: 0,
        slot_flags: 0,
        chunk_stride: 0,
        order: vec![],
        code_offset: 0,
        codebook: 0,
        value_rule: ValueRule::STANDARD,
    };
    assert_eq!(nodes[1], Node::Stored(qweight.clone()));
    let Node::Stored(zeros) = &nodes[3] else { panic!("node 3 is {:?}", nodes[3]) };
    assert_eq!((zeros.code_offset, zeros.packed_axis, zeros.buffer_index), (1, 0, 2));
    let Node::Stored(g_idx) = &nodes[4] else { panic!("node 4 is {:?}", nodes[4]) };
    assert_eq!((g_idx.dtype, g_idx.addressing, g_idx.packing), (Dtype::INT32, Addressing::ELEMENTS, Packing::NONE));
    assert_eq!(nodes[4].shape(), &[64]);
}

#[test]
fn the_nested_bitsandbytes_vector_reads_its_codebooks_and_constant() {
    let d = Descriptor::decode(&read_hex("graph_bnb_nf4_nested")).expect("decode");
    let nodes = d.nodes();
    assert_eq!(nodes.len(), 8);
    let Node::Stored(codes) = &nodes[1] else { panic!("{:?}", nodes[1]) };
    assert_eq!((codes.packing, codes.order.as_slice(), codes.codebook), (Packing::SLOTS, &[1u8, 0][..], 2));
    let Node::Step(nested) = &nodes[3] else { panic!("{:?}", nodes[3]) };
    assert_eq!((nested.form, nested.x, nested.scale, nested.offset), (Form::MUL_ADD, 4, 6, 7));
    assert_eq!(nested.flags, sys::HURRAY_STEP_RAGGED);
    assert_eq!(nodes[7], Node::Constant { dtype: Dtype::FLOAT32, value_bits: 0x3db2_e800 });
    assert_eq!(nodes[7].kind(), NodeKind::CONSTANT);
    assert!(nodes[7].shape().is_empty());
}

#[test]
fn a_tensor_of_a_graph_checks_its_group_index_values() {
    let d = Descriptor::decode(&read_hex("graph_gptq_act_order")).expect("decode");
    let (_, sizes) = statement("graph_gptq_act_order");
    let mut data: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0u8; n as usize]).collect();
    // g_idx (buffer 3, int32): every column in group 1 of 2, then one in group 2.
    for i in 0..64 {
        data[3][4 * i] = 1;
    }
    let tensor = Tensor::from_vecs(&d, data.clone()).expect("groups in range");
    assert_eq!(tensor.descriptor().nodes().len(), 5);
    assert_eq!(tensor.buffer_count(), Ok(4));
    data[3][4 * 9] = 2;
    let err = Tensor::from_vecs(&d, data).err().expect("group 2 of 2 is out of range");
    assert_eq!(err.status(), sys::HURRAY_ERROR_OUT_OF_RANGE, "{err}");
    assert!(err.message().contains("element 9 is 2"), "{err}");
}

#[test]
fn a_graph_travels_in_a_context() {
    let bytes = read_hex("graph_deepseek_fp8_ragged");
    assert!(bytes.len() > sys::HURRAY_MAX_DESCRIPTOR_LEN as usize / 8);
    let context = TensorContext::new(&bytes).expect("context");
    assert_eq!(context.descriptor_bytes().expect("bytes"), bytes.as_slice());
    let tensor = Tensor::from_parts(buffers(&[60000, 24]), context).expect("tensor");
    let Node::Step(step) = &tensor.descriptor().nodes()[0] else { panic!("node 0 is a step") };
    assert_eq!(step.blocks, vec![128, 128]);
}

#[test]
fn version_one_has_no_nodes() {
    let d = Descriptor::new(Dtype::UINT3, &[2, 3]).expect("uint3");
    assert_eq!(d.encoding_version(), 1);
    assert!(d.nodes().is_empty());
    assert_eq!(d.result_dtype(), Dtype(0));
    assert_eq!(d.packing(), Packing::PADDED);
    assert_eq!(Dtype::INT7.name(), Some("int7"));
    assert_eq!(Dtype::UINT5.bits(), Ok(5));
}
