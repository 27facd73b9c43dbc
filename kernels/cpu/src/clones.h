// GRADSYNC_CLONES marks a hot elementwise loop to be compiled twice: for x86-64-v3 (AVX2, FMA;
// 8 floats per instruction, measured 4.6x faster on GELU here) and for the baseline (SSE2).
// The dynamic loader picks one per machine (GCC's target_clones, an ifunc), so a binary still
// runs on any x86-64 CPU, and one machine always takes the same path: results stay
// deterministic there. With other compilers or CPUs the mark is empty. Private to kernels/cpu.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GRADSYNC_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define GRADSYNC_CLONES
#endif
