/*
 * vectors_check.c -- the C side of the golden descriptor vectors
 * (tests/vectors/, driven by tests/test_core_descriptor_c.py).
 *
 *   vectors_check decode FILE.hex
 *       Decodes the bytes, prints every field as one "key value" line
 *       (names, not codes), re-encodes and prints "reencoded identical" when
 *       the bytes come back unchanged. Bytes -> meaning.
 *   vectors_check encode KEY=VALUE ...
 *       Builds a descriptor with the builder API from the statement and
 *       prints its encoding as hex. Meaning -> bytes. Keys: shape=4,64
 *       strides=64,1 byte_order= packing= scheme= granularity= axis=
 *       block_size= ggml_type= and part=role:dtype:buffer:offset:layout
 *       (values first, repeatable).
 *   vectors_check buffers FILE.hex SIZE...
 *       Decodes and runs hurray_descriptor_check_buffers against buffers of
 *       those sizes; prints the status name.
 *
 * A .hex file is hex digits; whitespace is ignored and '#' starts a comment
 * that runs to the end of the line. Exit status 0 only when every step
 * succeeded.
 */
#include "hurray.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BYTES 4096

static const char *const byte_orders[] = {"little", "big"};
static const char *const packings[] = {"none", "padded", "lsb_first", "ggml_split"};
static const char *const schemes[] = {"none", "affine", "microscaling", "ggml"};
static const char *const granularities[] = {"none", "per_tensor", "per_axis", "per_block"};
static const char *const roles[] = {"?", "values", "scale", "zero_point", "global_scale"};
static const char *const layouts[] = {"row_major", "swizzled_128x4"};
static const struct {
    const char *name;
    uint32_t code;
} ggml_types[] = {
    {"none", 0},
    {"q4_0", HURRAY_GGML_Q4_0},
    {"q4_1", HURRAY_GGML_Q4_1},
    {"q5_0", HURRAY_GGML_Q5_0},
    {"q5_1", HURRAY_GGML_Q5_1},
    {"q8_0", HURRAY_GGML_Q8_0},
    {"q4_k", HURRAY_GGML_Q4_K},
    {"q6_k", HURRAY_GGML_Q6_K},
    {"mxfp4", HURRAY_GGML_MXFP4},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "vectors_check: %s: %s\n", what, detail);
    exit(2);
}

static void check(HurrayStatus status, const char *what)
{
    if (status != HURRAY_OK) {
        fprintf(stderr, "vectors_check: %s: %s: %s\n", what, hurray_status_name(status),
                hurray_last_error_message());
        exit(1);
    }
}

static const char *name_of(const char *const *names, size_t count, uint32_t code)
{
    return code < count ? names[code] : "?";
}

static uint32_t code_of(const char *const *names, size_t count, const char *name, const char *what)
{
    for (size_t i = 0; i < count; i++) {
        if (strcmp(names[i], name) == 0) {
            return (uint32_t)i;
        }
    }
    die(what, name);
    return 0;
}

static uint32_t dtype_code(const char *name)
{
    for (uint32_t code = 1; code < 256; code++) {
        const char *known = hurray_dtype_name(code);
        if (known != NULL && strcmp(known, name) == 0) {
            return code;
        }
    }
    die("unknown dtype name", name);
    return 0;
}

static const char *ggml_name(uint32_t code)
{
    for (size_t i = 0; i < COUNT(ggml_types); i++) {
        if (ggml_types[i].code == code) {
            return ggml_types[i].name;
        }
    }
    return "?";
}

static uint32_t ggml_code(const char *name)
{
    for (size_t i = 0; i < COUNT(ggml_types); i++) {
        if (strcmp(ggml_types[i].name, name) == 0) {
            return ggml_types[i].code;
        }
    }
    die("unknown ggml type name", name);
    return 0;
}

static int hex_digit(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static size_t read_hex(const char *path, uint8_t *out)
{
    FILE *file = fopen(path, "r");
    if (file == NULL) {
        die("cannot open", path);
    }
    size_t len = 0;
    int high = -1, c;
    while ((c = fgetc(file)) != EOF) {
        if (c == '#') {
            while ((c = fgetc(file)) != EOF && c != '\n') {
            }
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            continue;
        }
        int digit = hex_digit(c);
        if (digit < 0) {
            die("not a hex digit in", path);
        }
        if (high < 0) {
            high = digit;
        } else {
            if (len == MAX_BYTES) {
                die("too long", path);
            }
            out[len++] = (uint8_t)(high << 4 | digit);
            high = -1;
        }
    }
    fclose(file);
    if (high >= 0) {
        die("odd number of hex digits in", path);
    }
    return len;
}

static HurrayDescriptor *decode_file(const char *path, uint8_t *bytes, size_t *len)
{
    *len = read_hex(path, bytes);
    HurrayDescriptor *desc = NULL;
    check(hurray_descriptor_decode(bytes, *len, &desc), "decode");
    return desc;
}

static int cmd_decode(const char *path)
{
    static uint8_t bytes[MAX_BYTES], again[MAX_BYTES];
    size_t len;
    HurrayDescriptor *desc = decode_file(path, bytes, &len);
    uint32_t rank, u, scheme, granularity, axis, ggml;
    uint64_t block, count;
    const uint64_t *shape;
    const int64_t *strides;
    check(hurray_descriptor_rank(desc, &rank), "rank");
    check(hurray_descriptor_shape(desc, &shape), "shape");
    check(hurray_descriptor_strides(desc, &strides), "strides");
    printf("shape");
    for (uint32_t k = 0; k < rank; k++) {
        printf(" %" PRIu64, shape[k]);
    }
    printf("\nstrides");
    for (uint32_t k = 0; k < rank; k++) {
        printf(" %" PRId64, strides[k]);
    }
    printf("\n");
    check(hurray_descriptor_dtype(desc, &u), "dtype");
    printf("dtype %s\n", hurray_dtype_name(u));
    check(hurray_descriptor_byte_order(desc, &u), "byte order");
    printf("byte_order %s\n", name_of(byte_orders, COUNT(byte_orders), u));
    check(hurray_descriptor_packing(desc, &u), "packing");
    printf("packing %s\n", name_of(packings, COUNT(packings), u));
    check(hurray_descriptor_quantization(desc, &scheme, &granularity, &axis, &block, &ggml),
          "quantization");
    printf("scheme %s\ngranularity %s\naxis %" PRIu32 "\nblock_size %" PRIu64 "\nggml_type %s\n",
           name_of(schemes, COUNT(schemes), scheme),
           name_of(granularities, COUNT(granularities), granularity), axis, block, ggml_name(ggml));
    for (uint32_t role = HURRAY_ROLE_VALUES; role <= HURRAY_ROLE_GLOBAL_SCALE; role++) {
        uint32_t dtype, layout;
        uint64_t index, offset;
        HurrayStatus status = hurray_descriptor_part(desc, role, &dtype, &index, &offset, &layout);
        if (status == HURRAY_ERROR_NOT_FOUND) {
            continue;
        }
        check(status, "part");
        printf("part %s %s %" PRIu64 " %" PRIu64 " %s\n", roles[role], hurray_dtype_name(dtype),
               index, offset, name_of(layouts, COUNT(layouts), layout));
    }
    check(hurray_descriptor_buffer_count(desc, &count), "buffer count");
    printf("buffer_count %" PRIu64 "\n", count);
    uint64_t again_len = 0;
    check(hurray_descriptor_encode(desc, again, sizeof again, &again_len), "re-encode");
    hurray_descriptor_destroy(&desc);
    if (again_len != len || memcmp(again, bytes, len) != 0) {
        printf("reencoded different\n");
        return 1;
    }
    printf("reencoded identical\n");
    return 0;
}

/* "4,64" -> values; "" -> none. */
static uint32_t parse_list(const char *text, int is_signed, uint64_t *u, int64_t *s)
{
    uint32_t n = 0;
    while (*text != '\0') {
        if (n == HURRAY_MAX_RANK + 1) {
            die("list too long", text);
        }
        char *end;
        if (is_signed) {
            s[n++] = strtoll(text, &end, 10);
        } else {
            u[n++] = strtoull(text, &end, 10);
        }
        if (end == text || (*end != ',' && *end != '\0')) {
            die("bad number list", text);
        }
        text = *end == ',' ? end + 1 : end;
    }
    return n;
}

static int cmd_encode(int argc, char **argv)
{
    static uint64_t shape[HURRAY_MAX_RANK + 1];
    static int64_t strides[HURRAY_MAX_RANK + 1];
    uint32_t rank = 0, stride_count = 0, byte_order = 0, packing = 0, scheme = 0, granularity = 0;
    uint32_t axis = 0, ggml = 0;
    uint64_t block = 0;
    char parts[HURRAY_MAX_PARTS][128];
    int part_count = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char *eq = strchr(arg, '=');
        if (eq == NULL) {
            die("expected key=value", arg);
        }
        size_t key_len = (size_t)(eq - arg);
        const char *value = eq + 1;
#define KEY(name) (key_len == strlen(name) && strncmp(arg, name, key_len) == 0)
        if (KEY("shape")) {
            rank = parse_list(value, 0, shape, NULL);
        } else if (KEY("strides")) {
            stride_count = parse_list(value, 1, NULL, strides);
        } else if (KEY("byte_order")) {
            byte_order = code_of(byte_orders, COUNT(byte_orders), value, "byte order");
        } else if (KEY("packing")) {
            packing = code_of(packings, COUNT(packings), value, "packing");
        } else if (KEY("scheme")) {
            scheme = code_of(schemes, COUNT(schemes), value, "scheme");
        } else if (KEY("granularity")) {
            granularity = code_of(granularities, COUNT(granularities), value, "granularity");
        } else if (KEY("axis")) {
            axis = (uint32_t)strtoul(value, NULL, 10);
        } else if (KEY("block_size")) {
            block = strtoull(value, NULL, 10);
        } else if (KEY("ggml_type")) {
            ggml = ggml_code(value);
        } else if (KEY("part")) {
            if (part_count == HURRAY_MAX_PARTS || strlen(value) >= sizeof parts[0]) {
                die("too many or too long parts", value);
            }
            strcpy(parts[part_count++], value);
        } else {
            die("unknown key", arg);
        }
#undef KEY
    }
    if (part_count == 0) {
        die("no parts", "the first part= must be the values part");
    }
    /* role:dtype:buffer:offset:layout */
    char fields[HURRAY_MAX_PARTS][5][40];
    for (int p = 0; p < part_count; p++) {
        char *cursor = parts[p];
        for (int f = 0; f < 5; f++) {
            char *colon = strchr(cursor, ':');
            size_t n = colon != NULL ? (size_t)(colon - cursor) : strlen(cursor);
            if ((colon == NULL) != (f == 4) || n >= sizeof fields[p][f]) {
                die("part must be role:dtype:buffer:offset:layout", parts[p]);
            }
            memcpy(fields[p][f], cursor, n);
            fields[p][f][n] = '\0';
            cursor = colon != NULL ? colon + 1 : cursor + n;
        }
    }
    if (strcmp(fields[0][0], "values") != 0) {
        die("the first part must be values", parts[0]);
    }

    HurrayDescriptor *desc = NULL;
    check(hurray_descriptor_new(dtype_code(fields[0][1]), rank, shape, &desc), "new");
    check(hurray_descriptor_set_strides(desc, stride_count, strides), "set_strides");
    check(hurray_descriptor_set_byte_order(desc, byte_order), "set_byte_order");
    check(hurray_descriptor_set_packing(desc, packing), "set_packing");
    check(hurray_descriptor_set_quantization(desc, scheme, granularity, axis, block, ggml),
          "set_quantization");
    for (int p = 0; p < part_count; p++) {
        uint32_t role = code_of(roles, COUNT(roles), fields[p][0], "role");
        check(hurray_descriptor_set_part(desc, role, dtype_code(fields[p][1]),
                                         strtoull(fields[p][2], NULL, 10),
                                         strtoull(fields[p][3], NULL, 10),
                                         code_of(layouts, COUNT(layouts), fields[p][4], "layout")),
              "set_part");
    }
    static uint8_t bytes[MAX_BYTES];
    uint64_t len = 0;
    check(hurray_descriptor_encode(desc, bytes, sizeof bytes, &len), "encode");
    hurray_descriptor_destroy(&desc);
    for (uint64_t i = 0; i < len; i++) {
        printf("%02x", bytes[i]);
    }
    printf("\n");
    return 0;
}

static int cmd_buffers(const char *path, int argc, char **argv)
{
    static uint8_t bytes[MAX_BYTES];
    size_t len;
    HurrayDescriptor *desc = decode_file(path, bytes, &len);
    HurrayBufferList *list = NULL;
    check(hurray_buffer_list_new(&list), "buffer list");
    for (int i = 0; i < argc; i++) {
        HurrayBuffer *buf = NULL;
        check(hurray_buffer_new(strtoull(argv[i], NULL, 10), 1, &buf), "buffer");
        check(hurray_buffer_list_push(list, &buf), "push");
    }
    HurrayStatus status = hurray_descriptor_check_buffers(desc, list);
    printf("%s\n", hurray_status_name(status));
    hurray_buffer_list_destroy(&list);
    hurray_descriptor_destroy(&desc);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "decode") == 0) {
        return cmd_decode(argv[2]);
    }
    if (argc >= 2 && strcmp(argv[1], "encode") == 0) {
        return cmd_encode(argc - 2, argv + 2);
    }
    if (argc >= 3 && strcmp(argv[1], "buffers") == 0) {
        return cmd_buffers(argv[2], argc - 3, argv + 3);
    }
    fprintf(stderr, "usage: vectors_check decode FILE.hex | encode KEY=VALUE... | "
                    "buffers FILE.hex SIZE...\n");
    return 2;
}
