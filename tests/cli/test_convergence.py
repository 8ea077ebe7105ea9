#!/usr/bin/env python3
"""ctest cli_convergence: `ncsde convergence` (NCSDE=<path to ncsde> python3 test_convergence.py).

 1. a small gbm run with --format json parses and every object has the documented fields, with as
    many errors as step sizes;
 2. bad command lines fail with exit code 2 and a message naming the flag and the value;
 3. a --plots directory that cannot be created fails before the (minutes-long) run;
 4. --step-control increment|doubling runs the adaptive study: its JSON keys, and its usage errors
    (a problem without pathwise solution, a tolerance outside [1e-12, 1]).
"""

import unittest

from cli_support import CliTestCase, is_number, main, plotting_available

ADAPTIVE_FIELDS = ("problem", "scheme", "step_control", "kind", "tolerances", "cost", "cost_stderr",
                   "errors", "errors_stderr", "order", "stderr", "ci_low", "ci_high",
                   "order_tolerance", "order_tolerance_stderr", "fixed_steps", "fixed_errors",
                   "fixed_errors_stderr", "fixed_order", "fixed_stderr", "fixed_ci_low",
                   "fixed_ci_high", "fixed_at_cost", "ratio", "extrapolated", "expected", "paths",
                   "seed", "grid_dt", "max_depth", "reference")

FIELDS = ("problem", "scheme", "kind", "order", "stderr", "ci_low", "ci_high", "expected", "pass",
          "paths", "seed", "dts", "errors", "errors_stderr", "cone_exits", "reference")


class ConvergenceCli(CliTestCase):
    def test_json_series(self):
        out = self.run_json("convergence", "--problem", "gbm", "--paths", "200", "--format", "json")
        self.assertIsInstance(out, list, "the output is not a JSON array")
        # gbm: em, milstein, milstein-commutative, predictor-corrector, each strong and weak.
        self.assertEqual(len(out), 8, "expected 8 series for gbm")
        for i, series in enumerate(out):
            for field in FIELDS:
                self.assertIn(field, series, f"series {i} has no field '{field}'")
            ok = (series["problem"] == "gbm" and series["kind"] in ("strong", "weak")
                  and series["paths"] == 200 and is_number(series["order"])
                  and len(series["errors"]) == len(series["dts"]) and len(series["errors"]) >= 5)
            self.assertTrue(ok, f"series {i} is malformed: problem={series['problem']} "
                                f"kind={series['kind']} paths={series['paths']} "
                                f"order={series['order']!r}, {len(series['errors'])} errors for "
                                f"{len(series['dts'])} step sizes")

    def test_registry_schemes(self):
        # Every registry scheme is a --scheme choice and is listed by --list-schemes; the
        # predictor-corrector has a weak series on a problem without a pathwise solution too (it
        # couples to EM's martingale control).
        pc = self.run_json("convergence", "--problem", "noncommutative", "--scheme",
                           "predictor-corrector", "--paths", "50", "--levels", "3", "--format",
                           "json")
        self.assertEqual(len(pc), 2, f"--scheme predictor-corrector: expected 2 series, got {pc}")
        self.assertEqual(pc[0]["scheme"], "predictor-corrector")
        self.assertEqual(pc[1]["kind"], "weak")
        listing = self.run_ok("convergence", "--list-schemes")
        for name in ("em", "milstein", "milstein-commutative", "predictor-corrector"):
            self.assertIn("\n" + name + " ", "\n" + listing,
                          f"--list-schemes does not list {name}:\n{listing}")

    def test_bad_command_lines(self):
        cases = [
            ("not expected: --bogus", ["convergence", "--bogus"]),
            ("--paths: Value 0 not in range", ["convergence", "--paths", "0"]),
            ("--threads: Value -1 not in range", ["convergence", "--threads", "-1"]),
            ("--levels: Value 2 not in range", ["convergence", "--levels", "2"]),
            ("--scheme: rk4 not in", ["convergence", "--scheme", "rk4"]),
            ("--problem: nope not in", ["convergence", "--problem", "nope"]),
            ("--format: xml not in", ["convergence", "--format", "xml"]),
            ("--seed: must be a non-negative integer (got '-5')", ["convergence", "--seed", "-5"]),
            ("unknown command 'frobnicate'", ["frobnicate"]),
            ("A subcommand is required", []),
            ("nothing to measure",
             ["convergence", "--problem", "noncommutative", "--scheme", "milstein", "--kind",
              "weak"]),
        ]
        for text, args in cases:
            with self.subTest(args=args):
                self.expect_usage_error(text, *args)

    def test_integer_flags(self):
        # Integer flags are decimal integers (1e9 included): no clamping past 2^64 − 1, no octal or
        # hex.
        cases = [
            ("--seed: must be at most 2^64 - 1 = 18446744073709551615 (got '18446744073709551616')",
             ["--seed", "18446744073709551616"]),
            ("--seed: must be a non-negative integer (got '-1')", ["--seed", "-1"]),
            ("--threads: Value 1000000000 not in range 0 to 4096", ["--threads", "1e9"]),
            ("--paths: must be a decimal integer such as 1000 or 1e6 (got '0x10')",
             ["--paths", "0x10"]),
            ("--levels: must be a decimal integer such as 1000 or 1e6 (got '4.5')",
             ["--levels", "4.5"]),
        ]
        for text, args in cases:
            with self.subTest(args=args):
                self.expect_usage_error(text, "convergence", *args)

    def test_adaptive_study(self):
        out = self.run_json("convergence", "--problem", "gbm", "--scheme", "em", "--step-control",
                            "doubling", "--tolerance", "0.01", "--levels", "3", "--paths", "100",
                            "--format", "json")
        self.assertEqual([(s["kind"], s["step_control"]) for s in out],
                         [("strong", "doubling"), ("weak", "doubling")])
        for s in out:
            for field in ADAPTIVE_FIELDS:
                self.assertIn(field, s, f"{s['kind']} series has no field '{field}'")
            self.assertEqual(s["tolerances"], [0.01, 0.005, 0.0025])
            self.assertEqual(s["paths"], 100)
            self.assertEqual(len(s["cost"]), 3)
            self.assertEqual(len(s["ratio"]), 3)
            self.assertEqual(len(s["fixed_errors"]), len(s["fixed_steps"]))
            self.assertTrue(is_number(s["order"]) and is_number(s["fixed_order"]))
            self.assertTrue(s["ci_low"] <= s["order"] <= s["ci_high"])
            # A tighter tolerance never takes fewer steps on average here (the drift bound alone
            # halves the step with the tolerance).
            self.assertLess(s["cost"][0], s["cost"][1])
            self.assertLess(s["cost"][1], s["cost"][2])
        table = self.run_ok("convergence", "--problem", "gbm", "--scheme", "em", "--step-control",
                            "increment", "--levels", "3", "--paths", "50")
        self.assertIn("order(cost)", table)
        self.assertIn("increment", table)

    def test_adaptive_usage_errors(self):
        cases = [
            ("--problem wishart has no pathwise exact solution",
             ["--problem", "wishart", "--step-control", "increment"]),
            ("--tolerance must be in [1e-12, 1] (below 1e-12 the step controllers would "
             "measure round-off) (got 1.5)",
             ["--problem", "gbm", "--step-control", "increment", "--tolerance", "1.5"]),
            ("--plots belongs to the fixed-step study",
             ["--problem", "gbm", "--step-control", "doubling", "--plots", "somewhere"]),
            ("--step-control: adaptive not in", ["--step-control", "adaptive"]),
        ]
        for text, args in cases:
            with self.subTest(args=args):
                self.expect_usage_error(text, "convergence", *args)

    @unittest.skipUnless(plotting_available(), "python3 with matplotlib not found")
    def test_uncreatable_plots_directory_fails_at_once(self):
        # Not after the default study (minutes): within 10 s. Under a regular file nothing can be
        # created.
        file = self.scratch_dir() / "convergence_cli_file"
        file.write_text("")
        self.expect_usage_error(
            f"ncsde convergence: --plots: cannot create {file}/plots: Not a directory",
            "convergence", "--plots", f"{file}/plots", timeout=10)


if __name__ == "__main__":
    main()
