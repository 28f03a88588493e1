/*
 * gguf_fuzz.c -- libFuzzer target for the GGUF index (hurray_gguf_index_parse
 * and its accessors, native/src/gguf_index.c).
 *
 * The input is a whole GGUF file. Properties, each an abort() (or a
 * sanitizer report) when broken:
 *  1. parsing never reads outside the input (ASan) nor hits UB (UBSan), and
 *     frees everything it allocated (LeakSanitizer);
 *  2. a refusal leaves *out NULL and a message;
 *  3. whatever is accepted is consistent: the alignment is a nonzero power
 *     of two; every key-value span and name lies in the input; every tensor
 *     of known size lies in the input, aligned past the data start (its
 *     first and last byte are read, so ASan sees an overrun), and no two
 *     overlap; each tensor is found by its own name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hurray_gguf.h"

#define REQUIRE(cond)  \
    do {               \
        if (!(cond)) { \
            abort();   \
        }              \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    HurrayGgufIndex *index = (HurrayGgufIndex *)0x1;
    HurrayStatus status = hurray_gguf_index_parse(data, size, &index);
    if (status != HURRAY_OK) {
        REQUIRE(index == NULL);
        REQUIRE(hurray_last_error_message()[0] != '\0');
        return 0;
    }
    uint64_t alignment, data_start, n_tensors, n_kvs;
    REQUIRE(hurray_gguf_index_info(index, NULL, &alignment, &data_start, &n_tensors, &n_kvs) ==
            HURRAY_OK);
    REQUIRE(alignment != 0 && (alignment & (alignment - 1)) == 0);
    for (uint64_t i = 0; i < n_kvs; i++) {
        uint64_t offset, len;
        REQUIRE(hurray_gguf_index_kv(index, i, &offset, &len) == HURRAY_OK);
        REQUIRE(offset <= size && len <= size - offset);
    }
    volatile uint8_t sink = 0;
    for (uint64_t i = 0; i < n_tensors; i++) {
        HurrayGgufTensor t;
        uint64_t found;
        REQUIRE(hurray_gguf_index_tensor(index, i, &t) == HURRAY_OK);
        REQUIRE(t.rank <= 4);
        REQUIRE(t.name_offset <= size && t.name_len <= size - t.name_offset);
        REQUIRE(t.data_offset >= data_start && t.data_offset <= size);
        REQUIRE((t.data_offset - data_start) % alignment == 0);
        if (t.size_known && t.nbytes) {
            REQUIRE(t.nbytes <= size - t.data_offset);
            sink ^= data[t.data_offset] ^ data[t.data_offset + t.nbytes - 1];
            for (uint64_t k = 0; k < i; k++) { /* no two known spans overlap */
                HurrayGgufTensor u;
                REQUIRE(hurray_gguf_index_tensor(index, k, &u) == HURRAY_OK);
                if (u.size_known && u.nbytes) {
                    REQUIRE(t.data_offset + t.nbytes <= u.data_offset ||
                            u.data_offset + u.nbytes <= t.data_offset);
                }
            }
        }
        REQUIRE(hurray_gguf_index_find(index, (const char *)data + t.name_offset, t.name_len,
                                       &found) == HURRAY_OK);
        REQUIRE(found == i);
    }
    (void)sink;
    hurray_gguf_index_destroy(&index);
    REQUIRE(index == NULL);
    return 0;
}
