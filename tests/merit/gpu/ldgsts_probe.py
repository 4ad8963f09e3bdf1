"""Device probe of ``cp.async`` word copies into shared memory (not a test): which lane-to-word
maps and paddings make Nsight Compute count LDGSTS bank conflicts.  Each block copies a 112 x 32
box of a row-major matrix (row pitch ``P`` words: 2841 odd, 2848 aligned) into a buffer of row
pitch ``S`` 64 times, 128 threads, by one of four maps: 0 four adjacent words a thread
(``4 v + i``), 1 the same four words ``nq`` apart (``v + 8 i``), 2 a warp per row (one word a
lane), 3 aligned 16-byte copies (``P`` 2848 only).  Run under ``ncu --kernel-name regex:ldg_``.

``python tests/merit/gpu/ldgsts_probe.py``
"""

import cupy as cp

SRC = r"""
__device__ __forceinline__ void cp4(float* d, const float* s) {
    unsigned a = (unsigned)__cvta_generic_to_shared(d);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" :: "r"(a), "l"(s));
}
__device__ __forceinline__ void cp16(float* d, const float* s) {
    unsigned a = (unsigned)__cvta_generic_to_shared(d);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(a), "l"(s));
}
template <int MAP>
__device__ void body(const float* g, float* out, int P, int S) {
    __shared__ __align__(16) float sm[112 * 48];
    const int tid = threadIdx.x;
    const float* base = g + (size_t)(blockIdx.x % 20) * 112 * P;
    float acc = 0.f;
    for (int it = 0; it < 64; ++it) {
        const float* src = base + (it % 80) * 32;
        if (MAP == 0 || MAP == 1) {
            #pragma unroll
            for (int j = 0; j < 7; ++j) {
                int e = tid + j * 128, v = e % 8, r = e / 8;
                #pragma unroll
                for (int i = 0; i < 4; ++i) {
                    int c = MAP == 0 ? 4 * v + i : v + 8 * i;
                    cp4(sm + r * S + c, src + r * P + c);
                }
            }
        } else if (MAP == 2) {
            #pragma unroll
            for (int j = 0; j < 28; ++j) {
                int e = tid + j * 128, c = e % 32, r = e / 32;
                cp4(sm + r * S + c, src + r * P + c);
            }
        } else {
            #pragma unroll
            for (int j = 0; j < 7; ++j) {
                int e = tid + j * 128, v = e % 8, r = e / 8;
                cp16(sm + r * S + 4 * v, src + r * P + 4 * v);
            }
        }
        asm volatile("cp.async.commit_group;\n" ::);
        asm volatile("cp.async.wait_group 0;\n" ::);
        __syncthreads();
        acc += sm[(tid * 7) % (112 * 32)];
        __syncthreads();
    }
    out[blockIdx.x * 128 + tid] = acc;
}
extern "C" __global__ void ldg_map0(const float* g, float* o, int P, int S) { body<0>(g, o, P, S); }
extern "C" __global__ void ldg_map1(const float* g, float* o, int P, int S) { body<1>(g, o, P, S); }
extern "C" __global__ void ldg_map2(const float* g, float* o, int P, int S) { body<2>(g, o, P, S); }
extern "C" __global__ void ldg_map3(const float* g, float* o, int P, int S) { body<3>(g, o, P, S); }
"""


def main():
    import sys

    once = "--once" in sys.argv
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    g = cp.random.random(20 * 112 * 2848 + 4096, dtype=cp.float32)
    out = cp.empty(264 * 128, dtype=cp.float32)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for m in range(4):
        k = mod.get_function(f"ldg_map{m}")
        for p in ((2848,) if m == 3 else (2841, 2848)):
            for s in (32, 36, 40):
                args = (g, out, cp.int32(p), cp.int32(s))
                k((264,), (128,), args)
                if once:
                    continue
                start.record()
                for _ in range(20):
                    k((264,), (128,), args)
                stop.record()
                stop.synchronize()
                us = cp.cuda.get_elapsed_time(start, stop) / 20 * 1e3
                print(f"map {m} P {p} S {s}: {us:.1f} us", flush=True)


if __name__ == "__main__":
    main()
