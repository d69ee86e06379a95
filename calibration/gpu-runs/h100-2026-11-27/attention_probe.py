# Fused causal attention on the lent GPU, forward and backward, over the shapes of
# SimuMax's B200 sweep (MooreThreads/SimuMax@4dcaae5 configs/system/b200_bf16_ceperm.json,
# sdp_fwd/sdp_bwd: 4-128 heads, head dim 128 and MLA's q/k 192 with v 128, 4K-128K tokens)
# and the sequence lengths of the published runs (2K-16K), plus head dim 64 (GPT-OSS):
# the points the datasheet profile's fused-attention lines are fitted to
# (calibration/fits/fused_attention.py, docs/cost-model.md "Fused attention").
# PyTorch's scaled_dot_product_attention with the cuDNN backend (what Transformer
# Engine's FusedAttention calls) and, where it runs, FlashAttention-2; Transformer
# Engine's DotProductAttention too when the machine has it. Medians of CUDA-event
# timings after warm-up; backward = (forward + backward) - forward.
#   attention_probe.py OUT.json [BUDGET_S] [d64]
# With "d64", head dim 64 only (GPT-OSS: 64 query heads, 8 KV heads, head dim 64), cuDNN
# only: 8-64 heads at 2K-32K tokens (the second call of 2026-11-27).
import json, sys, time, torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
dev = torch.device("cuda")
budget = float(sys.argv[2]) if len(sys.argv) > 2 else 240.0
start = time.time()
def med(xs): xs = sorted(xs); return xs[len(xs) // 2]
def timed(fn, reps, warm=2):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); out.append(a.elapsed_time(b))
    return med(out)
res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
       "cudnn": torch.backends.cudnn.version(), "rows": [], "skipped": []}
try:
    import transformer_engine, transformer_engine.pytorch as te
    res["transformer_engine"] = transformer_engine.__version__
except Exception as e:
    te = None; res["transformer_engine"] = "absent: " + str(e).splitlines()[0][:120]
print("env", {k: res[k] for k in ("device", "torch", "cuda", "cudnn", "transformer_engine")}, flush=True)
torch.randn(8192, 8192, device=dev) @ torch.randn(8192, 8192, device=dev)  # wake the clocks
shapes = []  # (seq, heads, kv_heads, d_qk, d_v)
for h, g in ((4, 1), (8, 1), (8, 2), (16, 2), (16, 4), (32, 4), (32, 8), (64, 8), (128, 16)):
    shapes.append((4096, h, g, 128, 128))
for h in (16, 32, 64, 128):
    shapes.append((4096, h, h, 192, 128))
for s in (2048, 8192, 16384):
    for h, g in ((16, 2), (32, 8), (64, 8), (128, 16)):
        shapes.append((s, h, g, 128, 128))
    for h in (32, 128):
        shapes.append((s, h, h, 192, 128))
for s in (4096, 8192):
    shapes.append((s, 64, 8, 64, 64))
shapes += [(32768, 8, 1, 128, 128), (32768, 16, 2, 128, 128), (32768, 64, 64, 192, 128),
           (131072, 8, 1, 128, 128), (131072, 16, 2, 128, 128)]
d64 = len(sys.argv) > 3 and sys.argv[3] == "d64"
if d64:
    shapes = [(s, h, max(1, h // 8), 64, 64) for s in (2048, 4096, 8192, 16384) for h in (8, 16, 32, 64)]
    shapes += [(32768, 8, 1, 64, 64), (32768, 64, 8, 64, 64)]
def run(label, fwd):
    o = fwd(); g = torch.randn_like(o)
    one = time.time(); fwd(); torch.autograd.grad(fwd(), o_inputs, g); torch.cuda.synchronize(); one = time.time() - one
    reps = 10 if one < 0.1 else 3
    tf = timed(fwd, reps)
    tfb = timed(lambda: torch.autograd.grad(fwd(), o_inputs, g), reps)
    return tf, tfb - tf
for s, h, hkv, dqk, dv in shapes:
    if time.time() - start > budget:
        res["skipped"].append([s, h, hkv, dqk, dv]); continue
    q = torch.randn(1, h, s, dqk, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, hkv, s, dqk, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, hkv, s, dv, device=dev, dtype=torch.bfloat16, requires_grad=True)
    o_inputs = (q, k, v)
    for backend in (SDPBackend.CUDNN_ATTENTION,) if d64 else (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
        row = {"seq": s, "heads": h, "kv_heads": hkv, "d_qk": dqk, "d_v": dv, "kernel": "sdpa-" + backend.name}
        try:
            with sdpa_kernel(backend):
                gqa = hkv != h
                row["fwd_ms"], row["bwd_ms"] = run(row["kernel"], lambda: F.scaled_dot_product_attention(
                    q, k, v, is_causal=True, enable_gqa=gqa))
        except Exception as e:
            row["error"] = str(e).splitlines()[0][:160]
        res["rows"].append(row); print(row, flush=True)
    if te is not None:
        row = {"seq": s, "heads": h, "kv_heads": hkv, "d_qk": dqk, "d_v": dv, "kernel": "te-DotProductAttention"}
        try:
            qs = q.detach().permute(2, 0, 1, 3).contiguous().requires_grad_()
            ks = k.detach().permute(2, 0, 1, 3).contiguous().requires_grad_()
            vs = v.detach().permute(2, 0, 1, 3).contiguous().requires_grad_()
            o_inputs = (qs, ks, vs)
            mod = te.DotProductAttention(h, (dqk, dv) if dqk != dv else dqk, num_gqa_groups=hkv,
                                         attn_mask_type="causal", qkv_format="sbhd")
            row["fwd_ms"], row["bwd_ms"] = run(row["kernel"], lambda: mod(qs, ks, vs))
        except Exception as e:
            row["error"] = str(e).splitlines()[0][:160]
        res["rows"].append(row); print(row, flush=True)
    del q, k, v
    torch.cuda.empty_cache()
res["seconds"] = time.time() - start
json.dump(res, open(sys.argv[1], "w"), indent=1)
print("done", len(res["rows"]), "rows,", len(res["skipped"]), "skipped,", round(res["seconds"], 1), "s", flush=True)
