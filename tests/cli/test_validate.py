#!/usr/bin/env python3
"""ctest cli_validate: `ncsde validate` on a small configuration (NCSDE=<path to ncsde> python3
test_validate.py).

The JSON report has its rows (4 widths… here 2, the noise floor and the two wrong variants of
attention), every KS p-value is a probability, the same seed gives the same rows with 1 and 2
threads, the markdown table is printed, the plot files are written, and bad flags fail with exit
code 2 naming the flag and the value.
"""

import json

from cli_support import CliTestCase, is_number, main

SMALL = ["--model", "attention", "--n", "8,16", "--networks", "400", "--paths", "400", "--dt",
         "0.0078125"]


class ValidateCli(CliTestCase):
    def test_report(self):
        report = self.run_json("validate", *SMALL, "--format", "json", "--threads", "2")
        rows = report["rows"]
        self.assertEqual(len(rows), 5,
                         "expected 5 rows (n=8, n=16, noise floor, vpv, no-attention)")
        for row in rows:
            comparisons = row["comparisons"]
            # 3 correlations + 3 diagonals + stopped fraction + stopped tail + unstopped tail = 9
            # for m = 3.
            self.assertEqual(len(comparisons), 9, f"row '{row['source']}': expected 9 comparisons")
            for j, c in enumerate(comparisons):
                p = c["p_value"]
                self.assertTrue(is_number(p) and 0 <= p <= 1,
                                f"row '{row['source']}' comparison {j}: p-value {p!r} is not in "
                                f"[0, 1]")
        self.assertEqual(rows[3]["source"], "wrong SDE: vpv", "row 3 should be the vpv variant")

        # Same seed, same numbers, whatever the thread count (compared as JSON text: a NaN equals
        # itself there).
        one_thread = self.run_json("validate", *SMALL, "--format", "json", "--threads", "1")
        self.assertEqual(json.dumps(rows, sort_keys=True),
                         json.dumps(one_thread["rows"], sort_keys=True),
                         "validate rows differ between --threads 2 and --threads 1")

    def test_table_and_plots(self):
        out = self.scratch_dir()
        table = self.run_ok("validate", *SMALL, "--plots", out)
        for needle in ("| network n=16 | SDE, grid 1/16 |", "Bonferroni p", "Quantiles of ρ¹²",
                       "Plots and data in"):
            self.assertIn(needle, table, f"the table lacks '{needle}'")
        for f in ("rho_density.png", "ks_vs_n.png", "sample_paths.png", "stopped_fraction.png",
                  "validation.md", "validation.json", "values.csv", "paths.csv"):
            self.assertTrue((out / f).exists(), f"validate --plots did not write {f}")

    def test_bad_input(self):
        # Exit 2, and the rule, the value and the flag named as the other commands name them.
        cases = [
            (["dt must be such that 1/(n·dt) is an integer for n = 48", "every network grid k/n",
              "(got 0.0078125) (flag --dt)"],
             ["--n", "48", "--dt", "0.0078125", "--paths", "10", "--networks", "10"]),
            # The default widths 32 … 256 with dt = 1/16: the rule and the first width that breaks
            # it.
            (["1/(n·dt) must be an integer for every width n (1/(32·dt) = 0.5) (got 0.0625) "
              "(flag --dt)"], ["--dt", "0.0625"]),
            (["T must be such that T·n is an integer depth for n = 32 (got 0.7) (flag --T)"],
             ["--T", "0.7"]),
            (["n must be > 64 (widths strictly increasing) (got 32) (flag --n)"],
             ["--n", "64,32"]),
            (["n must be >= 2 (each width) (got 1) (flag --n)"], ["--n", "1,2"]),
            (["--n: must be a decimal integer such as 1000 or 1e6 (got '1.5')"],
             ["--n", "8,1.5"]),
            (["--variants must be one of correct, vpv"], ["--variants", "vpvpv"]),
            (["variant must be 'correct' for a model without attention", "(flag --variants)"],
             ["--model", "mlp", "--variants", "vpv"]),
            (["heads must be a divisor of n = 8 (got 3) (flag --heads)"],
             ["--model", "attention", "--heads", "3", "--n", "8,16"]),
            (["stop_level must be > 0 and finite (got -1) (flag --stop-level)"],
             ["--stop-level", "-1"]),
            (["tail_level must be > 0 and finite (got 0) (flag --tail-level)"],
             ["--tail-level", "0"]),
            (["alpha must be in (0, 1) (got 2) (flag --alpha)"], ["--alpha", "2"]),
            (["V0 must be at least 2x2 (ρ needs two tokens) (got a 1x1 matrix) (flag --V0)"],
             ["--V0", "1"]),
            (["--V0: malformed matrix '1,x'"], ["--V0", "1,x"]),
            (["--paths 1000000000: 4.1e+12 steps in all", "× 4 SDE runs), more than the limit of "
              "1e+12"], ["--paths", "1e9"]),
        ]
        for texts, args in cases:
            with self.subTest(args=args):
                self.expect_usage_error(texts, "validate", *args)

    def test_sample_paths_off_the_64_point_grid(self):
        # dt = 1/16 on the widths 8 and 16 (T/dt = 16 steps, not a multiple of the 64 sample-path
        # times): the sample paths are saved at the nearest steps, not refused as off-grid save
        # times.
        out = self.scratch_dir()
        self.run_ok("validate", "--model", "attention", "--n", "8,16", "--networks", "50",
                    "--paths", "50", "--dt", "0.0625", "--format", "json", "--plots", out)
        lines = [ln for ln in (out / "paths.csv").read_text().splitlines()
                 if ln.startswith("sde,0,")]
        self.assertEqual(len(lines), 17, "validate --dt 0.0625: expected path 0 at the 17 grid "
                                         "times 0, 1/16, …, 1")

    def test_refused_run_keeps_earlier_plots(self):
        # An earlier --plots directory keeps its files when a run is refused.
        out = self.scratch_dir()
        (out / "validation.md").write_text("earlier report\n")
        self.expect_usage_error("stop_level", "validate", "--stop-level", "-1", "--plots", out)
        self.expect_unchanged(out / "validation.md", "earlier report\n")
        self.expect_no_temporaries(out)


if __name__ == "__main__":
    main()
