#!/usr/bin/env python3
"""ctest cli_networks: `ncsde sample-network` and `ncsde rank-collapse` (NCSDE=<path to ncsde>
python3 test_networks.py).

 1. sample-network writes the CSV layout of ncsde simulate (header, one row per network, m = 2 and
    m = 3, reduced and literal samplers), t_stop = d/n for completed networks;
 2. the same seed gives a byte-identical CSV for 1 and 2 threads, another seed a different one;
 3. with a stop level, a network is `stopped` exactly when its recorded V has max_a V^aa > K, the
    JSON summary counts them, and some (not all) networks stop;
 4. bad input fails with exit code 2 and a message naming the flag and the value;
 5. rank-collapse on a small configuration: exit 0, one row per depth, both forms start at the mean
    correlation of V3 (0.5), and at the last depth unshaped attention has collapsed (mean ρ > 0.99)
    and lies above shaped attention; the CSV has the same rows; with python3 + matplotlib, --plots
    draws the PNG;
 6. outputs are checked before the run and replaced only by a successful one: a bad flag leaves an
    earlier --out unchanged, an unwritable --out or --plots fails at once (exit code 2);
 7. runs beyond the limits of validation/limits.hpp (network layers, work, memory) are refused
    before they start, naming the flag, the value and the estimate.
"""

import re
import unittest

from cli_support import CliTestCase, main, plotting_available

# docs/maths.md §9.1 reference state V3 (m = 3).
V3 = ("1,0.6324555320336759,0.25099800796022265;0.6324555320336759,1.6,0.7408103670980852;"
      "0.25099800796022265,0.7408103670980852,0.7")
V2 = "1,0.5;0.5,1"
HEADER_M2 = "path,status,t_stop,V11,V12,V22"
HEADER_M3 = "path,status,t_stop,V11,V12,V13,V22,V23,V33"
SN = ["sample-network", "--model", "attention", "--networks", "2"]


class NetworksCli(CliTestCase):
    def setUp(self):
        self.dir = self.scratch_dir()

    def check_csv(self, path, header, rows, fields, t_completed):
        """The header, `rows` data rows numbered 0..rows−1 in order, each with `fields` fields, a
        known status, and t_stop = t_completed (as written) on completed rows."""
        self.assertTrue(path.exists(), f"sample-network --out did not write {path}")
        lines = path.read_text().splitlines()
        self.assertEqual(len(lines), rows + 1, f"{path}: expected a header and {rows} rows")
        self.assertEqual(lines[0], header, f"{path}: unexpected header")
        for i, line in enumerate(lines[1:]):
            row = line.split(",")
            self.assertTrue(len(row) == fields and row[0] == str(i)
                            and row[1] in ("completed", "stopped", "blown_up"),
                            f"{path}: row {i + 1} is not network {i} with {fields} fields and a "
                            f"status: '{line}'")
            if row[1] == "completed":
                self.assertEqual(row[2], t_completed,
                                 f"{path}: completed row {i + 1}: t_stop is not d/n")
        return lines

    # ---- 1. CSV layout: m = 2 reduced, m = 3 literal (transformer: both sublayers) and reduced ----
    def test_csv_layout(self):
        summary = self.run_ok("sample-network", "--model", "attention", "--V0", V2, "--n", "16",
                              "--d", "8", "--networks", "30", "--threads", "2", "--out",
                              self.dir / "m2.csv")
        self.check_csv(self.dir / "m2.csv", HEADER_M2, 30, 6, "0.5")
        for name in ("rho12", "V11", "V22", "completed 30"):
            self.assertIn(name, summary, f"sample-network: the summary does not report '{name}'")
        self.run_ok("sample-network", "--model", "transformer", "--V0", V3, "--n", "16", "--d", "4",
                    "--networks", "12", "--sampler", "literal", "--out", self.dir / "m3_literal.csv")
        self.check_csv(self.dir / "m3_literal.csv", HEADER_M3, 12, 9, "0.25")
        summary = self.run_ok("sample-network", "--model", "transformer", "--V0", V3, "--n", "16",
                              "--d", "4", "--networks", "12", "--sampler", "reduced", "--out",
                              self.dir / "m3_reduced.csv")
        self.check_csv(self.dir / "m3_reduced.csv", HEADER_M3, 12, 9, "0.25")
        for name in ("rho12", "rho13", "rho23", "V33"):
            self.assertIn(f"{name} quantiles", summary,
                          f"sample-network (m = 3): no quantiles of {name}")

    # ---- 2. reproducibility: same seed → same bytes whatever the threads; another seed differs ----
    def test_reproducibility(self):
        common = ["sample-network", "--model", "attention", "--V0", V2, "--n", "16", "--d", "8",
                  "--networks", "30"]
        self.run_ok(*common, "--threads", "2", "--out", self.dir / "m2.csv")
        self.run_ok(*common, "--threads", "1", "--out", self.dir / "m2_one_thread.csv")
        self.run_ok(*common, "--seed", "2", "--out", self.dir / "m2_seed2.csv")
        two_threads = (self.dir / "m2.csv").read_bytes()
        self.assertEqual(two_threads, (self.dir / "m2_one_thread.csv").read_bytes(),
                         "sample-network: seed 1 gives different CSVs with 1 and 2 threads")
        self.assertNotEqual(two_threads, (self.dir / "m2_seed2.csv").read_bytes(),
                            "sample-network: seeds 1 and 2 give the same CSV")

    # ---- 3. stop level K = 1.2: stopped ⟺ max(V11, V22) > K at the recorded V ----
    def test_stop_level(self):
        out = self.dir / "stopped.csv"
        summary = self.run_json("sample-network", "--model", "attention", "--V0", V2, "--n", "16",
                                "--d", "16", "--networks", "40", "--stop-level", "1.2",
                                "--format", "json", "--out", out)
        lines = self.check_csv(out, HEADER_M2, 40, 6, "1")
        self.assertEqual(summary["stop_level"], 1.2,
                         "sample-network --format json: stop_level is not 1.2")
        level = 1.2
        stopped = 0
        for line in lines[1:]:
            row = line.split(",")
            status, v11, v22 = row[1], float(row[3]), float(row[5])
            above = v11 > level or v22 > level
            if status == "stopped":
                stopped += 1
                self.assertTrue(above, f"stop level 1.2: a stopped row has max V^aa <= 1.2: "
                                       f"'{line}'")
            else:
                self.assertFalse(above, f"stop level 1.2: a {status} row has max V^aa > 1.2: "
                                        f"'{line}'")
        self.assertTrue(stopped == summary["stopped"] and stopped > 0 and summary["completed"] > 0,
                        f"stop level 1.2: {stopped} stopped rows, JSON stopped "
                        f"{summary['stopped']} and completed {summary['completed']} (expected "
                        f"equal counts, some of each)")

    # ---- 4. bad input: exit code 2, the flag and the value named ----
    def test_bad_input(self):
        cases = [
            (["--n: Value 1 not in range"], [*SN, "--V0", V2, "--n", "1", "--d", "4"]),
            (["--d: Value 0 not in range"], [*SN, "--V0", V2, "--n", "16", "--d", "0"]),
            (["--nk: Value 0 not in range"], [*SN, "--V0", V2, "--n", "16", "--d", "4", "--nk", "0"]),
            (["--networks: Value 0 not in range"],
             [*SN, "--V0", V2, "--n", "16", "--d", "4", "--networks", "0"]),
            (["n must be >= m = 3", "(got 2) (flag --n)"], [*SN, "--V0", V3, "--n", "2", "--d", "4"]),
            (["heads must be a divisor of n = 16 (got 3) (flag --heads)"],
             [*SN, "--V0", V2, "--n", "16", "--d", "4", "--heads", "3"]),
            (["hidden_ratio", "(got 0.3) (flag --hidden-ratio)"],
             ["sample-network", "--model", "resnet", "--V0", V2, "--n", "16", "--d", "4",
              "--hidden-ratio", "0.3"]),
            # r·n beyond an int is refused (found by tests/fuzz: it used to be converted to an
            # int, undefined behaviour, and run with a garbage hidden width).
            (["hidden_ratio must be such that the hidden width r·n is at most 2147483647",
              "(flag --hidden-ratio)"],
             ["sample-network", "--model", "resnet", "--V0", "1", "--n", "2", "--d", "1",
              "--networks", "1", "--hidden-ratio", "3e9"]),
            (["--V0", "'1,2;3'", "row 2"], [*SN, "--V0", "1,2;3", "--n", "16", "--d", "4"]),
            (["--V0", "'1,0.5;0.2,1'", "not symmetric"],
             [*SN, "--V0", "1,0.5;0.2,1", "--n", "16", "--d", "4"]),
            (["--V0", "'1,2;2,1'", "not positive semidefinite"],
             [*SN, "--V0", "1,2;2,1", "--n", "16", "--d", "4"]),
            (["--sampler: foo not in"],
             [*SN, "--V0", V2, "--n", "16", "--d", "4", "--sampler", "foo"]),
            (["--attention: foo not in"],
             [*SN, "--V0", V2, "--n", "16", "--d", "4", "--attention", "foo"]),
            (["form must be shaped", "(got unshaped) (flag --attention)"],
             ["sample-network", "--model", "mlp", "--V0", V2, "--n", "16", "--d", "4",
              "--attention", "unshaped"]),
            (["stop_level", "(got -1) (flag --stop-level)"],
             [*SN, "--V0", V2, "--n", "16", "--d", "4", "--stop-level", "-1"]),
            (["--model must be attention or transformer", "(got mlp)"],
             ["rank-collapse", "--model", "mlp", "--n", "16", "--d", "4", "--networks", "2"]),
            (["--V0", "'2'", "m >= 2"],
             ["rank-collapse", "--V0", "2", "--n", "16", "--d", "4", "--networks", "2"]),
        ]
        for texts, args in cases:
            with self.subTest(args=args):
                self.expect_usage_error(texts, *args)

    # ---- 5. rank-collapse: unshaped collapses, shaped does not ----
    def test_rank_collapse(self):
        table = self.run_ok("rank-collapse", "--n", "16", "--d", "32", "--networks", "40", "--out",
                            self.dir / "rank_collapse.csv")
        rows = re.findall(r"\n +[0-9]+ +[0-9.]+ [^\n]*", table)
        self.assertEqual(len(rows), 33, f"rank-collapse --d 32: expected 33 table rows (every "
                                        f"depth):\n{table}")
        # fields: depth, t, unshaped ρ̄, ±, its stderr, λ̃, shaped ρ̄, ±, its stderr, λ̃
        first, last = rows[0].split(), rows[32].split()
        for which, fields in (("first", first), ("last", last)):
            self.assertEqual(len(fields), 10, f"rank-collapse: cannot parse the {which} row "
                                              f"'{' '.join(fields)}'")
        self.assertEqual((first[0], last[0]), ("0", "32"), "rank-collapse: depths are not 0..32")
        # At depth 0 both forms report V3's own mean correlation (0.5 + 0.3 + 0.7)/3 = 0.5.
        self.assertEqual((first[2], first[6]), ("0.500000", "0.500000"),
                         "rank-collapse: mean rho at depth 0 is not 0.500000 (V3)")
        unshaped, shaped = float(last[2]), float(last[6])
        self.assertTrue(unshaped > 0.99 and unshaped > shaped,
                        f"rank-collapse: at depth 32 unshaped mean rho {last[2]} should exceed "
                        f"0.99 and shaped {last[6]}:\n{table}")
        lines = (self.dir / "rank_collapse.csv").read_text().splitlines()
        self.assertEqual(len(lines), 34, "rank-collapse --out: expected a header and 33 rows")
        self.assertRegex(lines[0], r"^depth,t,unshaped_mean_rho,.*,shaped_lambda_median,",
                         "rank-collapse --out: unexpected header")

    @unittest.skipUnless(plotting_available(), "python3 with matplotlib not found")
    def test_rank_collapse_plots(self):
        plots = self.dir / "plots"
        self.run_ok("rank-collapse", "--n", "16", "--d", "8", "--networks", "10", "--plots", plots)
        for f in ("rank_collapse.png", "rank_collapse.csv"):
            self.assertTrue((plots / f).exists(), f"rank-collapse --plots did not write {f}")

    # ---- 6. outputs: checked first, replaced only by a successful run ----
    def test_outputs(self):
        d = self.dir
        target = d / "r.csv"
        earlier = "earlier results\n"
        target.write_text(earlier)
        base = [*SN, "--V0", V2, "--n", "16", "--d", "4"]
        self.expect_usage_error(["stop_level", "(got -1) (flag --stop-level)"],
                                *base, "--stop-level", "-1", "--out", target)
        self.expect_usage_error("heads must be a divisor of n = 16 (got 3) (flag --heads)",
                                *base, "--heads", "3", "--out", target)
        self.expect_unchanged(target, earlier)
        self.expect_usage_error(
            f"ncsde sample-network: cannot write --out {d}/no/such/dir/x.csv: No such file or "
            f"directory", *base, "--out", f"{d}/no/such/dir/x.csv")
        self.expect_usage_error(
            f"ncsde rank-collapse: cannot write --out {d}/no/x.csv: No such file or directory",
            "rank-collapse", "--n", "16", "--d", "4", "--networks", "2", "--out", f"{d}/no/x.csv")
        self.run_ok(*base, "--out", target)
        self.check_csv(target, HEADER_M2, 2, 6, "0.25")
        self.expect_no_temporaries(d)

    @unittest.skipUnless(plotting_available(), "python3 with matplotlib not found")
    def test_uncreatable_plots_directory_fails_at_once(self):
        # A --plots directory that cannot be created fails before the run (this one takes ~30 s):
        # within 10 s, with the reason. Under a regular file nothing can be created.
        file = self.dir / "r.csv"
        file.write_text("earlier results\n")
        self.expect_usage_error(
            f"ncsde rank-collapse: --plots: cannot create {file}/plots: Not a directory",
            "rank-collapse", "--n", "64", "--d", "2048", "--networks", "2000", "--plots",
            f"{file}/plots", timeout=10)

    # ---- 7. limits ----
    def test_limits(self):
        cases = [
            (["--networks 1000 with --d 100000000: 1e+11 network layers",
              "more than the limit of 1e+10"],
             ["sample-network", "--V0", V2, "--n", "64", "--d", "1e8", "--networks", "1000"]),
            (["--networks 1000000000 with --d 512: 1.02e+12 network layers (1000000000 × 512 × 2 "
              "ensembles)"], ["rank-collapse", "--networks", "1e9"]),
            (["--networks 100000 with --d 1024 and --n 1024: about 5.37e+14 units of work",
              "weights drawn per layer, literal sampler"],
             ["sample-network", "--model", "transformer", "--V0", V2, "--n", "1024", "--d", "1024",
              "--networks", "1e5", "--sampler", "literal"]),
            # n = 10⁶: one n×n weight matrix is 8 TB.
            (["--n 1000000: the run needs about 8 TB of memory (the literal sampler's weight "
              "matrices, 8 TB per thread × 1 thread)"],
             ["sample-network", "--model", "mlp", "--V0", V2, "--n", "1e6", "--d", "1",
              "--networks", "1", "--sampler", "literal"]),
        ]
        for texts, args in cases:
            with self.subTest(args=args):
                self.expect_usage_error(texts, *args)

    def test_short_run_is_silent(self):
        # Off a terminal, a short run is silent on stderr (progress lines start after 30 s).
        self.expect_silent("sample-network", "--model", "attention", "--V0", V2, "--n", "16",
                           "--d", "8", "--networks", "40")


if __name__ == "__main__":
    main()
