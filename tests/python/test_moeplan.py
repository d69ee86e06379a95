"""The moeplan Python module against the CLI (docs/python.md).

Each function must return what the matching `moeplan ... --json` command
prints, parsed: the CLI binary is a second, separately built path through
the same commands, so equality catches a binding that drifts from it. Values
that can be read off the input files are checked against those files.
Run by CTest with MOEPLAN_BIN (the CLI) and MOEPLAN_SOURCE_DIR set and the
built module on PYTHONPATH.
"""

import re
import csv
import io
import json
import math
import os
import subprocess
import unittest
import warnings

import moeplan

BIN = os.environ["MOEPLAN_BIN"]
SRC = os.environ["MOEPLAN_SOURCE_DIR"]
SWEEP = os.path.join(SRC, "tests", "data", "sweeps", "small-fsmoe.textproto")


def cli(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True)


def cli_json(*args):
    r = cli(*args, "--json")
    if r.returncode != 0:
        raise AssertionError(f"moeplan {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


def cli_error(*args):
    """The CLI's one error line after 'moeplan: error: ', and its exit code."""
    r = cli(*args)
    prefix = "moeplan: error: "
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), r.stderr
    return lines[0][len(prefix):], r.returncode


class PlanTest(unittest.TestCase):
    def test_capacity_is_the_cli_capacity(self):
        # A small model (3 counts, about a second): the same code path as Mixtral's, a
        # fraction of its time under ASan, where this test also runs.
        args = dict(tokens="100B", days=30, gpus="8..32", global_batch=64)
        got = moeplan.capacity("gpt-moe-s", "dgx-h100", threads=2, **args)
        want = cli_json("capacity", "gpt-moe-s", "--cluster", "dgx-h100", "--tokens", "100B", "--days", "30",
                        "--gpus", "8..32", "--global-batch", "64", "--threads", "2", "--quiet")
        self.assertEqual(got, want)
        self.assertEqual([row["gpus"] for row in got["rows"]], [8, 16, 32])
        # Days by hand from each row's rate: 1e11 tokens / tokens_per_s / 86,400 s.
        for row in got["rows"]:
            if row["tokens_per_s"]:
                self.assertAlmostEqual(row["days"], 1e11 / row["tokens_per_s"] / 86400, delta=1e-9 * row["days"])
        with self.assertRaises(moeplan.InputError) as e:
            moeplan.capacity("mixtral-8x22b", "dgx-h100", days=30)
        self.assertEqual(str(e.exception), as_keywords(cli_error("capacity", "mixtral-8x22b", "--cluster", "dgx-h100",
                                                                 "--days", "30")[0]))

    def test_plan_is_the_cli_plan(self):
        got = moeplan.plan("foldmoe-gpt-moe-m-16k", threads=2)
        self.assertEqual(got, cli_json("plan", "foldmoe-gpt-moe-m-16k", "--threads", "2"))
        # The plan's own arithmetic: the chosen run is the plan's, the speed-up is baseline over it.
        self.assertEqual(got["chosen"]["schedule"], got["schedule"])
        self.assertEqual(got["chosen"]["iteration_ms"], got["iteration_ms"])
        self.assertAlmostEqual(got["speedup"], got["baseline_ms"] / got["iteration_ms"], places=12)

    def test_set_and_schedule_act_as_the_cli_options(self):
        args = ["workload.seq_len=8192", "model.moe.capacity_factor=1.5"]
        got = moeplan.plan("foldmoe-gpt-moe-m-16k", set=args, schedule="aaam", threads=1)
        want = cli_json("plan", "foldmoe-gpt-moe-m-16k", "--set", args[0], "--set", args[1], "--schedule", "aaam",
                        "--threads", "1")
        self.assertEqual(got, want)
        self.assertEqual(got["schedule"], "aaam")
        # A dict says the same as a list of field=value strings.
        self.assertEqual(moeplan.plan("foldmoe-gpt-moe-m-16k", set={"workload.seq_len": 8192,
                                                                    "model.moe.capacity_factor": 1.5},
                                      schedule="aaam", threads=1), got)
        self.assertNotEqual(got["iteration_ms"], moeplan.plan("foldmoe-gpt-moe-m-16k", schedule="aaam",
                                                              threads=1)["iteration_ms"])

    def test_a_folding_plan(self):
        self.assertEqual(moeplan.plan("folding-qwen2-57b-a14b-64", threads=2),
                         cli_json("plan", "folding-qwen2-57b-a14b-64", "--threads", "2"))


class SimulateTest(unittest.TestCase):
    def test_one_schedule_is_a_dict_all_is_a_list(self):
        one = moeplan.simulate("foldmoe-gpt-moe-m-16k", schedule="1a1m", degree=6, threads=1)
        self.assertEqual(one, cli_json("simulate", "foldmoe-gpt-moe-m-16k", "--schedule", "1a1m", "--degree", "6"))
        self.assertEqual((one["schedule"], one["degree"]), ("1a1m", 6))
        every = moeplan.simulate("fsmoe-testbed-b-gpt2-xl", schedule="all", set=["model.num_layers=4"])
        self.assertEqual(every, cli_json("simulate", "fsmoe-testbed-b-gpt2-xl", "--schedule", "all", "--set",
                                         "model.num_layers=4"))
        self.assertEqual([r["schedule"] for r in every],
                         ["none", "tutel", "tutel-improved", "pipemoe-lina", "fsmoe-no-iio", "fsmoe"])

    def test_the_scenarios_own_schedule_and_a_folding_mapping(self):
        self.assertEqual(moeplan.simulate("flowmoe-gpt2-tiny-moe-c1"), cli_json("simulate", "flowmoe-gpt2-tiny-moe-c1"))
        folding = moeplan.simulate("folding-mixtral-8x22b-128")
        self.assertEqual(folding, cli_json("simulate", "folding-mixtral-8x22b-128"))
        self.assertEqual(folding["degree"], 4)  # the scenario's pp (scenarios/folding-mixtral-8x22b-128.textproto)

    def test_notes_become_warnings(self):
        # Fixed slices rule 1a1m-uniform out of "all": the CLI says so on stderr.
        fixed = "schedule.slicing=8192,8192"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            runs = moeplan.simulate("foldmoe-gpt-moe-m-16k", schedule="all", set=[fixed])
        self.assertNotIn("1a1m-uniform", [r["schedule"] for r in runs])
        said = cli("simulate", "foldmoe-gpt-moe-m-16k", "--schedule", "all", "--set", fixed).stderr
        note = next(line for line in said.splitlines() if "1a1m-uniform skipped" in line)
        self.assertIn(note.replace("moeplan: note: ", "moeplan: "), [str(w.message) for w in caught])

    def test_the_memory_notes_are_the_clis(self):
        # FlowMoE's ablation scenario does not fit its 24 GiB GPU and Mixtral-8x22B
        # on 128 H100s fits by less than the memory model's error
        # (docs/cost-model.md, "Memory"): the module warns as the CLI notes.
        for name, words in (("flowmoe-ablation-c1", "would not fit"), ("folding-mixtral-8x22b-128", "may not fit")):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                moeplan.simulate(name)
            said = cli("simulate", name).stderr
            note = next(line for line in said.splitlines() if words in line)
            self.assertIn(note.replace("moeplan: note: ", "moeplan: "), [str(w.message) for w in caught])


class SweepTest(unittest.TestCase):
    def test_summary_and_rows_are_the_clis(self):
        got = moeplan.sweep(SWEEP, threads=2)
        self.assertEqual(got["summary"], cli_json("sweep", SWEEP))
        r = cli("sweep", SWEEP, "-o", "-")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        # 2 x 2 x 2 points (tests/data/sweeps/small-fsmoe.textproto) x FSMoE's six schedules.
        self.assertEqual(len(rows), 48)
        self.assertEqual(len(got["rows"]), len(rows))
        for mine, theirs in zip(got["rows"], rows):
            self.assertEqual(list(mine), list(theirs))  # the CSV's columns, in order
            for key, cell in theirs.items():
                value = mine[key]
                if cell == "":
                    self.assertTrue(value is None or value == "", key)
                elif isinstance(value, (int, float)) and not isinstance(value, bool):
                    self.assertEqual(value, float(cell), key)  # shortest round-trip text: exact
                else:
                    self.assertEqual(value, cell, key)


class LoadScenarioTest(unittest.TestCase):
    def test_fields_and_counts(self):
        s = moeplan.load_scenario("foldmoe-gpt-moe-m-16k")
        entry = cli_json("validate", "foldmoe-gpt-moe-m-16k")[0]
        for key in ("params_total", "params_active", "flops_per_token"):
            self.assertEqual(s[key], entry[key])
        # scenarios/foldmoe-gpt-moe-m-16k.textproto and models/gpt-moe-m.textproto.
        self.assertEqual(s["fields"]["workload.seq_len"], 16384)
        self.assertEqual(s["fields"]["model.d_model"], 768)
        self.assertEqual(s["fields"]["model.moe.expert_type"], "GELU_FFN")
        self.assertIs(s["fields"]["model.tie_embeddings"], True)
        moved = moeplan.load_scenario("foldmoe-gpt-moe-m-16k", set={"model.d_model": 1024})
        self.assertEqual(moved["fields"]["model.d_model"], 1024)
        self.assertEqual(moved["params_total"],
                         cli_json("validate", "foldmoe-gpt-moe-m-16k", "--set", "model.d_model=1024")[0]["params_total"])


def as_keywords(cli_text):
    """The CLI's error text as the module writes it: each option named as its keyword (--seq-len -> seq_len=)."""
    return re.sub(r"--([a-z][a-z-]*)", lambda m: m.group(1).replace("-", "_") + "=", cli_text)


class ErrorTest(unittest.TestCase):
    def check_same_error(self, call, *cli_args):
        text, code = cli_error(*cli_args)
        self.assertEqual(code, 2)
        with self.assertRaises(moeplan.InputError) as raised:
            call()
        self.assertEqual(str(raised.exception), as_keywords(text))
        return raised.exception

    def test_input_errors_carry_the_clis_text(self):
        e = self.check_same_error(lambda: moeplan.plan("foldmoe-gpt-moe-m-16k", set=["schedule.ar_chunk_bytes=4096"]),
                                  "plan", "foldmoe-gpt-moe-m-16k", "--set", "schedule.ar_chunk_bytes=4096")
        self.assertEqual(e.field, "schedule.ar_chunk_bytes")
        self.assertIsInstance(e, ValueError)
        self.assertIsInstance(e, moeplan.Error)
        self.check_same_error(lambda: moeplan.simulate("no-such-scenario"), "simulate", "no-such-scenario")
        self.check_same_error(lambda: moeplan.simulate("foldmoe-gpt-moe-m-16k", set=["workload.seq_len"]),
                              "simulate", "foldmoe-gpt-moe-m-16k", "--set", "workload.seq_len")
        self.check_same_error(lambda: moeplan.simulate("foldmoe-gpt-moe-m-16k", schedule="fsmoe"),
                              "simulate", "foldmoe-gpt-moe-m-16k", "--schedule", "fsmoe")

    def test_the_exception_classes(self):
        self.assertTrue(issubclass(moeplan.InputError, ValueError))
        self.assertTrue(issubclass(moeplan.LimitError, moeplan.InputError))
        self.assertTrue(issubclass(moeplan.RunError, RuntimeError))
        self.assertTrue(issubclass(moeplan.RunError, moeplan.Error))
        self.assertFalse(issubclass(moeplan.RunError, ValueError))
        with self.assertRaises(moeplan.InputError):
            moeplan.simulate("foldmoe-gpt-moe-m-16k", threads=0)
        with self.assertRaises(moeplan.InputError):
            moeplan.plan("foldmoe-gpt-moe-m-16k", set="workload.seq_len=8192")  # one string, not a list


if __name__ == "__main__":
    unittest.main()
