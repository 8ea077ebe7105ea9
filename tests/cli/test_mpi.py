#!/usr/bin/env python3
"""ctest cli_mpi: `ncsde simulate`, `sample-network`, `validate`, `blowup` and `convergence` under mpirun (NCSDE=<path to ncsde> MPIEXEC=<mpiexec> python3
test_mpi.py; registered when ncsde is built with MPI).

 1. `mpirun -np N ncsde simulate …` for N = 1, 2, 3 writes exactly the one-process run's JSON
    summary (timing aside), table and CSV: 150 paths are 3 blocks of 64 (the last one short), so 2
    ranks cut them 1 + 2 and 3 ranks 1 + 1 + 1; with 100 paths (2 blocks) a third rank has none;
    stopped paths and two threads per rank; only rank 0 prints;
 1b. `mpirun -np N ncsde sample-network …` likewise (90 networks: 90, 45 + 45, 30 + 30 + 30), and
    `ncsde validate` (each width's networks split over 1, 2 and 3 ranks, the SDEs on rank 0) and
    `ncsde blowup` (adaptive steps, 2 and 3 ranks) and `ncsde convergence` (fixed steps, strong
    and weak, with --plots, and the adaptive study; 1, 2 and 3 ranks);
 2. a failure on a rank (a cone exit under --pd-policy throw) ends the job: every rank exits, the
    exit code is 1 and the message names the lowest failing rank (the one holding the lowest
    failing path), no hang;
 3. bad input is refused once, with exit code 2; the commands that do not split their work refuse
    more than one rank, naming the command and the rank count.
"""

import os
import re
import shutil

from cli_support import CliTestCase, main, table_without_timing, without_timing

RUN = ["--model", "transformer", "--V0", "1,0.5,0.3;0.5,1,0.4;0.3,0.4,1", "--T", "0.5", "--dt",
       "0.01", "--seed", "7", "--threads", "2", "--stop-level", "1.6"]
MPIEXEC = os.environ.get("MPIEXEC") or shutil.which("mpiexec") or "mpiexec"
# Root in CI containers, and more ranks than cores on a 2-core machine.
MPI_FLAGS = ["--oversubscribe", "--allow-run-as-root", "--mca", "btl", "self,vader"]



class MpiCli(CliTestCase):
    def mpirun(self, np, *args, timeout=300):
        return self.run_program(args, timeout=timeout,
                                prefix=[MPIEXEC, "-np", str(np), *MPI_FLAGS])

    def mpirun_ok(self, np, *args):
        r = self.mpirun(np, *args)
        if r.returncode != 0:
            self.fail(f"mpirun -np {np} {r.describe()} failed ({r.returncode}):\n{r.stderr}")
        return r.stdout

    # ---- 1. byte for byte the one-process run ----
    def test_ranks_give_the_one_process_run(self):
        d = self.scratch_dir()
        for paths in ("150", "100"):
            run = [*RUN, "--paths", paths]
            whole_csv = d / f"whole{paths}.csv"
            whole_json = self.run_ok("simulate", *run, "--format", "json", "--out", whole_csv)
            whole_table = self.run_ok("simulate", *run)
            self.assertIn('"stopped"', whole_json)
            for np in (1, 2, 3):
                with self.subTest(paths=paths, np=np):
                    csv = d / f"mpi{paths}_{np}.csv"
                    out = self.mpirun_ok(np, "simulate", *run, "--format", "json", "--out", csv)
                    self.assertEqual(without_timing(out), without_timing(whole_json))
                    self.assertEqual(csv.read_bytes(), whole_csv.read_bytes())
                    table = self.mpirun_ok(np, "simulate", *run)
                    self.assertEqual(table_without_timing(table),
                                     table_without_timing(whole_table))

    def test_ranks_give_the_one_process_networks(self):
        d = self.scratch_dir()
        run = ["--model", "transformer", "--V0", "1,0.5,0.3;0.5,1,0.4;0.3,0.4,1", "--n", "16",
               "--d", "16", "--networks", "90", "--sampler", "reduced", "--seed", "7",
               "--threads", "2", "--stop-level", "1.3"]
        whole_csv = d / "whole.csv"
        whole_json = self.run_ok("sample-network", *run, "--format", "json", "--out", whole_csv)
        whole_table = self.run_ok("sample-network", *run)
        for np in (1, 2, 3):
            with self.subTest(np=np):
                csv = d / f"mpi_{np}.csv"
                out = self.mpirun_ok(np, "sample-network", *run, "--format", "json", "--out", csv)
                self.assertEqual(without_timing(out), without_timing(whole_json))
                self.assertEqual(csv.read_bytes(), whole_csv.read_bytes())
                table = self.mpirun_ok(np, "sample-network", *run)
                self.assertEqual(table_without_timing(table), table_without_timing(whole_table))

    def test_ranks_give_the_one_process_validation(self):
        # validate: the networks of each width over the ranks, the SDEs on rank 0.
        run = ["validate", "--networks", "300", "--paths", "300", "--n", "8,16", "--seed", "3",
               "--threads", "1"]
        whole_json = self.run_ok(*run, "--format", "json")
        whole_table = self.run_ok(*run)
        for np in (1, 2, 3):
            with self.subTest(np=np):
                out = self.mpirun_ok(np, *run, "--format", "json")
                self.assertEqual(without_timing(out), without_timing(whole_json))
                table = self.mpirun_ok(np, *run)
                self.assertEqual(table_without_timing(table), table_without_timing(whole_table))

    def test_ranks_give_the_one_process_blowup(self):
        # blowup: adaptive steps (the default increment control) on every path, paths over ranks.
        run = ["blowup", "--paths", "200", "--T", "1", "--seed", "2", "--threads", "1"]
        whole_json = self.run_ok(*run, "--format", "json")
        self.assertIn('"blown_up"', whole_json)
        for np in (2, 3):
            with self.subTest(np=np):
                out = self.mpirun_ok(np, *run, "--format", "json")
                self.assertEqual(without_timing(out), without_timing(whole_json))

    def test_ranks_give_the_one_process_convergence(self):
        # convergence: each problem's paths over the ranks (blocks of 8: 100 paths are 13 blocks,
        # cut 6 + 7 and 4 + 4 + 5), the errors and fits computed at rank 0; fixed steps with the
        # strong and weak series, and the adaptive study.
        d = self.scratch_dir()
        fixed = ["convergence", "--problem", "noncommutative", "--paths", "100", "--levels", "3",
                 "--seed", "4", "--threads", "1"]
        adaptive = ["convergence", "--problem", "gbm", "--step-control", "increment", "--paths",
                    "60", "--levels", "3", "--seed", "4", "--threads", "1"]
        whole_json = self.run_ok(*fixed, "--format", "json")
        whole_table = self.run_ok(*fixed)
        whole_adaptive = self.run_ok(*adaptive, "--format", "json")
        self.run_ok(*fixed, "--plots", d / "one")
        for np in (1, 2, 3):
            with self.subTest(np=np):
                out = self.mpirun_ok(np, *fixed, "--format", "json")
                self.assertEqual(without_timing(out), without_timing(whole_json))
                table = self.mpirun_ok(np, *fixed)
                self.assertEqual(table_without_timing(table), table_without_timing(whole_table))
                out = self.mpirun_ok(np, *adaptive, "--format", "json")
                self.assertEqual(without_timing(out), without_timing(whole_adaptive))
        self.mpirun_ok(3, *fixed, "--plots", d / "three")
        self.assertEqual(without_timing((d / "three" / "convergence.json").read_text()),
                         without_timing((d / "one" / "convergence.json").read_text()))
        self.assertEqual(sorted(p.name for p in (d / "three").iterdir()),
                         sorted(p.name for p in (d / "one").iterdir()))

    # ---- 2. a failing rank ends the job ----
    def test_failing_rank_ends_the_job(self):
        # Strong attention from a nearly singular V0: some paths leave the cone, and `throw` makes
        # that an error (the one-process run names the lowest such path with one thread).
        run = ["--model", "attention", "--gamma2", "1", "--tau0", "0.5", "--V0",
               "1,0.999;0.999,1", "--T", "0.3", "--dt", "0.05", "--paths", "192", "--seed", "3",
               "--pd-policy", "throw"]
        one = self.run_program(["simulate", *run, "--threads", "1"])
        self.assertEqual(one.returncode, 1, one.stderr)
        m = re.search(r"path (\d+)", one.stderr)
        self.assertIsNotNone(m, one.stderr)
        lowest = int(m.group(1))
        r = self.mpirun(3, "simulate", *run, "--threads", "1", timeout=120)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"rank {lowest // 64} of 3:", r.stderr)
        self.assertIn(f"path {lowest}", r.stderr)
        self.assertEqual(r.stdout, "")

    # ---- 3. refused input ----
    def test_refusals(self):
        r = self.mpirun(2, "simulate", *RUN, "--paths", "-5")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr.count("--paths"), 1, r.stderr)
        r = self.mpirun(2, "simulate", *RUN, "--paths", "100", "--paths-range", "0:50",
                        "--partial", self.scratch_dir() / "p.bin")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("not given under mpirun", r.stderr)
        r = self.mpirun(2, "coefficients", "--V", "1,0.5;0.5,1")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("ncsde coefficients", r.stderr)
        self.assertIn("mpirun -np must be 1", r.stderr)
        r = self.mpirun(2, "simulate", *RUN, "--paths", "100", "--out", "/nonexistent/dir/x.csv")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("/nonexistent/dir/x.csv", r.stderr)


if __name__ == "__main__":
    main()
