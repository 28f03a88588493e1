/*
 * dequant_cpu.c -- which path the dequantizer takes, AVX2 or scalar: what
 * the CPU allows, what HURRAY_DEQUANT_PATH asks, and what a test forces
 * (hurray__dequant_simd, hurray__dequant_force_path in dequant_shared.h).
 * Asked by the dispatch (dequant.c) and by the value readers
 * (dequant_values.c), so it is a file of its own that calls neither.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dequant_shared.h"
#if HURRAY__DEQUANT_AVX2
#include <cpuid.h>
#endif

/* 0: not known yet; 1: scalar; 2: AVX2. Every thread that finds 0 works
 * out the same answer, so a race to store it is harmless (and atomic). */
static atomic_int cpu_path;
static atomic_int env_path;
static atomic_int forced_path = -1;

/* What the CPU allows: AVX2 with F16C. */
static int cpu_allows(void)
{
    int path = atomic_load_explicit(&cpu_path, memory_order_relaxed);
    if (path == 0) {
#if HURRAY__DEQUANT_AVX2
        /* F16C by CPUID (leaf 1, ECX bit 29): not every compiler's
         * __builtin_cpu_supports knows it; AVX2's check includes the OS's
         * saving of the YMM registers, which F16C needs as well. */
        unsigned eax, ebx, ecx = 0, edx;
        int f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
        __builtin_cpu_init();
        path = __builtin_cpu_supports("avx2") && f16c ? 2 : 1;
#else
        path = 1;
#endif
        atomic_store_explicit(&cpu_path, path, memory_order_relaxed);
    }
    return path;
}

/* What the CPU allows, unless HURRAY_DEQUANT_PATH=scalar: read once. */
static int env_allows(void)
{
    int path = atomic_load_explicit(&env_path, memory_order_relaxed);
    if (path == 0) {
        const char *env = getenv("HURRAY_DEQUANT_PATH");
        path = env != NULL && strcmp(env, "scalar") == 0 ? 1 : cpu_allows();
        atomic_store_explicit(&env_path, path, memory_order_relaxed);
    }
    return path;
}

int hurray__dequant_simd(void)
{
    int forced = atomic_load_explicit(&forced_path, memory_order_relaxed);
    if (forced == 0) {
        return 0;
    }
    return (forced == 1 ? cpu_allows() : env_allows()) == 2;
}

void hurray__dequant_force_path(int path)
{
    atomic_store_explicit(&forced_path, path, memory_order_relaxed);
}
