#!/usr/bin/env bash
# import-hf: models from Hugging Face config.json files (tests/data/hf),
# refusals that name the key, and the written model validated, counted and
# simulated. Usage: import_hf_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"

# Issue 18 item 5: import-hf writes a model from a Hugging Face config.json (tests/data/hf/SOURCES.md).
hf=$src/tests/data/hf
# Issue 26 item 4: the multi-token prediction module is kept (model.mtp_num_layers) unless dropped.
check "import-hf deepseek-v3 keeps its MTP module" 0 "$bin" import-hf "$hf/deepseek-v3.json" -o "$tmp/dsv3-mtp.textproto"
is_true "import-hf writes mtp_num_layers" grep -q "^mtp_num_layers: 1" "$tmp/dsv3-mtp.textproto"
# 671,026,404,352 + one MTP module of 11,610,067,968 (hf_config_test): 682.636 B, the card's 685B less the checkpoint's
# copies of the embedding and head.
is_true "import-hf counts the MTP module" grep -q "682.636 B total" "$tmp/out"
check "import-hf deepseek-v3 --drop-mtp" 0 "$bin" import-hf "$hf/deepseek-v3.json" -o "$tmp/dsv3.textproto" --drop-mtp --json
cp "$tmp/out" "$tmp/dsv3.json"
# Issue 26 item 3: a dense Llama imports (no moe) and plans on the folding family.
check "import-hf llama-3-70b (dense)" 0 "$bin" import-hf "$hf/llama-3-70b.json" -o "$tmp/llama.textproto"
is_true "import-hf counts the dense model (70,553,706,496 by hand, hf_config_test)" \
  grep -q "70.554 B total, 70.554 B active" "$tmp/out"
is_true "a dense model has no moe section" bash -c "! grep -q '^moe' '$tmp/llama.textproto'"
check "the imported dense model plans" 0 "$bin" plan folding-llama3-70b-64 --set "model_ref=$tmp/llama.textproto" --json
cp "$tmp/out" "$tmp/llama-imported-plan.json"
check "the bundled dense model plans" 0 "$bin" plan folding-llama3-70b-64 --json
pycheck "import-hf: the imported Llama plans as the bundled one written by hand" "$tmp/llama-imported-plan.json" "$tmp/out" <<'PY'
import json, sys
from cli_check import expect, done
imported, bundled = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
expect(imported["iteration_ms"] == bundled["iteration_ms"], f"same time: {imported['iteration_ms']} vs {bundled['iteration_ms']}")
expect(imported["knobs"] == bundled["knobs"], "same mapping")
done()
PY
check "a dense model on foldmoe" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set "model_ref=$tmp/llama.textproto"
expect_err "a dense model is refused by the MoE families" "schedule.family: model llama-3-70b is dense (no moe)"
sed 's/"vocab_size": 32000/"vocab_size": 32000, "num_experts_per_group": 2/' "$hf/mixtral-8x7b.json" >"$tmp/odd.json"
check "import-hf unknown key" 2 "$bin" import-hf "$tmp/odd.json" -o "$tmp/odd.textproto"
expect_err "import-hf names an unknown key" "odd.json: num_experts_per_group: not read for model_type mixtral"
check "import-hf -o - --json" 2 "$bin" import-hf "$hf/mixtral-8x7b.json" -o - --json
check "import-hf -o -" 0 "$bin" import-hf "$hf/mixtral-8x7b.json" -o -
is_true "import-hf -o - prints the model alone" grep -q '^# proto-message: Model' "$tmp/out"
check "import-hf qwen2" 0 "$bin" import-hf "$hf/qwen2-57b-a14b.json" -o "$tmp/qwen2.textproto"
is_true "import-hf reports the counts" grep -q "57.409 B total, 14.249 B active" "$tmp/out"
pycheck "import-hf: validate reads the written model with the reported counts" "$tmp" <<'PY'
import sys
from cli_check import moeplan, load, expect, expect_close, done
tmp = sys.argv[1]
imported = load(f"{tmp}/dsv3.json")
checked = moeplan("validate", f"{tmp}/dsv3.textproto")[0]
expect(checked["ok"] and checked["kind"] == "model", "the written model validates")
expect(imported["params_total"] == checked["params_total"], "the same total")
expect(imported["params_active"] == checked["params_active"], "the same active count")
# DeepSeek-V3 report: 671B total (main model); 37B active, our count with the embedding table 37.55B.
expect_close(imported["params_total"], 671e9, "DeepSeek-V3 total", 0.01)
expect_close(imported["params_active"], 37e9, "DeepSeek-V3 active", 0.03)
expect(any("multi-token prediction" in n for n in imported["notes"]), "the dropped MTP module is said")
# The imported model plans: MLA and the three dense blocks on FoldMoE's schedules.
run = moeplan("simulate", "foldmoe-gpt-moe-m-16k", "--set", f"model_ref={tmp}/dsv3.textproto", "--set", "model.num_layers=5")
expect(run["iteration_ms"] > 0 and run["tasks"] > 0, "the imported model simulates")
done()
PY
check "imported metadata is refused as an option" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set "model_ref=$tmp/dsv3.textproto" --set model.moe.topk_groups=2
expect_err "metadata option named" "model.moe.topk_groups: cannot act on this foldmoe scenario: routing metadata"

# Issue 26 item 4: Llama 4 (text_config, chunked attention) imports, validates and plans on the folding family.
check "import-hf llama-4-scout" 0 "$bin" import-hf "$hf/llama-4-scout-17b-16e-instruct.json" -o "$tmp/scout.textproto"
is_true "import-hf counts Scout's text model (107,769,861,120 by hand, hf_config_test)" \
  grep -q "107.770 B total, 17.173 B active" "$tmp/out"
is_true "the chunked blocks are written" grep -q '^attention_chunk_size: 8192' "$tmp/scout.textproto"
check "the imported Llama 4 validates" 0 "$bin" validate "$tmp/scout.textproto"
check "the imported Llama 4 plans" 0 "$bin" plan folding-mixtral-8x22b-16k-128 --set "model_ref=$tmp/scout.textproto"
check "chunked attention under context parallelism" 2 "$bin" simulate folding-mixtral-8x22b-16k-128 \
  --set "model_ref=$tmp/scout.textproto" --set parallelism.cp=2
expect_err "the chunks' cp refusal is named" "parallelism.cp: context parallelism with chunked attention is not modelled"
# Kimi-K2: DeepSeek-V3's architecture under model_type kimi_k2.
check "import-hf kimi-k2" 0 "$bin" import-hf "$hf/kimi-k2-instruct.json" -o "$tmp/kimi.textproto"
is_true "import-hf counts Kimi-K2 (1,026,408,209,408 by hand, hf_config_test)" grep -q "1026.408 B total" "$tmp/out"
# Qwen3-Next's Gated DeltaNet cannot be priced: refused by name.
sed 's/"model_type": "qwen3_moe"/"model_type": "qwen3_next"/' "$hf/qwen3-30b-a3b.json" >"$tmp/qwen3-next.json"
check "import-hf qwen3_next" 2 "$bin" import-hf "$tmp/qwen3-next.json" -o "$tmp/qwen3-next.textproto"
expect_err "qwen3_next is refused with its reason" "model_type: 'qwen3_next' is refused: Qwen3-Next's linear attention (Gated DeltaNet)"

# Issue 28: what is not JSON is refused at its line and column, and a file of
# 250,000 keys is read in time linear in them (each key was compared with every
# one before it: minutes; `timeout` makes that a failure).
sed 's/"hidden_size": 7168/"hidden_size": 07168/' "$hf/deepseek-v3.json" >"$tmp/zero.json"
check "import-hf: a leading zero" 2 "$bin" import-hf "$tmp/zero.json" -o "$tmp/zero.textproto"
# Line 18 is `  "hidden_size": 07168,`: 2 spaces, 13 bytes of key, ": ", so the number starts at byte 18.
expect_err "a leading zero, at its line and column" "zero.json:18:18: invalid JSON: malformed number '07168': no leading zeros"
python3 - "$hf/deepseek-v3.json" "$tmp/keys.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config.update((f"x{k}", 0) for k in range(250000))
json.dump(config, open(sys.argv[2], "w"), indent=0)
PY
check "import-hf: 250,000 keys" 2 timeout 60 "$bin" import-hf "$tmp/keys.json" -o "$tmp/keys.textproto"
expect_err "the first key no family reads" "keys.json: x0: not read for model_type deepseek_v3"

# Issue 28: a value no model has, and a product past the model format's bound, named by their key.
sed 's/"routed_scaling_factor": 2.5/"routed_scaling_factor": 1e308/' "$hf/deepseek-v3.json" >"$tmp/scale.json"
check "import-hf: routed_scaling_factor 1e308" 2 "$bin" import-hf "$tmp/scale.json" -o "$tmp/scale.textproto"
expect_err "routed_scaling_factor named" "scale.json: routed_scaling_factor: 1e+308 is outside [0.001, 1000]"
sed 's/"routed_scaling_factor": 2.5/"routed_scaling_factor": 1e-300/' "$hf/deepseek-v3.json" >"$tmp/scale.json"
check "import-hf: routed_scaling_factor 1e-300" 2 "$bin" import-hf "$tmp/scale.json" -o "$tmp/scale.textproto"
expect_err "routed_scaling_factor named" "scale.json: routed_scaling_factor: 1e-300 is outside [0.001, 1000]"
# 3002399751580331 x 6144 = 2^64 + 2048: the product wrapped, and 2048 was written.
sed -e 's/"moe_intermediate_size": 2048/"moe_intermediate_size": 6144/' \
  -e 's/"n_shared_experts": 1,/"n_shared_experts": 3002399751580331,/' "$hf/deepseek-v3.json" >"$tmp/shared.json"
check "import-hf: n_shared_experts x moe_intermediate_size past 2^64" 2 "$bin" import-hf "$tmp/shared.json" -o "$tmp/shared.textproto"
expect_err "n_shared_experts named" "shared.json: n_shared_experts: 3002399751580331 is too large: the model format allows at most 4096"
is_true "no model written" test ! -e "$tmp/shared.textproto"

summary
