# Expert GEMMs on the lent GPU as Megatron-Core runs them: a rank's local experts,
# each with its own rows, as Transformer Engine's GroupedLinear does (one cuBLAS
# GEMM per expert, launched in a loop) and as one grouped kernel (torch._grouped_mm,
# CUTLASS) where PyTorch has it. Shapes of the published MoE runs' experts (d_model x
# moe_ffn: Qwen3-30B-A3B 2048 x 768, Qwen3-235B-A22B 4096 x 1536, DeepSeek-V3
# 7168 x 2048, GPT-OSS 2880 x 2880): FC1 forward [rows, d] x [d, 2 f] (SwiGLU's two
# halves), FC2 forward [rows, f] x [f, d]; 4-32 local experts of 128-2048 rows.
# The source of the per-expert startup on Hopper (docs/cost-model.md, "GEMM shape
# model"). Medians of CUDA-event timings after warm-up.
#   grouped_probe.py OUT.json
import json, sys, time, torch
dev = torch.device("cuda")
start = time.time()
def med(xs): xs = sorted(xs); return xs[len(xs) // 2]
def timed(fn, reps=10, warm=3):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); out.append(a.elapsed_time(b))
    return med(out)
res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": [],
       "grouped_mm": hasattr(torch, "_grouped_mm")}
torch.randn(8192, 8192, device=dev) @ torch.randn(8192, 8192, device=dev)
for model, d, f in (("qwen3-30b-a3b", 2048, 768), ("qwen3-235b-a22b", 4096, 1536), ("deepseek-v3", 7168, 2048),
                    ("gpt-oss-120b", 2880, 2880)):
    for experts in (4, 8, 16, 32):
        for rows in (128, 512, 2048):
            for gemm, k, n in (("fc1", d, 2 * f), ("fc2", f, d)):
                x = torch.randn(experts * rows, k, device=dev, dtype=torch.bfloat16)
                w = torch.randn(experts, k, n, device=dev, dtype=torch.bfloat16)
                xs = list(x.split(rows))
                def loop():
                    for e in range(experts): torch.matmul(xs[e], w[e])
                row = {"model": model, "gemm": gemm, "experts": experts, "rows": rows, "k": k, "n": n,
                       "loop_ms": timed(loop)}
                try:
                    offs = torch.arange(rows, experts * rows + 1, rows, device=dev, dtype=torch.int32)
                    row["grouped_ms"] = timed(lambda: torch._grouped_mm(x, w, offs=offs))
                except Exception as e:
                    row["grouped_error"] = str(e).splitlines()[0][:160]
                row["tflops_loop"] = 2 * experts * rows * k * n / row["loop_ms"] / 1e9
                res["rows"].append(row); print(row, flush=True)
                del x, w, xs
res["seconds"] = time.time() - start
json.dump(res, open(sys.argv[1], "w"), indent=1)
print("done", len(res["rows"]), "rows", round(res["seconds"], 1), "s", flush=True)
