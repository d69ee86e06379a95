# What moeplan's calibrate --backend cuda does not measure yet, measured with
# PyTorch on the lent GPU: fp8 vs bf16 GEMM by expert shape, a grouped expert
# GEMM as a loop vs one bmm, HBM bandwidth of memory-bound kernels, and a GEMM's
# slow-down beside an SM-using kernel on another stream (an NCCL-like proxy).
# Every figure is a median of CUDA-event timings after warm-up.
import json, sys, torch
dev = torch.device("cuda")
def med(xs): xs = sorted(xs); return xs[len(xs) // 2]
def timed(fn, reps=20, warm=3):
    for _ in range(warm): fn()
    torch.cuda.current_stream().synchronize()  # this stream only: a side stream keeps running
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); out.append(a.elapsed_time(b))
    return med(out)
res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
       "gemm": [], "grouped": [], "bandwidth": [], "overlap_sm": None}
shapes = [(m, d, f) for m in (256, 1024, 4096, 16384) for d, f in ((1024, 2048), (2048, 1408), (4096, 14336), (7168, 2048))]
for m, k, n in shapes:
    a = torch.randn(m, k, device=dev, dtype=torch.bfloat16); b = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
    t16 = timed(lambda: a @ b.t())
    row = {"m": m, "k": k, "n": n, "bf16_ms": t16, "bf16_tflops": 2 * m * n * k / t16 / 1e9}
    try:
        a8 = a.to(torch.float8_e4m3fn); b8 = b.to(torch.float8_e4m3fn)
        one = torch.ones((), device=dev)
        t8 = timed(lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
        row.update(fp8_ms=t8, fp8_tflops=2 * m * n * k / t8 / 1e9)
    except Exception as e:
        row["fp8_error"] = str(e)[:200]
    res["gemm"].append(row)
    print(row, flush=True)
for experts, tokens, d, f in ((8, 2048, 4096, 14336), (64, 512, 2048, 1408), (32, 1024, 7168, 2048)):
    x = torch.randn(experts, tokens, d, device=dev, dtype=torch.bfloat16); w = torch.randn(experts, d, f, device=dev, dtype=torch.bfloat16)
    loop = timed(lambda: [x[e] @ w[e] for e in range(experts)])
    bmm = timed(lambda: torch.bmm(x, w))
    fl = 2 * experts * tokens * d * f
    row = {"experts": experts, "tokens": tokens, "d": d, "f": f, "loop_ms": loop, "bmm_ms": bmm,
           "loop_tflops": fl / loop / 1e9, "bmm_tflops": fl / bmm / 1e9}
    res["grouped"].append(row); print(row, flush=True)
for mib in (64, 256, 1024):
    n = mib * 2**20 // 2
    x = torch.randn(n, device=dev, dtype=torch.bfloat16); y = torch.empty_like(x)
    tc = timed(lambda: y.copy_(x)); ta = timed(lambda: torch.add(x, x, out=y))
    row = {"MiB": mib, "copy_ms": tc, "copy_GBps": 2 * n * 2 / tc / 1e6, "add_ms": ta, "add_GBps": 3 * n * 2 / ta / 1e6}
    res["bandwidth"].append(row); print(row, flush=True)
# Overlap: an 8192x4096x14336 bf16 GEMM alone, then beside a loop of
# elementwise kernels (SM-using, like NCCL's kernels) on another stream.
a = torch.randn(8192, 4096, device=dev, dtype=torch.bfloat16); b = torch.randn(4096, 14336, device=dev, dtype=torch.bfloat16)
alone = timed(lambda: a @ b, reps=21)
side = torch.cuda.Stream(); x = torch.randn(64 * 2**20, device=dev, dtype=torch.bfloat16); y = torch.empty_like(x)
torch.cuda.synchronize()
with torch.cuda.stream(side):
    for _ in range(3000): torch.add(x, x, out=y)
beside = timed(lambda: a @ b, reps=21)
covered = not side.query()  # the add loop still ran when the last GEMM ended
torch.cuda.synchronize()
res["overlap_sm"] = {"gemm": [8192, 4096, 14336], "alone_ms": alone, "beside_add_loop_ms": beside,
                     "slowdown": beside / alone, "covered": covered}
print(res["overlap_sm"], flush=True)
json.dump(res, open(sys.argv[1], "w"), indent=1)
