#!/usr/bin/env python3
"""ctest cli_outputs: nothing lost, nothing silently wrong in the program's outputs
(NCSDE=<path to ncsde> python3 test_outputs.py).

 1. A failed write is a failed run: the summary of simulate, merge, validate, coefficients and
    models on a full device (/dev/full) ends the program with exit 1 and a message naming the
    standard output; --out "" (and --partial "", --plots "") is refused, not taken for "no file".
 2. A read-only directory never costs the user a file: a writable --out in a directory where no
    temporary can be created keeps its contents when the run fails (exit 1) and gets the new
    contents when it succeeds; SIGTERM, SIGINT and SIGHUP remove the temporary a run created and
    leave the earlier file as it was.
 3. Memory estimates that hold: the estimate that simulate (with --out), merge, blowup and
    coefficients print with NCSDE_REPORT_MEMORY=1 is never below the peak memory the run measures
    (ru_maxrss of the child, less the program's own baseline measured on a tiny run); blowup
    --paths 1e9, convergence --paths 1e8 and a 200×200 coefficients --V are refused up front.
 4. Errors name the right flag: a V0 beyond --blowup-threshold names both flags; coefficients that
    overflow at every V (--tau0 1e-300, --c-plus 1e308) name the parameter, not --V; a network V0
    beyond 1e100 (whose summaries would overflow to inf) is refused naming --V0.
"""

import json
import os
import resource
import signal
import subprocess
import sys
import time
import unittest
from pathlib import Path

from cli_support import CliTestCase, main, sanitizer_of, ncsde_program

V2 = "1,0.5;0.5,1"
SIM = ["simulate", "--model", "transformer", "--V0", V2, "--paths", "20", "--T", "0.1", "--threads",
       "1"]


# Runs a command in a child of its own and prints the child's peak RSS (kB): RUSAGE_CHILDREN of
# this test's process would be the largest over all its children so far.
MEASURE = ("import resource, subprocess, sys\n"
           "p = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,"
           " stderr=subprocess.PIPE)\n"
           "sys.stderr.write(p.stderr.decode())\n"
           "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def peak_rss_bytes(command, env=None):
    """Runs `command` and returns (exit code, stderr, its peak RSS in bytes)."""
    p = subprocess.run([sys.executable, "-c", MEASURE, *map(str, command)],
                       stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=600)
    rc, kb = p.stdout.decode().split()
    return int(rc), p.stderr.decode(), int(kb) * 1024


class OutputsCli(CliTestCase):
    # ---- 1. failed writes ----
    def expect_full_device(self, *args):
        with open("/dev/full", "w") as full:
            p = subprocess.run([self.program, *map(str, args)], stdin=subprocess.DEVNULL,
                               stdout=full, stderr=subprocess.PIPE, timeout=300)
        err = p.stderr.decode()
        self.assertEqual(p.returncode, 1, f"ncsde {' '.join(map(str, args))} > /dev/full: exit "
                         f"{p.returncode}, expected 1\n{err}")
        self.assertIn("cannot write the standard output", err)

    def test_full_device_fails_the_run(self):
        self.expect_full_device(*SIM, "--format", "json")
        self.expect_full_device(*SIM)
        self.expect_full_device("coefficients", "--V", V2)
        self.expect_full_device("models")
        d = self.scratch_dir()
        self.run_ok(*SIM, "--paths-range", "0:20", "--partial", d / "a.bin")
        self.expect_full_device("merge", d / "a.bin", "--format", "json")
        self.expect_full_device("validate", "--model", "attention", "--n", "8", "--networks", "50",
                                "--paths", "50", "--dt", "0.0625", "--format", "json")
        # Help is output as well.
        self.expect_full_device("--help")
        self.expect_full_device("simulate", "--help")

    def test_empty_path_is_refused(self):
        d = self.scratch_dir()
        self.expect_usage_error(["--out must name a file or directory (got '')"], *SIM, "--out",
                                "")
        self.expect_usage_error(["--plots must name a file or directory (got '')"], "blowup",
                                "--V0", V2, "--paths", "5", "--plots", "")
        self.expect_usage_error(["--partial must name a file"], *SIM, "--paths-range", "0:5",
                                "--partial", "")
        self.assertEqual(list(d.iterdir()), [])

    # ---- 2. read-only directories and signals ----
    def drop_privileges(self):
        """As root, the runs of this test run as nobody (root writes into read-only directories);
        returns the preexec_fn, or None for a user that is not root."""
        if os.geteuid() != 0:
            return None

        def as_nobody():
            os.setgid(65534)
            os.setuid(65534)
        return as_nobody

    def test_read_only_directory_keeps_the_file(self):
        preexec = self.drop_privileges()
        d = self.scratch_dir()
        os.chmod(d, 0o755)
        locked = d / "locked"
        locked.mkdir()
        target = locked / "o.csv"
        target.write_text("earlier results\n")
        os.chmod(target, 0o666)
        os.chmod(locked, 0o555)
        self.addCleanup(os.chmod, locked, 0o755)
        try:
            subprocess.run([self.program, "models"], preexec_fn=preexec, capture_output=True,
                           check=True, timeout=60)
        except (subprocess.CalledProcessError, PermissionError, OSError) as e:
            self.skipTest(f"the program cannot run as an unprivileged user here ({e})")

        def run(*args):
            return subprocess.run([self.program, *map(str, args)], preexec_fn=preexec,
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=120)

        failed = run("simulate", "--V0", "1,0;0,1", "--paths", "200", "--dt", "0.5",
                     "--pd-policy", "throw", "--out", target)
        self.assertEqual(failed.returncode, 1, failed.stderr.decode())
        self.assertEqual(target.read_text(), "earlier results\n",
                         "a failed run changed --out in a read-only directory")
        ok = run("simulate", "--V0", "1,0;0,1", "--paths", "5", "--dt", "0.1", "--out", target)
        self.assertEqual(ok.returncode, 0, ok.stderr.decode())
        self.assertEqual(len(target.read_text().splitlines()), 6)
        self.assertEqual(sorted(p.name for p in locked.iterdir()), ["o.csv"])

    def test_signals_remove_the_temporary(self):
        d = self.scratch_dir()
        target = d / "o.csv"
        target.write_text("earlier results\n")
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with self.subTest(signal=sig.name):
                # Hours of work (10⁶ paths of 10⁵ steps), interrupted once it has begun.
                p = subprocess.Popen([self.program, "simulate", "--V0", V2, "--paths", "1000000",
                                      "--T", "100", "--dt", "0.001", "--threads", "1", "--out",
                                      target],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
                # Wait until the run has created its temporary, then signal it.
                deadline = time.monotonic() + 30
                while (time.monotonic() < deadline and p.poll() is None
                       and len(list(d.iterdir())) < 2):
                    time.sleep(0.05)
                if p.poll() is not None:
                    self.fail(f"the run ended by itself: {p.stderr.read().decode()}")
                self.assertEqual(len(list(d.iterdir())), 2, "no temporary appeared")
                p.send_signal(sig)
                p.wait(timeout=60)
                p.stderr.close()
                self.assertEqual(p.returncode, -sig, f"the run did not end by {sig.name}")
                self.expect_unchanged(target, "earlier results\n")
                self.expect_no_temporaries(d)

    # ---- 3. memory estimates ----
    @unittest.skipIf(sanitizer_of(ncsde_program()) is not None,
                     "a sanitizer's allocator changes the peak memory")
    def test_memory_estimates_hold(self):
        d = self.scratch_dir()
        env = dict(os.environ, NCSDE_REPORT_MEMORY="1")

        def estimate(stderr):
            lines = [x for x in stderr.splitlines() if x.startswith("ncsde: memory estimate")]
            self.assertTrue(lines, f"no memory estimate printed:\n{stderr}")
            return sum(float(x.split(": ")[2].split(" bytes")[0]) for x in lines)

        def measure(args):
            rc, err, rss = peak_rss_bytes([self.program, *map(str, args)], env)
            self.assertEqual(rc, 0, err)
            return estimate(err), rss

        base_est, base_rss = measure(["simulate", "--V0", V2, "--paths", "10", "--T", "0.01",
                                      "--dt", "0.01", "--threads", "1"])
        # simulate --out, m = 2 and m = 4.
        for v0, paths in (("1,0.5;0.5,1", 200000), ("1,0.5;0.5,1", 600000),
                          ("2,0,0,0;0,2,0,0;0,0,2,0;0,0,0,2", 600000)):
            with self.subTest(v0=v0, paths=paths):
                est, rss = measure(["simulate", "--V0", v0, "--paths", paths, "--T", "0.01",
                                    "--dt", "0.01", "--threads", "1", "--out", d / "o.csv"])
                self.assertGreaterEqual(est, rss - base_rss,
                                        f"simulate --paths {paths}: estimate {est:.0f} bytes, "
                                        f"measured {rss - base_rss} above the baseline")
        # merge of two shards of 300000 paths with --out.
        run = ["simulate", "--V0", V2, "--paths", "600000", "--T", "0.01", "--dt", "0.01",
               "--threads", "1"]
        self.run_ok(*run, "--paths-range", "0:300000", "--partial", d / "a.bin")
        self.run_ok(*run, "--paths-range", "300000:600000", "--partial", d / "b.bin")
        est, rss = measure(["merge", d / "a.bin", d / "b.bin", "--out", d / "m.csv"])
        self.assertGreaterEqual(est, rss - base_rss, f"merge: estimate {est:.0f}, measured "
                                f"{rss - base_rss} above the baseline")
        # blowup, m = 2.
        est, rss = measure(["blowup", "--V0", V2, "--paths", "600000", "--T", "0.01", "--dt",
                            "0.01", "--threads", "1", "--step-control", "fixed"])
        self.assertGreaterEqual(est, rss - base_rss, f"blowup: estimate {est:.0f}, measured "
                                f"{rss - base_rss} above the baseline")
        # simulate at m = 64: the summaries keep the entries' variances (K = 2080 > 136), not
        # their 2080² covariance per block of 64 paths (1.2 GB at 1024 paths before).
        v64 = ";".join(",".join("1" if i == j else "0.5" for j in range(64)) for i in range(64))
        est, rss = measure(["simulate", "--model", "mlp", "--V0", v64, "--paths", "1024", "--T",
                            "0.001", "--dt", "0.001", "--threads", "1"])
        self.assertGreaterEqual(est, rss - base_rss, f"simulate m = 64: estimate {est:.0f}, "
                                f"measured {rss - base_rss} above the baseline")
        self.assertLess(rss, 300e6, "simulate m = 64, 1024 paths: the summaries grew with m⁴")
        # and with --covariance full the estimate counts the covariances (m = 32, K = 528).
        v32 = ";".join(",".join("1" if i == j else "0.5" for j in range(32)) for i in range(32))
        est, rss = measure(["simulate", "--model", "mlp", "--V0", v32, "--paths", "1024", "--T",
                            "0.001", "--dt", "0.001", "--threads", "1", "--covariance", "full"])
        self.assertGreaterEqual(est, rss - base_rss, f"simulate m = 32 --covariance full: "
                                f"estimate {est:.0f}, measured {rss - base_rss} above the baseline")
        # coefficients at m = 24 (JSON: m⁴ numbers).
        v = ";".join(",".join("2" if i == j else "0" for j in range(24)) for i in range(24))
        est, rss = measure(["coefficients", "--model", "attention", "--V", v])
        self.assertGreaterEqual(est, rss - base_rss, f"coefficients m = 24: estimate {est:.0f}, "
                                f"measured {rss - base_rss} above the baseline")

    def test_covariance_of_the_entries(self):
        # automatic: the covariance up to K = 136 entries (m = 16), the variances beyond (JSON
        # null); means and standard errors are the same bits either way; full on request.
        def summary(v0, *flags):
            out = self.run_ok("simulate", "--model", "mlp", "--V0", v0, "--paths", "200", "--T",
                              "0.01", "--threads", "2", "--format", "json", *flags)
            return json.loads(out)["terminal_completed"]

        def identity(m):
            return ";".join(",".join("1" if i == j else "0" for j in range(m)) for i in range(m))

        full = summary(V2)
        self.assertEqual(len(full["covariance"]), 3)
        diagonal = summary(V2, "--covariance", "diagonal")
        self.assertIsNone(diagonal["covariance"])
        self.assertEqual((diagonal["mean"], diagonal["stderr"]), (full["mean"], full["stderr"]))
        self.assertEqual(len(summary(identity(16))["covariance"]), 136)
        self.assertIsNone(summary(identity(17))["covariance"])
        self.assertEqual(len(summary(identity(17), "--covariance", "full")["covariance"]), 153)
        self.expect_usage_error(["--covariance"], "simulate", "--V0", V2, "--covariance", "some")

    def test_oversized_runs_are_refused_up_front(self):
        # Each ran out of memory (bad_alloc) or grew for minutes before; now refused with the
        # estimate, before anything is allocated.
        self.expect_usage_error(["--paths 1000000000", "of memory"], "blowup", "--V0", V2,
                                "--paths", "1e9", "--T", "0.01", "--dt", "0.01", timeout=60)
        self.expect_usage_error(["--paths 100000000", "of memory"], "convergence", "--paths",
                                "1e8", timeout=60)
        v = ";".join(",".join("2" if i == j else "0" for j in range(200)) for i in range(200))
        self.expect_usage_error(["--V (m = 200)", "of memory"], "coefficients", "--model", "mlp",
                                "--V", v, timeout=60)

    # ---- 4. the right flag ----
    def test_errors_name_the_right_flag(self):
        self.expect_usage_error(["--V0", "--blowup-threshold"], "simulate", "--V0", "1e7,0;0,1",
                                "--paths", "5")
        self.expect_usage_error(["--tau0 1e-300"], "coefficients", "--model", "attention",
                                "--tau0", "1e-300", "--V", V2)
        self.expect_usage_error(["--c-plus 1e308"], "coefficients", "--model", "mlp",
                                "--c-plus", "1e308", "--V", V2)
        r = self.expect_usage_error(["--V", "overflow"], "coefficients", "--model", "attention",
                                    "--V", "1e200,0;0,1e200")
        self.assertNotIn("parameters", r.stderr)
        # A network V0 whose summaries would overflow (squares beyond the double range).
        self.expect_usage_error(["--V0", "1e+300", "1e+100"], "sample-network", "--V0",
                                "1e300,0;0,1e300", "--n", "8", "--d", "4", "--networks", "5")


if __name__ == "__main__":
    main()
