"""Every argument of the moeplan Python module, driven with edge values (issue 28).

The module takes the CLI's validation through the same library function
(io/number_options.hpp for numbers): each edge value below is invalid for
every keyword it is sent to (docs/cli.md's table of numeric options: no
option takes 0 here, a negative number, a value past 1e18, or a non-finite
one), so each call must raise moeplan.InputError whose .field names the
keyword; never a TypeError, a MemoryError, a RuntimeError or a result.
Run by CTest with the built module on PYTHONPATH (see test_moeplan.py).
"""

import math
import unittest

import moeplan

SCENARIO = "flowmoe-gpt2-tiny-moe-c1"

# Base calls whose other arguments are valid; each keyword below is replaced in turn.
CALLS = {
    "load_scenario": (moeplan.load_scenario, dict(name=SCENARIO)),
    "simulate": (moeplan.simulate, dict(name=SCENARIO)),
    "plan": (moeplan.plan, dict(name=SCENARIO)),
    "sweep": (moeplan.sweep, dict(file=SCENARIO)),
    "capacity": (moeplan.capacity, dict(model="gpt-moe-s", cluster="dgx-h100", tokens="100B", gpus="8")),
}
NUMBER_KEYWORDS = {
    "simulate": ["degree", "threads"],
    "plan": ["threads"],
    "sweep": ["threads"],
    "capacity": ["days", "cost_per_gpu_hour", "seq_len", "global_batch", "threads", "tokens", "gpus"],
}
TEXT_KEYWORDS = {
    "load_scenario": ["name"],
    "simulate": ["name", "schedule"],
    "plan": ["name", "schedule"],
    "sweep": ["file"],
    "capacity": ["model", "cluster", "profile", "tokens", "gpus"],
}
# Invalid for every numeric keyword above: below 1 (each takes at least 1, or
# above 0), not finite, past 1e18 or past 64 bits, a bool, a list.
BAD_NUMBERS = [0, -1, -4096, math.nan, math.inf, -math.inf, 1e308, 2**62, 2**63, 2**64, 2**200, -(2**70), True, [1]]
# Whole-number keywords also refuse a fraction.
WHOLE = {"degree", "threads", "seq_len", "global_batch", "gpus"}
# Invalid for every text keyword: a NUL character (cut at it before), a lone
# surrogate (a bare cast error before), and a value that is not a str.
BAD_TEXTS = ["abc\x00def", "a\udcffb", 7]


class ArgumentPropertyTest(unittest.TestCase):
    def refused(self, function, kwargs, keyword):
        call, base = CALLS[function]
        args = dict(base, **kwargs)
        with self.assertRaises(moeplan.InputError, msg=f"{function}({args!r})") as raised:
            call(**args)
        self.assertEqual(raised.exception.field, keyword + "=", f"{function}({args!r}): {raised.exception}")
        self.assertTrue(str(raised.exception).startswith(keyword + "="), str(raised.exception))

    def test_every_numeric_keyword_refuses_each_edge_value(self):
        checked = 0
        for function, keywords in NUMBER_KEYWORDS.items():
            for keyword in keywords:
                values = BAD_NUMBERS + ([2.5] if keyword in WHOLE else [])
                for value in values:
                    with self.subTest(function=function, keyword=keyword, value=value):
                        self.refused(function, {keyword: value}, keyword)
                        checked += 1
        self.assertEqual(checked, 11 * len(BAD_NUMBERS) + 8)  # 11 keywords; 8 of them whole numbers (threads x 4)

    def test_every_text_keyword_refuses_nul_surrogates_and_non_text(self):
        checked = 0
        for function, keywords in TEXT_KEYWORDS.items():
            for keyword in keywords:
                for value in BAD_TEXTS:
                    if keyword in ("tokens", "gpus") and isinstance(value, int):
                        continue  # a number is a valid tokens= or gpus=
                    with self.subTest(function=function, keyword=keyword, value=value):
                        self.refused(function, {keyword: value}, keyword)
                        checked += 1
        self.assertEqual(checked, 11 * len(BAD_TEXTS) - 2)

    def test_set_refuses_nul_surrogates_and_non_text_in_lists_and_dicts(self):
        for bad in (["model.name=\udcff"], ["workload.seq_len=2048\x00garbage"], {"model.name": "abc\x00def"},
                    {"model.\x00name": "x"}, [7], 7):
            with self.subTest(set=bad):
                self.refused("simulate", {"set": bad}, "set")


class Issue28Test(unittest.TestCase):
    """The issue's Python findings, each with the exception it raised before."""

    def test_capacity_numbers(self):
        base = dict(model="gpt-moe-s", cluster="dgx-h100", tokens="100B", gpus="8")
        cases = [
            ("days", math.nan, "days=: must be a finite number, got nan"),  # returned a result
            ("days", -5, "days=: must be above 0 days, got -5"),  # returned a result
            ("cost_per_gpu_hour", -2.5, "cost_per_gpu_hour=: must be above 0 per GPU-hour, got -2.5"),
            ("global_batch", 0, "global_batch=: must be at least 1 sequence, got 0"),  # returned a result
            ("seq_len", -4096, "seq_len=: must be at least 1 token, got -4096"),  # RunError
            ("global_batch", 2**62, "global_batch=: must be at most 65536 sequences, got 4611686018427387904"),  # MemoryError
            ("gpus", "1099511627776", "gpus=: must be at most 1048576 GPUs, got 1099511627776"),  # MemoryError
        ]
        for keyword, value, message in cases:
            with self.subTest(keyword=keyword, value=value):
                with self.assertRaises(moeplan.InputError) as raised:
                    moeplan.capacity(**dict(base, **{keyword: value}))
                self.assertEqual(str(raised.exception), message)

    def test_set_text(self):
        # RuntimeError "Unable to cast Python instance to C++ type" before.
        with self.assertRaises(moeplan.InputError) as raised:
            moeplan.load_scenario(SCENARIO, set=["model.name=\udcff"])
        self.assertEqual(str(raised.exception),
                         "set=: is not valid Unicode text (it holds a lone surrogate, such as undecodable bytes leave)")
        # Accepted, cut at the NUL, before.
        for bad in (["workload.seq_len=2048\x00garbage"], {"model.name": "abc\x00def"}):
            with self.assertRaises(moeplan.InputError) as raised:
                moeplan.load_scenario(SCENARIO, set=bad)
            self.assertEqual(str(raised.exception), "set=: holds a NUL character")

    def test_valid_numbers_still_work(self):
        # A number for tokens= and gpus= is the CLI's "100B" and "8".
        by_number = moeplan.capacity("gpt-moe-s", "dgx-h100", tokens=1e11, gpus=8, global_batch=64, threads=1)
        by_text = moeplan.capacity("gpt-moe-s", "dgx-h100", tokens="100B", gpus="8", global_batch=64, threads=1)
        self.assertEqual(by_number, by_text)


if __name__ == "__main__":
    unittest.main()
