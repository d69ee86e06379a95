# Makes the profile execute --compare prices with: the compute lines and
# shape models that calibrate --backend cuda measured on the one GPU, with
# the communication lines of the datasheet profile (one GPU cannot measure
# NVLink or NCCL).   compose_profile.py MEASURED DATASHEET NAME OUT
import re, sys
measured, datasheet, name, out = sys.argv[1:5]
def blocks(text):
    """Top-level 'costs { ... }' blocks of a textproto, with their op."""
    found, depth, start = [], 0, None
    for m in re.finditer(r"^costs \{$|\{|\}", text, re.M):
        if m.group(0) == "costs {" and depth == 0: start = m.start(); depth = 1; continue
        if start is None: continue
        depth += 1 if m.group(0) == "{" else -1
        if depth == 0:
            block = text[start:m.end()]
            found.append((re.search(r"op: (\w+)", block).group(1), block)); start = None
    return found
m_text, d_text = open(measured).read(), open(datasheet).read()
compute = {"GEMM", "ATTENTION", "GEMM_FP8", "ELEMENTWISE"}
comm = [b for op, b in blocks(d_text) if op not in compute]
if not comm: sys.exit("compose_profile: no communication lines in " + datasheet)
m_text = re.sub(r'^name: ".*"$', 'name: "%s"' % name, m_text, count=1, flags=re.M)
header = "# proto-message: CostProfile\n# %s's compute (calibrate --backend cuda) with %s's communication lines.\n" % (measured, datasheet)
body = re.sub(r"^# proto-message: CostProfile\n", "", m_text)
# The communication lines go right after the last measured costs block.
last = blocks(body)[-1][1]
at = body.index(last) + len(last)
open(out, "w").write(header + body[:at] + "\n" + "\n".join(comm) + body[at:])
