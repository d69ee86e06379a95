# The kernels a Megatron-Core iteration runs that moeplan's calibrate does not
# (its attention is an unfused executor kernel), measured with PyTorch on the
# lent GPU, as the sources the training cost model's efficiencies need
# (docs/validation.md "GPU runs"): fused (flash / cuDNN) attention forward and
# backward, the LM head GEMM and the cross-entropy over the vocabulary, RMSNorm
# and SwiGLU (memory-bound), the MoE permutation (a row gather), and FP8 GEMMs
# at the published models' shapes. Medians of CUDA-event timings after warm-up.
#   kernel_probe.py OUT.json
import json, sys, time, torch
import torch.nn.functional as F
dev = torch.device("cuda")
start = time.time()
def med(xs): xs = sorted(xs); return xs[len(xs) // 2]
def timed(fn, reps=15, warm=3):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); out.append(a.elapsed_time(b))
    return med(out)
res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
       "cudnn": torch.backends.cudnn.version(), "attention": [], "lm_head": [], "memory_bound": [], "gemm": [],
       "permute": []}
def note(key, row): res[key].append(row); print(key, row, flush=True)

# Attention: causal, batch 1, (heads, kv heads, head_dim) of Llama-3-70B (64, 8, 128), Mixtral/Llama-3-8B (32, 8, 128),
# Qwen3-235B (64, 4, 128), DeepSeek-V3 MLA as 128 heads of q/k 192, v 128. FLOPs: causal forward 2 matmuls x
# 2 s^2 h d / 2 (qk uses d_qk, pv d_v); backward 2.5x forward (5 matmuls to 2) -- FlashAttention-2's count.
from torch.nn.attention import sdpa_kernel, SDPBackend
for name, h, hkv, dqk, dv in (("llama3-70b", 64, 8, 128, 128), ("mixtral", 32, 8, 128, 128),
                               ("qwen3-235b", 64, 4, 128, 128), ("deepseek-v3-mla", 128, 128, 192, 128)):
    for s in (2048, 4096, 8192):
        q = torch.randn(1, h, s, dqk, device=dev, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(1, hkv, s, dqk, device=dev, dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(1, hkv, s, dv, device=dev, dtype=torch.bfloat16, requires_grad=True)
        fwd_flops = 2 * s * s * h * (dqk + dv) / 2
        for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
            row = {"model": name, "seq": s, "heads": h, "kv_heads": hkv, "d_qk": dqk, "d_v": dv, "backend": backend.name}
            try:
                with sdpa_kernel(backend):
                    gqa = hkv != h
                    fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
                    o = fwd(); g = torch.randn_like(o)
                    tf = timed(fwd)
                    tfb = timed(lambda: torch.autograd.grad(fwd(), (q, k, v), g))
                row.update(fwd_ms=tf, bwd_ms=tfb - tf, fwd_tflops=fwd_flops / tf / 1e9,
                           bwd_tflops=2.5 * fwd_flops / (tfb - tf) / 1e9)
            except Exception as e:
                row["error"] = str(e).splitlines()[0][:160]
            note("attention", row)
        del q, k, v

# LM head and cross-entropy (vocab 128256 Llama-3, 129280 DeepSeek-V3, 151936 Qwen3; fp32 softmax as Megatron's
# vocab-parallel cross-entropy): forward GEMM, the loss forward + backward on the logits, backward GEMMs.
for d, vocab in ((8192, 128256), (7168, 129280), (4096, 151936)):
    for t in (4096, 8192):
        x = torch.randn(t, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
        w = torch.randn(vocab, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
        y = torch.randint(0, vocab, (t,), device=dev)
        gemm = timed(lambda: x @ w.t())
        logits = (x @ w.t()).detach().requires_grad_(True)
        ce = timed(lambda: torch.autograd.grad(F.cross_entropy(logits.float(), y), logits))
        note("lm_head", {"d": d, "vocab": vocab, "tokens": t, "gemm_ms": gemm, "gemm_tflops": 2 * t * d * vocab / gemm / 1e9,
                         "ce_fwd_bwd_ms": ce, "logits_bytes": t * vocab * 2})
        del x, w, logits

# Memory-bound kernels (bytes = read + written, bf16): RMSNorm forward and backward, SwiGLU forward, a copy.
for t, d in ((8192, 8192), (16384, 4096), (8192, 7168)):
    x = torch.randn(t, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    wn = torch.ones(d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    fwd = timed(lambda: F.rms_norm(x, (d,), wn, 1e-5))
    o = F.rms_norm(x, (d,), wn, 1e-5); g = torch.randn_like(o)
    both = timed(lambda: torch.autograd.grad(F.rms_norm(x, (d,), wn, 1e-5), (x, wn), g))
    n = t * d
    note("memory_bound", {"kernel": "rms_norm", "tokens": t, "d": d, "fwd_ms": fwd, "fwd_GBps": 2 * n * 2 / fwd / 1e6,
                          "bwd_ms": both - fwd, "bwd_GBps": 3 * n * 2 / (both - fwd) / 1e6})
    a = torch.randn(t, 2 * d, device=dev, dtype=torch.bfloat16)
    sw = timed(lambda: F.silu(a[:, :d]) * a[:, d:])
    note("memory_bound", {"kernel": "swiglu", "tokens": t, "d": d, "fwd_ms": sw, "fwd_GBps": 3 * n * 2 / sw / 1e6})
    y = torch.empty_like(x)
    cp = timed(lambda: y.copy_(x))
    note("memory_bound", {"kernel": "copy", "tokens": t, "d": d, "ms": cp, "GBps": 2 * n * 2 / cp / 1e6})
    del x, a, y

# MoE permutation: each token's row copied to its top-k experts' buffer (index_select), and back (index_add).
for t, d, k in ((8192, 7168, 8), (8192, 4096, 2), (16384, 2048, 8)):
    x = torch.randn(t, d, device=dev, dtype=torch.bfloat16)
    idx = torch.randint(0, t, (t * k,), device=dev)
    perm = timed(lambda: x.index_select(0, idx))
    rows = x.index_select(0, idx)
    out = torch.zeros_like(x)
    unperm = timed(lambda: out.index_add_(0, idx, rows))
    b = t * k * d * 2
    note("permute", {"tokens": t, "d": d, "topk": k, "permute_ms": perm, "permute_GBps": 2 * b / perm / 1e6,
                     "unpermute_ms": unperm, "unpermute_GBps": 3 * b / unperm / 1e6})
    del x, rows, out

# GEMMs at published models' linear shapes, bf16 and FP8 (torch._scaled_mm, per-tensor scales, bf16 out).
one = torch.ones((), device=dev)
for name, m, k, n in (("llama3-70b qkv", 8192, 8192, 10240), ("llama3-70b fc1", 8192, 8192, 57344),
                      ("llama3-70b fc2", 8192, 28672, 8192), ("dsv3 expert fc1 (x32 tokens/expert 256)", 256, 7168, 4096),
                      ("dsv3 expert fc1 (tokens 2048)", 2048, 7168, 4096), ("mixtral fc1 (tokens 4096)", 4096, 4096, 28672),
                      ("qwen3-30b expert fc1 (tokens 512)", 512, 2048, 1536)):
    a = torch.randn(m, k, device=dev, dtype=torch.bfloat16); b = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
    t16 = timed(lambda: a @ b.t())
    row = {"gemm": name, "m": m, "k": k, "n": n, "bf16_ms": t16, "bf16_tflops": 2 * m * n * k / t16 / 1e9}
    try:
        a8 = a.to(torch.float8_e4m3fn); b8 = b.to(torch.float8_e4m3fn)
        t8 = timed(lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
        row.update(fp8_ms=t8, fp8_tflops=2 * m * n * k / t8 / 1e9)
    except Exception as e:
        row["fp8_error"] = str(e).splitlines()[0][:160]
    note("gemm", row)
res["seconds"] = time.time() - start
json.dump(res, open(sys.argv[1], "w"), indent=1)
