//! The codes of hurray.h as small copyable types, named as the Python
//! package names them (`Descriptor.dtype`, `Descriptor.scheme`, ...).
use std::ffi::CStr;
use std::fmt;

use crate::sys;

macro_rules! codes {
    ($(#[$doc:meta])* $ty:ident { $($konst:ident = $code:path => $name:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct $ty(pub u32);

        impl $ty {
            $(pub const $konst: $ty = $ty($code);)*

            /// The lowercase name the Python package uses, or None for a
            /// code this crate does not know.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($code => Some($name),)*
                    _ => None,
                }
            }

            /// The code for a lowercase name.
            pub fn from_name(name: &str) -> Option<$ty> {
                match name {
                    $($name => Some($ty($code)),)*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(name) => f.write_str(name),
                    None => write!(f, "{}", self.0),
                }
            }
        }
    };
}

codes!(
    /// Layer 2: byte order of multi-byte elements.
    ByteOrder { LITTLE = sys::HURRAY_BYTE_ORDER_LITTLE => "little", BIG = sys::HURRAY_BYTE_ORDER_BIG => "big", }
);
codes!(
    /// Layer 2: how elements narrower than a byte are stored.
    Packing {
        NONE = sys::HURRAY_PACKING_NONE => "none",
        PADDED = sys::HURRAY_PACKING_PADDED => "padded",
        LSB_FIRST = sys::HURRAY_PACKING_LSB_FIRST => "lsb_first",
        GGML_SPLIT = sys::HURRAY_PACKING_GGML_SPLIT => "ggml_split",
        DENSE = sys::HURRAY_PACKING_DENSE => "dense",
        SLOTS = sys::HURRAY_PACKING_SLOTS => "slots",
    }
);
codes!(
    /// Layer 3: how stored values map back to real numbers.
    Scheme {
        NONE = sys::HURRAY_SCHEME_NONE => "none",
        AFFINE = sys::HURRAY_SCHEME_AFFINE => "affine",
        MICROSCALING = sys::HURRAY_SCHEME_MICROSCALING => "microscaling",
        GGML = sys::HURRAY_SCHEME_GGML => "ggml",
        GRAPH = sys::HURRAY_SCHEME_GRAPH => "graph",
    }
);
codes!(
    /// Version 2: what a node is.
    NodeKind {
        STORED = sys::HURRAY_NODE_STORED => "stored",
        CONSTANT = sys::HURRAY_NODE_CONSTANT => "constant",
        STEP = sys::HURRAY_NODE_STEP => "step",
        GGML = sys::HURRAY_NODE_GGML => "ggml",
        BITS = sys::HURRAY_NODE_BITS => "bits",
        GATHER = sys::HURRAY_NODE_GATHER => "gather",
    }
);
codes!(
    /// Version 2: where a stored node's element lies.
    Addressing {
        ELEMENTS = sys::HURRAY_ADDRESSING_ELEMENTS => "elements",
        WORDS = sys::HURRAY_ADDRESSING_WORDS => "words",
    }
);
codes!(
    /// Version 2: a step's formula.
    Form {
        MUL = sys::HURRAY_FORM_MUL => "mul",
        DIV = sys::HURRAY_FORM_DIV => "div",
        SUB_MUL = sys::HURRAY_FORM_SUB_MUL => "sub_mul",
        MUL_ADD = sys::HURRAY_FORM_MUL_ADD => "mul_add",
        MUL_SUB = sys::HURRAY_FORM_MUL_SUB => "mul_sub",
    }
);
codes!(
    /// Version 2: how a stored node's codes read as values.
    ValueRule {
        STANDARD = sys::HURRAY_VALUE_RULE_STANDARD => "standard",
        E8M0_NO_NAN = sys::HURRAY_VALUE_RULE_E8M0_NO_NAN => "e8m0_no_nan",
    }
);
codes!(
    /// Layer 3: what one scale covers.
    Granularity {
        NONE = sys::HURRAY_GRANULARITY_NONE => "none",
        PER_TENSOR = sys::HURRAY_GRANULARITY_PER_TENSOR => "per_tensor",
        PER_AXIS = sys::HURRAY_GRANULARITY_PER_AXIS => "per_axis",
        PER_BLOCK = sys::HURRAY_GRANULARITY_PER_BLOCK => "per_block",
    }
);
codes!(
    /// Layer 4: what a buffer holds for the tensor.
    Role {
        VALUES = sys::HURRAY_ROLE_VALUES => "values",
        SCALE = sys::HURRAY_ROLE_SCALE => "scale",
        ZERO_POINT = sys::HURRAY_ROLE_ZERO_POINT => "zero_point",
        GLOBAL_SCALE = sys::HURRAY_ROLE_GLOBAL_SCALE => "global_scale",
    }
);
codes!(
    /// How a parameter part is laid out in its buffer.
    PartLayout {
        ROW_MAJOR = sys::HURRAY_PART_LAYOUT_ROW_MAJOR => "row_major",
        SWIZZLED_128X4 = sys::HURRAY_PART_LAYOUT_SWIZZLED_128X4 => "swizzled_128x4",
    }
);
codes!(
    /// GGML block formats, numbered as GGUF numbers them.
    GgmlType {
        Q4_0 = sys::HURRAY_GGML_Q4_0 => "q4_0",
        Q4_1 = sys::HURRAY_GGML_Q4_1 => "q4_1",
        Q5_0 = sys::HURRAY_GGML_Q5_0 => "q5_0",
        Q5_1 = sys::HURRAY_GGML_Q5_1 => "q5_1",
        Q8_0 = sys::HURRAY_GGML_Q8_0 => "q8_0",
        Q2_K = sys::HURRAY_GGML_Q2_K => "q2_k",
        Q3_K = sys::HURRAY_GGML_Q3_K => "q3_k",
        Q4_K = sys::HURRAY_GGML_Q4_K => "q4_k",
        Q5_K = sys::HURRAY_GGML_Q5_K => "q5_k",
        Q6_K = sys::HURRAY_GGML_Q6_K => "q6_k",
        IQ2_XXS = sys::HURRAY_GGML_IQ2_XXS => "iq2_xxs",
        IQ2_XS = sys::HURRAY_GGML_IQ2_XS => "iq2_xs",
        IQ3_XXS = sys::HURRAY_GGML_IQ3_XXS => "iq3_xxs",
        IQ1_S = sys::HURRAY_GGML_IQ1_S => "iq1_s",
        IQ4_NL = sys::HURRAY_GGML_IQ4_NL => "iq4_nl",
        IQ3_S = sys::HURRAY_GGML_IQ3_S => "iq3_s",
        IQ2_S = sys::HURRAY_GGML_IQ2_S => "iq2_s",
        IQ4_XS = sys::HURRAY_GGML_IQ4_XS => "iq4_xs",
        IQ1_M = sys::HURRAY_GGML_IQ1_M => "iq1_m",
        TQ1_0 = sys::HURRAY_GGML_TQ1_0 => "tq1_0",
        TQ2_0 = sys::HURRAY_GGML_TQ2_0 => "tq2_0",
        MXFP4 = sys::HURRAY_GGML_MXFP4 => "mxfp4",
        NVFP4 = sys::HURRAY_GGML_NVFP4 => "nvfp4",
        Q1_0 = sys::HURRAY_GGML_Q1_0 => "q1_0",
        Q2_0 = sys::HURRAY_GGML_Q2_0 => "q2_0",
    }
);

impl GgmlType {
    /// One block of this format: (elements, bytes), from the library's table.
    pub fn block(self) -> crate::Result<(u64, u64)> {
        let (mut elements, mut bytes) = (0u64, 0u64);
        // SAFETY: takes any code; both out-parameters are valid.
        crate::error::check(unsafe { sys::hurray_ggml_block(self.0, &mut elements, &mut bytes) })?;
        Ok((elements, bytes))
    }
}

impl Role {
    /// Every role, in the order descriptors store them.
    pub const ALL: [Role; 4] = [Role::VALUES, Role::SCALE, Role::ZERO_POINT, Role::GLOBAL_SCALE];
}

/// Layer 1: an element type code. Its names come from the library
/// (`hurray_dtype_name`), the same table the Python package reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dtype(pub u32);

impl Dtype {
    pub const BOOL: Dtype = Dtype(sys::HURRAY_DTYPE_BOOL);
    pub const INT8: Dtype = Dtype(sys::HURRAY_DTYPE_INT8);
    pub const INT16: Dtype = Dtype(sys::HURRAY_DTYPE_INT16);
    pub const INT32: Dtype = Dtype(sys::HURRAY_DTYPE_INT32);
    pub const INT64: Dtype = Dtype(sys::HURRAY_DTYPE_INT64);
    pub const UINT8: Dtype = Dtype(sys::HURRAY_DTYPE_UINT8);
    pub const UINT16: Dtype = Dtype(sys::HURRAY_DTYPE_UINT16);
    pub const UINT32: Dtype = Dtype(sys::HURRAY_DTYPE_UINT32);
    pub const UINT64: Dtype = Dtype(sys::HURRAY_DTYPE_UINT64);
    pub const INT4: Dtype = Dtype(sys::HURRAY_DTYPE_INT4);
    pub const UINT4: Dtype = Dtype(sys::HURRAY_DTYPE_UINT4);
    pub const FLOAT16: Dtype = Dtype(sys::HURRAY_DTYPE_FLOAT16);
    pub const FLOAT32: Dtype = Dtype(sys::HURRAY_DTYPE_FLOAT32);
    pub const FLOAT64: Dtype = Dtype(sys::HURRAY_DTYPE_FLOAT64);
    pub const BFLOAT16: Dtype = Dtype(sys::HURRAY_DTYPE_BFLOAT16);
    pub const FLOAT8_E4M3FN: Dtype = Dtype(sys::HURRAY_DTYPE_FLOAT8_E4M3FN);
    pub const FLOAT8_E5M2: Dtype = Dtype(sys::HURRAY_DTYPE_FLOAT8_E5M2);
    pub const FLOAT8_E8M0FNU: Dtype = Dtype(sys::HURRAY_DTYPE_FLOAT8_E8M0FNU);
    pub const FLOAT4_E2M1FN: Dtype = Dtype(sys::HURRAY_DTYPE_FLOAT4_E2M1FN);
    pub const UINT3: Dtype = Dtype(sys::HURRAY_DTYPE_UINT3);
    pub const UINT5: Dtype = Dtype(sys::HURRAY_DTYPE_UINT5);
    pub const UINT6: Dtype = Dtype(sys::HURRAY_DTYPE_UINT6);
    pub const UINT7: Dtype = Dtype(sys::HURRAY_DTYPE_UINT7);
    pub const INT3: Dtype = Dtype(sys::HURRAY_DTYPE_INT3);
    pub const INT5: Dtype = Dtype(sys::HURRAY_DTYPE_INT5);
    pub const INT6: Dtype = Dtype(sys::HURRAY_DTYPE_INT6);
    pub const INT7: Dtype = Dtype(sys::HURRAY_DTYPE_INT7);

    /// The lowercase name (`"bfloat16"`), or None for a code the linked
    /// library does not know.
    pub fn name(self) -> Option<&'static str> {
        // SAFETY: takes any code; returns a static string or NULL.
        let ptr = unsafe { sys::hurray_dtype_name(self.0) };
        if ptr.is_null() {
            return None;
        }
        // SAFETY: non-NULL results are static NUL-terminated ASCII.
        unsafe { CStr::from_ptr(ptr) }.to_str().ok()
    }

    /// The code for a lowercase name, as the library names it.
    pub fn from_name(name: &str) -> Option<Dtype> {
        (1..=255).map(Dtype).find(|d| d.name() == Some(name))
    }

    /// The width of one element in bits.
    pub fn bits(self) -> crate::Result<u32> {
        let mut bits = 0u32;
        // SAFETY: `bits` is a valid out-parameter.
        crate::error::check(unsafe { sys::hurray_dtype_bits(self.0, &mut bits) })?;
        Ok(bits)
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "{}", self.0),
        }
    }
}
