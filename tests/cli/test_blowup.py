#!/usr/bin/env python3
"""ctest cli_blowup: blow-up laws and adaptive steps on the command line
(NCSDE=<path to ncsde> python3 test_blowup.py).

 1. `ncsde blowup --format json` reports blown_up_fraction with its binomial standard error, the curve
    P(tau <= t) (non-decreasing, ending at blown_up_fraction, inside its Wilson band) and the explosion-time
    quantiles, with the same bits for 1 and 2 threads;
 2. the table format and --plots (when matplotlib is there);
 3. `ncsde simulate --step-control increment` reports the controller; fixed steps do not;
 4. bad step-control values fail with exit code 2 and a message naming the flag;
 5. work limits: --tolerance and --max-depth are checked with fixed steps too, and a tolerance
    no run could meet (1e-300, and 1e-11 where the drift bound at V0 alone asks for more than
    10^9 steps per path) is refused before any path runs, in blowup, simulate and convergence.
"""

import math

from cli_support import CliTestCase, main, plotting_available

SMALL = ("blowup", "--model", "attention", "--gamma2", "1", "--tau0", "0.5", "--T", "1",
         "--paths", "300", "--seed", "3", "--tolerance", "0.1")


class BlowupCli(CliTestCase):
    def test_json_report(self):
        r = self.run_json(*SMALL, "--format", "json", "--threads", "1")
        self.assertEqual(r["paths"], 300)
        self.assertEqual(r["step_control"], "increment")
        self.assertGreater(r["blown_up"], 0, "strong attention: some of 300 paths blow up by T = 1")
        p = r["blown_up_fraction"]
        self.assertEqual(p, r["blown_up"] / 300)
        self.assert_near("blown_up_fraction_stderr", r["blown_up_fraction_stderr"], math.sqrt(p * (1 - p) / 300), 1e-12)
        curve = r["curve"]
        self.assertEqual(len(curve), 50)
        self.assertEqual(curve[-1]["t"], 1.0)
        self.assertEqual(curve[-1]["p"], p)
        for a, b in zip(curve, curve[1:]):
            self.assertLessEqual(a["p"], b["p"])
        for c in curve:
            self.assertLessEqual(c["wilson_lower"], c["p"])
            self.assertGreaterEqual(c["wilson_upper"], c["p"])
        q = r["explosion_time_quantiles"]
        self.assertLessEqual(q["q0.25"], q["q0.5"])
        self.assertLessEqual(q["q0.5"], q["q0.75"])
        self.assertLessEqual(q["q0.75"], 1.0)
        self.assertGreater(r["refinements"], 0, "adaptive steps are halved near blow-up")
        again = self.run_json(*SMALL, "--format", "json", "--threads", "2")
        for key in ("seconds", "threads"):
            r.pop(key)
            again.pop(key)
        self.assertEqual(r, again, "1 and 2 threads give different reports")

    def test_table_and_plots(self):
        table = self.run_ok(*SMALL, "--grid", "10")
        self.assertIn("P(tau <= T) =", table)
        self.assertIn("95% Wilson", table)
        if plotting_available():
            d = self.scratch_dir()
            self.run_ok(*SMALL, "--plots", str(d))
            self.assertTrue((d / "blowup.csv").is_file())
            self.assertTrue((d / "blowup.png").stat().st_size > 1000)

    def test_simulate_step_control(self):
        common = ("simulate", "--model", "transformer", "--V0", "1,0.5;0.5,1", "--T", "0.5",
                  "--paths", "64", "--dt", "0.01", "--format", "json")
        adaptive = self.run_json(*common, "--step-control", "doubling", "--tolerance", "0.01")
        self.assertEqual(adaptive["step_control"]["control"], "doubling")
        self.assertGreaterEqual(adaptive["step_control"]["steps"], 64 * 50 * 2)
        fixed = self.run_json(*common)
        self.assertNotIn("step_control", fixed)

    def test_bad_values(self):
        self.expect_usage_error(["--tolerance", "(got 0)"], *SMALL[:-1], "0")
        self.expect_usage_error(["--max-depth"], *SMALL, "--max-depth", "51")
        self.expect_usage_error(["--step-control"], *SMALL, "--step-control", "adaptive")
        self.expect_usage_error(["--grid"], *SMALL, "--grid", "0")

    def test_work_limits(self):
        # A refusal, not a timing: each of these ran until killed before (issue 31, item 3).
        fixed = ("simulate", "--model", "transformer", "--V0", "1,0.5;0.5,1", "--T", "0.1",
                 "--paths", "4", "--threads", "1")
        self.expect_usage_error(["--tolerance", "(got -5)"], *fixed, "--tolerance", "-5")
        self.expect_usage_error(["--max-depth", "(got 1000000)"], *fixed, "--max-depth",
                                "1000000")
        self.expect_usage_error(["--tolerance", "(got 1e-300)"], *SMALL[:-1], "1e-300")
        self.expect_usage_error(["--tolerance", "(got 1e-300)"], *fixed, "--step-control",
                                "doubling", "--tolerance", "1e-300")
        self.expect_usage_error(["tolerance = 1e-11 is unattainable", "max_path_steps"],
                                *SMALL[:-1], "1e-11")
        self.expect_usage_error(["--tolerance", "(got 1e-300)"], "convergence", "--problem",
                                "gbm", "--step-control", "doubling", "--tolerance", "1e-300")


if __name__ == "__main__":
    main()
