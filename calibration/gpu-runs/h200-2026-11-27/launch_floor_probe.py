# A kernel's time alone against its time in a queue (issue 30's open finding:
# moeplan's GEMM alpha is fitted to isolated timings, where the host's launch
# cadence sits between the events; a replay queues launches ahead of the GPU).
# For each op: "alone" = median of 20 CUDA-event timings around one launch
# after a synchronize; "queued" = one event pair around 200 back-to-back
# launches, divided by 200 (median of 5): in eager PyTorch the host's launch
# rate; "graph" = the same 200 launches captured in a CUDA graph and replayed,
# divided by 200 (median of 5): the GPU's own floor per kernel.
#   launch_floor_probe.py OUT.json
import json, sys, torch
dev = torch.device("cuda")
def med(xs): xs = sorted(xs); return xs[len(xs) // 2]
def alone(fn, reps=20):
    for _ in range(3): fn()
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); out.append(a.elapsed_time(b))
    return med(out)
def queued(fn, n=200, reps=5):
    for _ in range(3): fn()
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(n): fn()
        b.record(); b.synchronize(); out.append(a.elapsed_time(b) / n)
    return med(out)
def graphed(fn, n=200, reps=5):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n): fn()
    for _ in range(2): g.replay()
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); b.synchronize(); out.append(a.elapsed_time(b) / n)
    return med(out)
res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": []}
ops = []
for m, k, n in ((256, 512, 1024), (128, 2048, 1408), (512, 1024, 1024), (1024, 2048, 1408), (4096, 4096, 14336)):
    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16); w = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
    ops.append((f"gemm {m}x{k}x{n}", 2 * m * k * n, lambda x=x, w=w: torch.mm(x, w)))
for elems in (2**16, 2**20, 2**24):
    t = torch.randn(elems, device=dev, dtype=torch.bfloat16)
    ops.append((f"add_ {elems} bf16", 0, lambda t=t: t.add_(1.0)))
for name, flops, fn in ops:
    row = {"op": name, "flops": flops, "alone_ms": alone(fn), "queued_ms": queued(fn), "graph_ms": graphed(fn)}
    res["rows"].append(row); print(row, flush=True)
json.dump(res, open(sys.argv[1], "w"), indent=1)
