# The passes Megatron-Core's DDP makes over a rank's whole gradient buffer each
# iteration, timed as Megatron-Core runs them (PyTorch tensor ops on the flat
# buffer: param_and_grad_buffer.py): zero_grad_buffer()'s grad_data.zero_(),
# check_for_nan_in_grad's grad_data.norm(p=2) per bucket, and the pre-scaling
# grad_data *= gradient_scaling_factor before the reduce-scatter; beside them a
# copy and the fused Adam step (torch.optim.AdamW(fused=True)) for scale.
# Achieved HBM bandwidth = bytes moved / median time of 10 CUDA-event timings
# after 3 warm-up runs.   grad_buffer_probe.py OUT.json
import json, sys, time, torch
dev = torch.device("cuda")
def med(xs): xs = sorted(xs); return xs[len(xs) // 2]
def timed(fn, reps=10, warm=3):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); out.append(a.elapsed_time(b))
    return med(out)
res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "passes": [], "adam": []}
t0 = time.time()
for dtype, nbytes in ((torch.float32, 4), (torch.bfloat16, 2)):
    for mib in (64, 512, 4096):
        n = mib * 2**20 // nbytes
        g = torch.randn(n, device=dev, dtype=torch.float32).to(dtype)
        other = torch.empty_like(g)
        # bytes each op moves: zero writes n, norm reads n, scale reads and writes n, copy reads and writes n
        for name, fn, moved in (("zero", lambda: g.zero_(), 1), ("norm", lambda: g.norm(p=2), 1),
                                ("scale", lambda: g.mul_(0.125), 2), ("copy", lambda: other.copy_(g), 2)):
            ms = timed(fn)
            row = {"op": name, "dtype": str(dtype).split(".")[-1], "mib": mib, "ms": ms,
                   "gb_per_s": moved * n * nbytes / ms / 1e6}
            res["passes"].append(row); print(row, flush=True)
        del g, other
        torch.cuda.empty_cache()
# Fused AdamW over one fp32 parameter of n elements (master weight, gradient, two moments: 16 B read, 12 B written).
for mparams in (64, 512):
    n = mparams * 2**20
    p = torch.nn.Parameter(torch.randn(n, device=dev))
    p.grad = torch.randn_like(p)
    opt = torch.optim.AdamW([p], lr=1e-4, fused=True)
    ms = timed(opt.step)
    row = {"op": "adamw_fused", "mparams": mparams, "ms": ms, "gb_per_s_at_28B": 28 * n / ms / 1e6}
    res["adam"].append(row); print(row, flush=True)
    del p, opt
    torch.cuda.empty_cache()
res["seconds"] = time.time() - t0
json.dump(res, open(sys.argv[1], "w"), indent=1)
