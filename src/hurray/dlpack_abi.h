/*
 * dlpack_abi.h -- the DLPack structures hurray._dlpack reads and writes.
 *
 * Declared here from the facts of DLPack 1.1 (dmlc/dlpack, dlpack.h), so the
 * package needs no copy of that header. Only what the bridge uses is
 * declared. The layouts are ABI: the static assertions at the bottom pin the
 * sizes and offsets that every DLPack 1.x producer and consumer relies on.
 */
#ifndef HURRAY_DLPACK_ABI_H
#define HURRAY_DLPACK_ABI_H

#include <stddef.h>
#include <stdint.h>

/* The version this bridge speaks. A capsule with another major version may
 * only have its deleter called; a higher minor version only adds codes. */
#define HURRAY_DLPACK_MAJOR 1
#define HURRAY_DLPACK_MINOR 1

/* Capsule names. Consumers rename a capsule to the "used_" form when they
 * take ownership; the names must be static strings. */
#define HURRAY_DLPACK_NAME "dltensor"
#define HURRAY_DLPACK_USED_NAME "used_dltensor"
#define HURRAY_DLPACK_VERSIONED_NAME "dltensor_versioned"
#define HURRAY_DLPACK_VERSIONED_USED_NAME "used_dltensor_versioned"

/* Device types (DLDeviceType). Only host memory is read by this bridge. */
enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3
};

/* Element type codes (DLDataTypeCode); 7..17 arrived in DLPack 1.1. */
enum {
    kDLInt = 0,
    kDLUInt = 1,
    kDLFloat = 2,
    kDLOpaqueHandle = 3,
    kDLBfloat = 4,
    kDLComplex = 5,
    kDLBool = 6,
    kDLFloat8_e3m4 = 7,
    kDLFloat8_e4m3 = 8,
    kDLFloat8_e4m3b11fnuz = 9,
    kDLFloat8_e4m3fn = 10,
    kDLFloat8_e4m3fnuz = 11,
    kDLFloat8_e5m2 = 12,
    kDLFloat8_e5m2fnuz = 13,
    kDLFloat8_e8m0fnu = 14,
    kDLFloat6_e2m3fn = 15,
    kDLFloat6_e3m2fn = 16,
    kDLFloat4_e2m1fn = 17
};

/* Flags of DLManagedTensorVersioned. */
#define DLPACK_FLAG_BITMASK_READ_ONLY ((uint64_t)1 << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED ((uint64_t)1 << 1)
/* Sub-byte elements stored one per byte (value in the low bits); without
 * it, sub-byte elements are packed with element 0 in the lowest bits. */
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED ((uint64_t)1 << 2)

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef struct {
    int32_t device_type; /* a C enum in dlpack.h; int-sized on every ABI we build for */
    int32_t device_id;
} DLDevice;

typedef struct {
    uint8_t code;
    uint8_t bits;    /* bits per element (per lane) */
    uint16_t lanes;  /* vector width; 1 for scalars */
} DLDataType;

typedef struct {
    void *data;           /* start of the allocation, or NULL for no elements */
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;       /* ndim entries */
    int64_t *strides;     /* ndim entries, in elements; NULL meant row-major before 1.0 */
    uint64_t byte_offset; /* element 0 lies at (char *)data + byte_offset */
} DLTensor;

/* The legacy ("dltensor") form. */
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* The versioned ("dltensor_versioned") form. Every field up to and including
 * flags keeps its place in all future versions, so the deleter is always
 * reachable even when the version is not understood. */
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(DLDataType) == 4, "DLDataType is 4 bytes");
_Static_assert(sizeof(DLTensor) == 48, "DLTensor is 48 bytes on 64-bit targets");
_Static_assert(offsetof(DLTensor, dtype) == 20, "DLTensor.dtype offset");
_Static_assert(offsetof(DLTensor, byte_offset) == 40, "DLTensor.byte_offset offset");
_Static_assert(offsetof(DLManagedTensor, deleter) == 56, "DLManagedTensor.deleter offset");
_Static_assert(offsetof(DLManagedTensorVersioned, deleter) == 16, "versioned deleter offset");
_Static_assert(offsetof(DLManagedTensorVersioned, flags) == 24, "versioned flags offset");
_Static_assert(offsetof(DLManagedTensorVersioned, dl_tensor) == 32, "versioned dl_tensor offset");
#endif

#endif /* HURRAY_DLPACK_ABI_H */
