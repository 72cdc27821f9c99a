#!/usr/bin/env python3
"""Unit tests of trace_overhead.py's pure logic: the interval for the
median, the three-way latency verdict, the tool subsets and their orders.
Standard library only; crates/cli/tests/e2e/bench_scripts.rs runs this file
as part of `cargo test`."""

import argparse
import contextlib
import io
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_overhead as t  # noqa: E402


def binom_cdf(n, k):
    """P(Binomial(n, 1/2) <= k)."""
    return sum(math.comb(n, j) for j in range(k + 1)) / 2.0 ** n


class MedianInterval(unittest.TestCase):
    def test_too_few_rounds_have_none(self):
        for n in range(0, 6):
            self.assertIsNone(t.median_ci(list(range(n))), n)

    def test_known_order_statistics(self):
        self.assertEqual(t.median_ci([float(x) for x in range(1, 9)]), (1.0, 8.0))
        self.assertEqual(t.median_ci([float(x) for x in range(1, 41)]), (14.0, 27.0))

    def test_k_is_the_largest_with_at_most_2_5_percent_in_each_tail(self):
        for n in range(6, 121):
            lo, hi = t.median_ci(list(range(1, n + 1)))
            k = lo
            self.assertEqual(hi, n + 1 - k, n)
            self.assertLessEqual(binom_cdf(n, k - 1), 0.025, n)
            self.assertGreater(binom_cdf(n, k), 0.025, n)

    def test_order_of_the_input_does_not_matter(self):
        xs = [1.3, 0.9, 1.1, 1.0, 1.2, 0.8, 1.05, 0.95]
        self.assertEqual(t.median_ci(xs), (0.8, 1.3))


class Verdict(unittest.TestCase):
    def test_pass_fail_unresolved(self):
        self.assertTrue(t.ratio_verdict([1.0] * 8, 1.05)[0])
        ok, words = t.ratio_verdict([1.1] * 8, 1.05)
        self.assertFalse(ok)
        self.assertTrue(words.startswith("FAIL"), words)
        ok, words = t.ratio_verdict([1.0, 1.1] * 4, 1.05)
        self.assertFalse(ok)
        self.assertTrue(words.startswith("UNRESOLVED"), words)

    def test_a_median_below_the_target_is_not_enough(self):
        # Median 1.0, but one round in eight at 1.2: the interval holds 1.05.
        ok, words = t.ratio_verdict([1.0] * 7 + [1.2], 1.05)
        self.assertFalse(ok)
        self.assertIn("UNRESOLVED", words)

    def test_too_few_rounds_say_so(self):
        ok, words = t.ratio_verdict([1.0, 1.0, 1.0], 1.05)
        self.assertTrue(ok)
        self.assertIn("too few rounds", words)


class Tools(unittest.TestCase):
    def test_subsets_put_every_tool_first_about_equally_often(self):
        for tools in (("U", "B"), ("U", "P", "B"), ("U", "P", "B", "C"), ("U", "B", "D")):
            firsts = [t.order_of(i, tools)[0] for i in range(1, 9)]
            counts = [firsts.count(tool) for tool in tools]
            self.assertLessEqual(max(counts) - min(counts), 1, (tools, firsts))
            for i in range(1, 9):
                self.assertEqual(sorted(t.order_of(i, tools)), sorted(tools))

    def test_u_and_b_alternate_evenly(self):
        self.assertEqual(["".join(t.order_of(i, ("U", "B"))) for i in range(1, 9)],
                         ["UB", "BU", "BU", "UB", "BU", "UB", "UB", "BU"])

    def test_parse_tools(self):
        self.assertEqual(t.parse_tools("UB"), ("U", "B"))
        self.assertEqual(t.parse_tools("bu"), ("U", "B"))
        self.assertEqual(t.parse_tools("UPBC"), ("U", "P", "B", "C"))
        self.assertEqual(t.parse_tools("dbu"), ("U", "B", "D"))
        for bad in ("", "U", "PB", "UBB", "UX", "UB C", "UBCD", "UD", "UPD"):
            with self.assertRaises(argparse.ArgumentTypeError, msg=bad):
                t.parse_tools(bad)

    def test_without_tools_the_four_run_and_d_is_only_on_request(self):
        args = t.parser().parse_args([])
        self.assertEqual(args.tools, ("U", "P", "B", "C"))
        self.assertEqual(args.d_diag, "")
        args = t.parser().parse_args(["--tools", "UBD", "--d-diag", "warm-on"])
        self.assertEqual((args.tools, args.d_diag), (("U", "B", "D"), "warm-on"))

    def test_a_misspelt_d_diag_is_refused(self):
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            t.parser().parse_args(["--tools", "UBD", "--d-diag", "emtpy"])
        for d in ("empty", "detached", "no-waking-exit", "deferred-off"):
            self.assertEqual(t.parser().parse_args(["--tools", "UBD", "--d-diag", d]).d_diag, d)

    def test_d_runs_in_cs_place_and_before_b_as_often_as_after(self):
        orders = ["".join(t.order_of(i, ("U", "B", "D"))) for i in range(1, 9)]
        self.assertEqual(orders, ["UBD", "DBU", "BDU", "UDB", "BDU", "UDB", "DUB", "BUD"])
        d_first = sum(1 for o in orders if o.index("D") < o.index("B"))
        self.assertEqual(d_first, 4)


class Against(unittest.TestCase):
    def test_the_way_is_named_only_when_the_interval_leaves_one_out(self):
        keys = (("p50_ns", "p50"),)

        def rounds(d_over_b):
            return [(i, "UBD", {"B": {"p50_ns": 100.0}, "D": {"p50_ns": 100.0 * r}})
                    for i, r in enumerate(d_over_b, 1)]

        def line(xs):
            return t.against(rounds(xs), keys, "D", "B", "D (LATSCOPE_BPF_DIAG=warm-on)")
        self.assertIn("D higher", line([1.1] * 10))
        self.assertIn("D lower", line([0.9] * 10))
        mixed = line([0.9, 1.1] * 5)
        self.assertIn("no difference resolved", mixed)
        self.assertIn("LATSCOPE_BPF_DIAG=warm-on", mixed)
        self.assertIn("D/B", mixed)
        self.assertIn("too few rounds", line([1.1] * 3))

    def test_s_runs_in_bs_place_against_p(self):
        orders = ["".join(t.order_of(i, ("U", "P", "S"))) for i in range(1, 9)]
        self.assertTrue(all(sorted(o) == ["P", "S", "U"] for o in orders), orders)
        s_first = sum(1 for o in orders if o.index("S") < o.index("P"))
        self.assertEqual(s_first, 4)
        self.assertEqual(t.parse_tools("UPS"), ("U", "P", "S"))
        for bad in ("UBS", "US", "UPBS"):
            with self.assertRaises(Exception):
                t.parse_tools(bad)


class Spread(unittest.TestCase):
    def test_the_interval_and_the_range_are_both_named_and_differ(self):
        xs = [float(x) for x in range(1, 17)]
        xs[0] = 0.5  # a straying round moves the range, not the interval
        words = t.spread(xs)
        self.assertIn("95 % interval 4.000-13.000", words)
        self.assertIn("range 0.500-16.000", words)

    def test_too_few_rounds_keep_the_range(self):
        words = t.spread([1.0, 2.0, 3.0])
        self.assertIn("too few rounds for a 95 % interval", words)
        self.assertIn("range 1.000-3.000", words)


if __name__ == "__main__":
    unittest.main()
