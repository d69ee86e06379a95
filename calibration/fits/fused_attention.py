#!/usr/bin/env python3
"""Fits the fused-attention lines of the datasheet profiles (docs/cost-model.md,
"Fused attention"): per GPU, head-dimension class and pass, the startup alpha (ms)
and the share e of the dense half-precision peak P that make

    t = alpha + F / (e P)

closest to the measured kernels in relative terms (least squares of log(t / measured)),
where F is the FLOP count moeplan prices the core on (cost::attention_core_flops):
forward F = (s (s + 1) / 2) x h (2 d_qk + 2 d_v + 3) per sequence of s tokens and h
query heads (the causal pairs once, as the kernels compute them); backward 2 F.

Sources (both in this repository):
  B200: calibration/data/simumax-b200-sdp.json, SimuMax's sweep of Transformer Engine's
        fused attention (latencies recovered from its efficiencies and FLOP count);
        rows with contiguous q, k, v.
  H100: calibration/gpu-runs/h100-2026-11-27/results/attention-probe.json, this project's
        PyTorch cuDNN SDPA probe (the backend Transformer Engine's FusedAttention calls).
Classes: "mha" = head dim 128 (every head dim without its own line); "mla" = d_qk 192,
d_v 128 (DeepSeek's multi-head latent attention); "d64" = head dim 64 (GPT-OSS; H100 only:
attention-probe-d64.json, the second probe of that day).

Usage: calibration/fits/fused_attention.py [REPO_ROOT]   (prints the lines and errors)
"""
import json
import math
import os
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def moeplan_flops(s, h, d_qk, d_v):
    return s * (s + 1) / 2 * h * (2 * d_qk + 2 * d_v + 3)


def b200_points():
    d = json.load(open(os.path.join(root, "calibration/data/simumax-b200-sdp.json")))
    peak = d["tflops"] * 1e12
    out = []
    for key, eff_f in d["sdp_fwd"].items():
        kv = dict(x.strip().split("=") for x in key.split(","))
        if kv.get("qkv_contiguous") != "True":
            continue
        b, s, h, g, dqk, dv = (int(kv[k]) for k in ("batch", "seq_len", "head_num", "kv_head_num", "qk_head_dim",
                                                    "v_head_dim"))
        base = b * s * s * max(h, g) * (dqk + dv)
        fwd_ms = 2 * base / (peak * eff_f) * 1e3
        bwd_ms = 5 * base / (peak * d["sdp_bwd"][key]) * 1e3
        out.append((s, h, dqk, dv, b * moeplan_flops(s, h, dqk, dv), fwd_ms, bwd_ms))
    return peak, out


def h100_points():
    rows = []
    for name in ("attention-probe.json", "attention-probe-d64.json"):
        rows += json.load(open(os.path.join(root, "calibration/gpu-runs/h100-2026-11-27/results", name)))["rows"]
    out = []
    for r in rows:
        if r["kernel"] != "sdpa-CUDNN_ATTENTION" or "error" in r:
            continue
        s, h, dqk, dv = r["seq"], r["heads"], r["d_qk"], r["d_v"]
        out.append((s, h, dqk, dv, moeplan_flops(s, h, dqk, dv), r["fwd_ms"], r["bwd_ms"]))
    return 989.5e12, out  # H100-SXM5 dense BF16 peak (the cluster file's peak_tflops_bf16)


def rms(points, alpha, eff, peak):
    return math.sqrt(sum(math.log((alpha + f / (eff * peak) * 1e3) / t) ** 2 for f, t in points) / len(points))


def fit(points, peak):
    best = None
    for i in range(0, 301):
        alpha = i * 0.001
        lo, hi = 0.05, 1.0  # golden-section search of the efficiency at this startup
        for _ in range(60):
            m1, m2 = lo + (hi - lo) * 0.382, lo + (hi - lo) * 0.618
            if rms(points, alpha, m1, peak) < rms(points, alpha, m2, peak):
                hi = m2
            else:
                lo = m1
        e = (lo + hi) / 2
        r = rms(points, alpha, e, peak)
        if best is None or r < best[0]:
            best = (r, alpha, e)
    return best


def main():
    for gpu, (peak, pts) in (("B200", b200_points()), ("H100", h100_points())):
        for cls in ("mha", "mla", "d64"):
            sel = [p for p in pts if (p[2], p[3]) == {"mha": (128, 128), "mla": (192, 128), "d64": (64, 64)}[cls]]
            if len(sel) < 4:
                print(f"{gpu} {cls}: {len(sel)} shapes, too few for a line")
                continue
            for name, col, factor in (("forward", 5, 1), ("backward", 6, 2)):
                points = [(p[4] * factor, p[col]) for p in sel]
                r, alpha, e = fit(points, peak)
                worst = max(abs(math.log((alpha + f / (e * peak) * 1e3) / t)) for f, t in points)
                print(f"{gpu} {cls} {name:8s}: alpha {alpha:.3f} ms, efficiency {e:.3f}; "
                      f"rms log error {r:.3f}, worst {worst:.3f}, {len(points)} shapes")
        # The single line every pass and head dim shared before (0.05 ms, 0.39), for comparison.
        allp = [(p[4], p[5]) for p in pts] + [(2 * p[4], p[6]) for p in pts]
        print(f"{gpu} one line (0.05 ms, 0.39) over both passes and classes: rms log error "
              f"{rms(allp, 0.05, 0.39, peak):.3f}, {len(allp)} kernels")


if __name__ == "__main__":
    main()
