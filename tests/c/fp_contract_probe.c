/*
 * fp_contract_probe.c -- whether a build fuses d * q - m into one rounding.
 *
 * The formula has the shape of the K-quants' d * sc * q - dmin * m, with
 * inputs whose product is not exact: (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24
 * rounds to 1 + 2^-11 on its own (a tie, to even), so the difference with
 * m = 1 + 2^-11 is 0 when the product is rounded first and 2^-24 when an
 * FMA keeps it exact. The inputs come from volatile objects, so that the
 * compiler cannot fold the formula away. Prints "separate" or "fused";
 * tests/test_dequant_c.py builds it with the library's flags on a CPU
 * target with FMA, and once with contraction allowed, to show the
 * difference the flag makes.
 */
#include <stdio.h>

static float dequantize_like(float d, float q, float m)
{
    return d * q - m;
}

int main(void)
{
    volatile float d = 1.0f + 0x1p-12f, q = 1.0f + 0x1p-12f, m = 1.0f + 0x1p-11f;
    float y = dequantize_like(d, q, m);
    if (y == 0.0f) {
        puts("separate");
    } else if (y == 0x1p-24f) {
        puts("fused");
    } else {
        printf("unexpected %a\n", (double)y);
        return 1;
    }
    return 0;
}
