#!/usr/bin/env python3
"""ctest cli_models: `ncsde coefficients` and `ncsde simulate` (NCSDE=<path to ncsde> python3
test_models.py).

 1. mlp coefficients at V = [[1, .5], [.5, 1]] against the closed forms of docs/maths.md §3.2;
 2. attention coefficients at V = [[2, 1], [1, 1]] against k_lin Σ_lin + k_att Σ_att by hand;
 3. a small simulate run writes a CSV with the documented header and one row per path;
 4. bad model flags and matrices fail with exit code 2 and a message naming the flag and the value;
 5. integer flags are read as decimal integers: "010" and "1e1" are ten, "1.5" and 2^64 are
    refused;
 6. --out is replaced only by a successful run: a bad flag or a run that fails midway leaves an
    earlier file unchanged (and no temporary), an unwritable --out fails before the run with the
    reason, exit code 2;
 7. runs beyond the limits of validation/limits.hpp (steps, memory) are refused before they start,
    naming the flag, the value and the estimate;
 8. a short run prints nothing on stderr off a terminal (progress lines start after 30 s).
"""

import csv
import io
import re
import unittest

from cli_support import CliTestCase, main, sanitizer_of, ncsde_program

# The closed forms below are exact; the program's doubles differ from them by a few ulps of
# numbers of order 1 to 10. 1e-12 leaves room for a different but correct order of operations.
TOL = 1e-12

IDENTITY = "1,0;0,1"


def read_csv(text):
    return list(csv.reader(io.StringIO(text)))


class ModelsCli(CliTestCase):
    # ---- 1. mlp at V = [[1, .5], [.5, 1]], c₊ = 0, c₋ = −2 ----
    def test_mlp_coefficients(self):
        mlp = self.run_json("coefficients", "--model", "mlp", "--c-plus", "0", "--c-minus", "-2",
                            "--V", "1,0.5;0.5,1", "--format", "json")
        self.assertEqual((mlp["model"], mlp["m"]), ("mlp", 2), "mlp: expected model mlp and m 2")
        drift = mlp["drift"]
        # b^{aa} = ν(1) √(V^{aa}V^{aa}) = 0 exactly.
        self.assert_near("mlp drift[0][0]", drift[0][0], 0.0, TOL)
        # b^{12} = ν(ρ) √(V11 V22), ρ = 0.5, ν(ρ) = ((c₊ − c₋)²/(2π)) (√(1 − ρ²) − ρ arccos ρ)
        #        = (4/(2π)) (√3/2 − (1/2)(π/3)) = √3/π − 1/3 = 0.21799556208845871.
        self.assert_near("mlp drift[0][1]", drift[0][1], 0.21799556208845871, TOL)
        self.assert_near("mlp drift[1][0]", drift[1][0], 0.21799556208845871, TOL)
        self.assertEqual(len(mlp["diffusion"]), 16, "mlp: the diffusion must have m⁴ = 16 entries")
        # Σ^{11,11} = Σ_lin^{11,11} = V11 V11 + V11 V11 = 2 V11² = 2 (k_lin = 1 for mlp).
        self.assert_near("mlp Sigma^{11,11}", mlp["diffusion"][0], 2.0, TOL)
        # Σ^{12,21} (flat index (0,1,1,0) = 0·8 + 1·4 + 1·2 + 0 = 6) = V12 V21 + V11 V22 = 1.25.
        self.assert_near("mlp Sigma^{12,21}", mlp["diffusion"][6], 1.25, TOL)

    # ---- 2. attention, γ² = 1, τ₀ = 1, one head, no W^O: k_lin = γ²(2 − γ²) = 1, k_att = 1 ----
    def test_attention_coefficients(self):
        att = self.run_json("coefficients", "--model", "attention", "--gamma2", "1", "--tau0", "1",
                            "--V", "2,1;1,1", "--format", "json")
        # By hand, m = 2, V = [[2, 1], [1, 1]]: P = x xᵀ with x = (1, −1)/√2, so Φ = V P V P V =
        # (xᵀVx) (Vx)(Vx)ᵀ with xᵀVx = (2 − 1 − 1 + 1)/2 = 1/2 and Vx = (1, 0)/√2, hence
        # Φ = (1/2)(1/2) [[1, 0], [0, 0]]: Φ11 = 1/4, Φ12 = Φ22 = 0.
        # Σ^{11,12} (a = b = c = 1, d = 2; flat index (0,0,0,1) = 1):
        #   Σ_lin = V11 V12 + V12 V11 = 2 + 2 = 4,
        #   Σ_att = (1/(m²τ₀²)) [V11 Φ12 + V12 Φ11 + V11 Φ12 + V12 Φ11] = (1/4)(0 + 1/4 + 0 + 1/4)
        #         = 1/8,
        #   Σ = 1·4 + 1·(1/8) = 4.125.
        # Σ^{12,12} (flat index (0,1,0,1) = 5) and Σ^{21,12} (flat index (1,0,0,1) = 9):
        #   Σ_lin = V11 V22 + V12 V21 = 2 + 1 = 3,
        #   Σ_att = (1/4) [V11 Φ22 + V12 Φ21 + V21 Φ12 + V22 Φ11] = (1/4)(1/4) = 1/16,  Σ = 3.0625.
        # Σ^{11,11} (flat index 0): Σ_lin = 2 V11² = 8, Σ_att = (1/4)(4 V11 Φ11) = 1/2,  Σ = 8.5.
        s = att["diffusion"]
        self.assertEqual(len(s), 16, "attention: the diffusion must have 16 entries")
        self.assert_near("attention Sigma^{11,11}", s[0], 8.5, TOL)
        self.assert_near("attention Sigma^{11,12}", s[1], 4.125, TOL)
        self.assert_near("attention Sigma^{12,12}", s[5], 3.0625, TOL)
        self.assert_near("attention Sigma^{21,12}", s[9], 3.0625, TOL)

    def test_table_format(self):
        # The table format runs and shows the packed pair labels.
        table = self.run_ok("coefficients", "--model", "transformer", "--V", "1,0.5;0.5,1",
                            "--format", "table")
        self.assertIn("(1,2)", table, "coefficients --format table has no (1,2) label")

    # ---- 3. simulate: header and one row per path ----
    def test_simulate_csv(self):
        out = self.scratch_dir() / "models_cli_simulate.csv"
        summary = self.run_ok("simulate", "--model", "mlp", "--V0", "1,0.5;0.5,1", "--paths", "50",
                              "--dt", "0.01", "--threads", "2", "--out", out)
        self.assertTrue(out.exists(), f"simulate --out did not write {out}")
        lines = out.read_text().splitlines()
        self.assertEqual(len(lines), 51, "simulate --paths 50: expected a header and 50 rows")
        self.assertEqual(lines[0], "path,status,t_stop,V11,V12,V22", "unexpected CSV header")
        self.assertRegex(lines[50], r"^49,[a-z_]+,[^,]+,[^,]+,[^,]+,[^,]+$",
                         "the last row is not path 49 with 6 fields")
        self.assertIn("rho12", summary, "the summary does not report the functional rho12")

    def test_stopped_process(self):
        # With K = 1.3, a path is 'stopped' exactly when the state it stopped in has
        # max(V11, V22) > 1.3 (the check runs after every step), and some paths stop while others
        # complete.
        out = self.scratch_dir() / "models_cli_simulate.csv"
        self.run_ok("simulate", "--model", "attention", "--tau0", "0.5", "--gamma2", "1", "--V0",
                    "1,0.5;0.5,1", "--paths", "200", "--dt", "0.01", "--stop-level", "1.3",
                    "--threads", "2", "--out", out)
        rows = read_csv(out.read_text())[1:]
        stopped = completed = 0
        for row in rows:
            status, v11, v22 = row[1], float(row[3]), float(row[5])
            if status == "stopped":
                stopped += 1
                self.assertTrue(max(v11, v22) > 1.3,
                                f"stopped row without max(V11, V22) > 1.3: {','.join(row)}")
            elif status == "completed":
                completed += 1
        self.assertTrue(stopped > 0 and completed > 0,
                        f"expected both stopped ({stopped}) and completed ({completed}) paths")

    def test_batched(self):
        # Lane groups of paths (the default) against one path at a time (--per-path): the same
        # bytes, at a fixed m = 3 and a dynamic m = 5, a transformer with a stop level, so that
        # lanes stop at different steps; --batched is the default spelled out.
        v0s = {3: "1,0.5,0.3;0.5,1,0.4;0.3,0.4,1",
               5: ";".join(",".join("1" if i == j else "0.3" for j in range(5)) for i in range(5))}
        for m, v0 in v0s.items():
            texts = {}
            for mode in ("--per-path", "--batched", None):
                out = self.scratch_dir() / f"models_cli_batched_{m}_{mode}.csv"
                self.run_ok("simulate", "--model", "transformer", "--V0", v0, "--paths", "37",
                            "--dt", "0.01", "--T", "0.5", "--stop-level", "1.6", "--threads", "2",
                            "--out", out, *([mode] if mode else []))
                texts[mode] = out.read_text()
            self.assertEqual(texts["--per-path"], texts[None], f"m = {m}: per path vs batched")
            self.assertEqual(texts["--batched"], texts[None], f"m = {m}: --batched vs default")
            rows = read_csv(texts[None])[1:]
            self.assertEqual(len(rows), 37)
            stopped = sum(r[1] == "stopped" for r in rows)
            self.assertTrue(0 < stopped < 37, f"m = {m}: expected some stopped paths ({stopped})")

    # ---- 4. bad input: exit code 2, the flag and the value named ----
    def test_bad_input(self):
        cases = [
            (["ncsde: error:", "gamma2", "1.5", "--gamma2"],
             ["coefficients", "--model", "resnet", "--gamma2", "1.5", "--V", IDENTITY]),
            (["ncsde: error:", "tau0", "--tau0"],
             ["coefficients", "--model", "attention", "--tau0", "0", "--V", IDENTITY]),
            (["ncsde: error:", "heads", "--heads"],
             ["coefficients", "--model", "attention", "--heads", "0", "--V", IDENTITY]),
            (["--heads"], ["coefficients", "--model", "mlp", "--heads", "2", "--V", IDENTITY]),
            (["--V", "'1,2;3'", "row 2"], ["coefficients", "--model", "mlp", "--V", "1,2;3"]),
            (["--V", "'1,x;0,1'", "'x' is not a finite number"],
             ["coefficients", "--model", "mlp", "--V", "1,x;0,1"]),
            (["--V", "not symmetric"], ["coefficients", "--model", "mlp", "--V", "1,2;0,1"]),
            # One sign per number (found by tests/fuzz).
            (["--V", "entry (1, 1) '+-1' is not a finite number"],
             ["coefficients", "--model", "mlp", "--V", "+-1"]),
            # A finite V at which the coefficients overflow is refused, not printed as null.
            (["--V: the coefficients overflow (are not finite) at V = '1e300,0;0,1e300': "
              "Sigma^{11,11} = inf"],
             ["coefficients", "--model", "mlp", "--V", "1e300,0;0,1e300"]),
            (["--V: the coefficients overflow"],
             ["coefficients", "--model", "transformer", "--V", "1e200,0;0,1", "--format",
              "table"]),
            (["--model: foo not in"], ["coefficients", "--model", "foo", "--V", IDENTITY]),
            (["--pd-policy: bogus not in"],
             ["simulate", "--V0", IDENTITY, "--pd-policy", "bogus"]),
            (["--V0", "'1,x'", "entries"], ["simulate", "--V0", "1,x", "--paths", "2"]),
            (["--stop-level must be > 0 (inf: never stop) (got -2)"],
             ["simulate", "--V0", IDENTITY, "--stop-level", "-2"]),
            (["--gamma2", "1.5"],
             ["simulate", "--model", "resnet", "--gamma2", "1.5", "--V0", IDENTITY, "--paths",
              "2"]),
        ]
        for texts, args in cases:
            with self.subTest(args=args):
                self.expect_usage_error(texts, *args)

    def test_registry_schemes(self):
        # Every registry scheme runs (the summary names it); an unknown one is refused.
        for scheme in ("milstein-commutative", "predictor-corrector"):
            with self.subTest(scheme=scheme):
                out = self.run_json("simulate", "--model", "mlp", "--V0", "1,0.5;0.5,1", "--paths",
                                    "20", "--dt", "0.05", "--threads", "1", "--scheme", scheme,
                                    "--format", "json")
                self.assertEqual(out["scheme"], scheme)
        self.expect_usage_error("--scheme: rk4 not in", "simulate", "--V0", IDENTITY, "--scheme",
                                "rk4")

    def test_many_rows_refused_at_the_first(self):
        # m separators are refused at row 1, not after asking for m² doubles (found by tests/fuzz:
        # "1" and 100000 ';' used to exit 1, out of memory, for want of 80 GB).
        r = self.run_program(["coefficients", "--model", "mlp", "--V", "1" + ";" * 100000])
        self.assertTrue(r.returncode == 2 and "row 1 has 1 entries, expected 100001" in r.stderr,
                        f"--V '1;;;…' (100000 ';'): exit code {r.returncode}, expected 2 and 'row "
                        f"1 has 1 entries, expected 100001':\n{r.stderr[:300]}")

    # ---- 5. integer flags: decimal digits only, read as written ----
    def test_integer_flags(self):
        ten = self.run_json("simulate", "--V0", "1,0.5;0.5,1", "--paths", "1e1", "--seed", "010",
                            "--dt", "0.1", "--threads", "1", "--format", "json")
        plain = self.run_json("simulate", "--V0", "1,0.5;0.5,1", "--paths", "10", "--seed", "10",
                              "--dt", "0.1", "--threads", "1", "--format", "json")
        self.assertTrue(ten["paths"] == 10 and ten["seed"] == 10
                        and ten["functionals"][0] == plain["functionals"][0],
                        f"simulate --paths 1e1 --seed 010 is not --paths 10 --seed 10:\n{ten}")
        # ".0" is zero, as "0.0" is (found by tests/fuzz: it used to become an empty text).
        zero = self.run_json("simulate", "--V0", "1,0.5;0.5,1", "--paths", "2", "--seed", ".0",
                             "--dt", "0.5", "--threads", ".0", "--format", "json")
        self.assertEqual(zero["seed"], 0, "simulate --seed .0 is not --seed 0")
        self.expect_usage_error("--paths: must be a decimal integer such as 1000 or 1e6 (got '1.5')",
                                "simulate", "--V0", IDENTITY, "--paths", "1.5")
        self.expect_usage_error("--seed: must be at most 2^64 - 1", "simulate", "--V0", IDENTITY,
                                "--seed", "99999999999999999999")
        self.expect_usage_error("--heads: must be a decimal integer such as 1000 or 1e6 (got '2.5')",
                                "coefficients", "--model", "attention", "--heads", "2.5", "--V",
                                IDENTITY)

    # ---- 6. --out: whole or not at all ----
    def test_out_whole_or_not_at_all(self):
        d = self.scratch_dir()
        target = d / "r.csv"
        earlier = "earlier results\n"
        target.write_text(earlier)
        sim = ["--paths", "5", "--out", target]
        for text, args in [
            ("dt must be > 0 and finite (got -1) (flag --dt)", ["--dt", "-1"]),
            ("T must be finite (got inf) (flag --T)", ["--T", "inf"]),
            ("dt must be <= T - t0 = 1 (got 2) (flag --dt)", ["--dt", "2"]),
            ("blowup_threshold must be in (0, 1e100] (got 0) (flag --blowup-threshold)",
             ["--blowup-threshold", "0"]),
            ("--stop-level must be > 0", ["--stop-level", "-1"]),
        ]:
            with self.subTest(args=args):
                self.expect_usage_error(text, "simulate", "--V0", IDENTITY, *sim, *args)
        self.expect_unchanged(target, earlier)
        # A run that fails midway (the throw policy at a step that leaves the cone): exit 1, file
        # unchanged.
        self.expect_exit(1, "left the positive-semidefinite cone", "simulate", "--V0", IDENTITY,
                         "--paths", "200", "--dt", "0.5", "--pd-policy", "throw", "--out", target)
        self.expect_unchanged(target, earlier)
        self.expect_no_temporaries(d)
        # An unwritable --out fails before the run, with the reason.
        self.expect_usage_error(
            f"ncsde simulate: cannot write --out {d}/no/such/dir/x.csv: No such file or directory",
            "simulate", "--V0", IDENTITY, "--paths", "5", "--out", f"{d}/no/such/dir/x.csv")
        self.expect_usage_error(f"ncsde simulate: cannot write --out {d}: Is a directory",
                                "simulate", "--V0", IDENTITY, "--paths", "5", "--out", d)
        # A successful run replaces the file.
        self.run_ok("simulate", "--V0", IDENTITY, "--paths", "5", "--dt", "0.1", "--out", target)
        self.assertEqual(len(target.read_text().splitlines()), 6,
                         "simulate --paths 5 --out: expected 6 lines in the replaced file")
        self.expect_no_temporaries(d)

    # ---- 7. limits: refused at once, with the flag, the value and the estimate ----
    def test_step_limits(self):
        self.expect_usage_error(
            "--dt 1e-06 with --T 1e+06: 1e+12 steps per path, more than the limit of 1e+09",
            "simulate", "--V0", IDENTITY, "--T", "1e6", "--dt", "1e-6")
        self.expect_usage_error(
            ["--paths 1000000000: 1e+15 steps in all", "more than the limit of 1e+12 steps"],
            "simulate", "--V0", IDENTITY, "--paths", "1e9", "--T", "1000", "--dt", "1e-3")

    @unittest.skipIf(sanitizer_of(ncsde_program()) is not None,
                     "a sanitizer runtime reserves terabytes of address space, so the program "
                     "cannot start under a 2 GB RLIMIT_AS")
    def test_memory_limit(self):
        # Under a 2 GB address-space limit (RLIMIT_AS) 1e8 paths of m = 1 (about 6.8 GB) are
        # refused before any allocation.
        r = self.run_program(["simulate", "--V0", "2", "--paths", "1e8", "--dt", "0.5"],
                             timeout=60,
                             prefix=["/bin/sh", "-c", 'ulimit -v 2000000 && exec "$0" "$@"'])
        pattern = (r"--paths 100000000: the run needs about [0-9.]+ GB of memory \([0-9]+ bytes "
                   r"per path: 1 functional value; [0-9]+ bytes of summaries, with the entries' "
                   r"covariance\), more than the 2.05 GB available \(RLIMIT_AS\)")
        self.assertTrue(r.returncode == 2 and re.search(pattern, r.stderr),
                        f"simulate --paths 1e8 under ulimit -v 2000000: exit {r.returncode}, "
                        f"expected 2 and the memory estimate:\n{r.stderr}")

    # ---- 8. off a terminal, a short run is silent on stderr ----
    def test_short_run_is_silent(self):
        self.expect_silent("simulate", "--V0", "1,0.5;0.5,1", "--paths", "20", "--dt", "0.01")


if __name__ == "__main__":
    main()
