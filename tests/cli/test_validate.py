#!/usr/bin/env python3
"""ctest cli_validate: `ncsde validate` on a small configuration (NCSDE=<path to ncsde> python3
test_validate.py).

The JSON report has its rows (4 widths… here 2, the noise floor and the two wrong variants of
attention), every KS p-value is a probability, the same seed gives the same rows with 1 and 2
threads, the markdown table is printed, the plot files are written, and bad flags fail with exit
code 2 naming the flag and the value.
"""

import json

from cli_support import CliTestCase, is_number, main, plotting_available

PLOTS = ("rho_density", "ks_vs_n", "sample_paths", "stopped_fraction", "smooth_gaps")
SMALL = ["--model", "attention", "--n", "8,16", "--networks", "400", "--paths", "400", "--dt",
         "0.0078125"]
EXIT_CODE = {"passed": 0, "failed": 1, "lacks power": 3}


class ValidateCli(CliTestCase):
    def test_report(self):
        report = self.run_json("validate", *SMALL, "--format", "json", "--threads", "2")
        rows = report["rows"]
        self.assertEqual(len(rows), 5,
                         "expected 5 rows (n=8, n=16, noise floor, vpv, no-attention)")
        for row in rows:
            comparisons = row["comparisons"]
            # KS of 3 correlations + 3 diagonals, the means of the same 6 (smooth statistics),
            # stopped fraction + stopped tail + unstopped tail = 15 for m = 3.
            self.assertEqual(len(comparisons), 15,
                             f"row '{row['source']}': expected 15 comparisons")
            for j, c in enumerate(comparisons):
                p = c["p_value"]
                self.assertTrue(is_number(p) and 0 <= p <= 1,
                                f"row '{row['source']}' comparison {j}: p-value {p!r} is not in "
                                f"[0, 1]")
        self.assertEqual(rows[3]["source"], "wrong SDE: vpv", "row 3 should be the vpv variant")
        self.assertEqual([c["statistic"] for c in rows[0]["comparisons"][6:12]],
                         ["E rho12", "E rho13", "E rho23", "E V11∧K", "E V22∧K", "E V33∧K"])
        for row in rows:
            for c in row["comparisons"][6:12]:
                # A mean of ρ lies in [−1, 1], of min(V, K) in [0, K = 5].
                self.assertTrue(-1 <= c["value"] <= 5 and c["stderr"] > 0,
                                f"row '{row['source']}' {c['statistic']}: {c}")

        # The verdict is the test at the widest n; beside it, the gaps extrapolated to n → ∞ (one
        # row per SDE: right, vpv, no-attention; one intercept per smooth statistic). Two widths
        # fit no rate, so the extrapolation uses the default β = 1/2.
        self.assertEqual(report["right_accepted"], rows[1]["bonferroni_p"] >= 0.01)
        self.assertEqual(report["limit_exponent"], 0.5)
        self.assertEqual(report["limit_exponent_source"], "default")
        limit = report["limit"]
        self.assertEqual([r["source"] for r in limit],
                         ["right SDE", "wrong SDE: vpv", "wrong SDE: no-attention"])
        for r in limit:
            self.assertEqual(len(r["gaps"]), 6)
            self.assertTrue(0 <= r["bonferroni_p"] <= 1, f"limit row {r['source']}: {r}")
            for g in r["gaps"]:
                # The gaps it extrapolates, one per width.
                self.assertEqual(len(g["by_width"]), 2)
                self.assertEqual(len(g["by_width_stderr"]), 2)
        # The right SDE's gaps are its rows' smooth-statistic gaps at each width.
        for i in range(2):
            c = rows[i]["comparisons"][6]
            self.assertAlmostEqual(limit[0]["gaps"][0]["by_width"][i], c["value"] - c["reference"],
                                   places=15)
        # --check-limit: exit 3 when a wrong SDE's intercepts are not rejected (the extrapolation
        # lacks power), else 1 exactly when the right SDE's are.
        r = self.run_program(["validate", *SMALL, "--format", "json", "--threads", "2",
                              "--check-limit"])
        if any(x["bonferroni_p"] >= 0.01 for x in limit[1:]):
            expected = "lacks power"
        else:
            expected = "passed" if limit[0]["bonferroni_p"] >= 0.01 else "failed"
        self.assertEqual(report["limit_check"], expected)
        self.assertEqual(r.returncode, EXIT_CODE[expected], r.stderr)
        self.assertEqual(json.loads(r.stdout)["limit"], limit)
        # Two widths: too few for a rate (the fit needs three).
        self.assertFalse(report["smooth_fit"])

        # Same seed, same numbers, whatever the thread count (compared as JSON text: a NaN equals
        # itself there).
        one_thread = self.run_json("validate", *SMALL, "--format", "json", "--threads", "1")
        self.assertEqual(json.dumps(rows, sort_keys=True),
                         json.dumps(one_thread["rows"], sort_keys=True),
                         "validate rows differ between --threads 2 and --threads 1")

    def test_a_check_without_power_says_so(self):
        # Attention at τ₀ = 1 with 400 samples: the wrong SDEs differ from the right one by less
        # than the noise (docs/maths.md §9.5), so neither is rejected and --check exits 3 (lacks
        # power) instead of passing or failing; the report says what a rejection would need.
        r = self.run_program(["validate", *SMALL, "--format", "json", "--threads", "2",
                              "--check"])
        self.assertEqual(r.returncode, 3, r.stderr)
        report = json.loads(r.stdout)
        self.assertEqual(report["check"], "lacks power")
        self.assertFalse(report["wrong_rejected"])
        wrong = [row for row in report["rows"] if row["source"].startswith("wrong SDE")]
        not_rejected = [row["source"] for row in wrong if row["bonferroni_p"] >= 0.01]
        self.assertEqual([s["source"] for s in report["power_shortfall"]], not_rejected)
        for s in report["power_shortfall"]:
            # A row not rejected has every z below the Bonferroni threshold, so the factor on the
            # samples that would make its largest gap reach it exceeds 1.
            self.assertLess(s["z"], s["z_needed"])
            self.assertAlmostEqual(s["sample_factor"], (s["z_needed"] / s["z"]) ** 2, places=12)
        table = self.run_program(["validate", *SMALL, "--threads", "2", "--check"])
        self.assertEqual(table.returncode, 3)
        self.assertIn("(--check): LACKS POWER", table.stdout)
        self.assertIn("rejecting it needs at least about", table.stdout)
        # Without wrong SDEs the power is not measured and the right SDE's result decides.
        r = self.run_program(["validate", *SMALL, "--format", "json", "--threads", "2",
                              "--variants", "none", "--check"])
        report = json.loads(r.stdout)
        self.assertEqual(report["check"], "passed" if report["right_accepted"] else "failed")
        self.assertEqual(r.returncode, EXIT_CODE[report["check"]], r.stderr)
        self.assertEqual(report["power_shortfall"], [])

    def test_default_study(self):
        # Without --model: the default study, attention at γ² = 1, τ₀ = ½ (a parameter given
        # replaces its value); a named model runs at its own defaults.
        size = ["--n", "8,16", "--networks", "50", "--paths", "50", "--dt", "0.0078125",
                "--variants", "none", "--format", "json"]
        study = self.run_json("validate", *size)
        self.assertEqual((study["model"], study["params"]["gamma2"], study["params"]["tau0"]),
                         ("attention", 1.0, 0.5))
        changed = self.run_json("validate", *size, "--tau0", "0.75")
        self.assertEqual((changed["params"]["gamma2"], changed["params"]["tau0"]), (1.0, 0.75))
        named = self.run_json("validate", *size, "--model", "attention")
        self.assertEqual((named["params"]["gamma2"], named["params"]["tau0"]), (0.5, 1.0))
        help_text = self.run_ok("validate", "--help")
        for flag in ("--networks", "--paths"):
            self.assertRegex(help_text, flag + r" [^\n]*=100000\b")

    def test_table_and_plots(self):
        out = self.scratch_dir()
        table = self.run_ok("validate", *SMALL, "--plots", out)
        for needle in ("| network n=16 | SDE, grid 1/16 |", "Bonferroni p", "Quantiles of ρ¹²",
                       "Plots and data in", "Smooth statistics", "Extrapolated to n → ∞"):
            self.assertIn(needle, table, f"the table lacks '{needle}'")
        for f in ("validation.md", "validation.json", "values.csv", "paths.csv"):
            self.assertTrue((out / f).exists(), f"validate --plots did not write {f}")
        for figure in PLOTS:
            for fmt in ("png", "pdf", "svg"):
                f = out / f"{figure}.{fmt}"
                self.assertTrue(f.exists() and f.stat().st_size > 0,
                                f"validate --plots did not write {f.name}")

    def test_plots_of_a_model_without_attention_parameters(self):
        # shaped-tanh has neither gamma2 nor tau0: the figures name its own parameters.
        if not plotting_available():
            self.skipTest("/usr/bin/python3 cannot import matplotlib")
        out = self.scratch_dir()
        self.run_ok("validate", "--model", "shaped-tanh", "--n", "8,16", "--networks", "200",
                    "--paths", "200", "--dt", "0.0078125", "--plots", out)
        report = json.loads((out / "validation.json").read_text())
        self.assertNotIn("gamma2", report["params"])
        for figure in PLOTS:
            self.assertTrue((out / f"{figure}.png").exists(),
                            f"validate --plots on shaped-tanh did not draw {figure}")

    def test_plots_of_every_registry_model_with_networks(self):
        # Every model of the registry with a network sampler (read from `ncsde models`), small:
        # the report and every figure in every format.
        if not plotting_available():
            self.skipTest("/usr/bin/python3 cannot import matplotlib")
        listed = self.run_json("models", "--format", "json")
        models = [m["name"] for m in listed if m["samplers"]]
        self.assertGreaterEqual(len(models), 5)
        for model in models:
            with self.subTest(model=model):
                out = self.scratch_dir()
                self.run_ok("validate", "--model", model, "--n", "8,16", "--networks", "100",
                            "--paths", "100", "--dt", "0.0078125", "--plots", out)
                self.assertEqual(json.loads((out / "validation.json").read_text())["model"],
                                 model)
                for figure in PLOTS:
                    for suffix in ("png", "pdf", "svg"):
                        self.assertGreater((out / f"{figure}.{suffix}").stat().st_size, 0,
                                           f"{model}: {figure}.{suffix}")

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
            (["limit_exponent must be 'fitted' or a number in (0, 4] (got 0) "
              "(flag --limit-exponent)"], ["--limit-exponent", "0"]),
            (["limit_exponent must be 'fitted' or a number in (0, 4] (got fast)"],
             ["--limit-exponent", "fast"]),
            (["check_limit must be two widths or more (the extrapolation to n → ∞ needs them) "
              "(got 1 width) (flag --check-limit)"], ["--check-limit", "--n", "32"]),
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
