#!/usr/bin/env python3
"""ctest cli_shards: shards of a run for batch schedulers (NCSDE=<path to ncsde> python3
test_shards.py).

 1. `ncsde simulate … --paths-range A:B --partial FILE` for a cover of [0, paths) by shards, merged
    by `ncsde merge` in any order, gives the one-process run's JSON summary (timing aside), table
    and CSV byte for byte: cuts inside blocks of 64 paths, a last partial block, stopped paths;
 2. overlapping, missing and mismatched shards, and files that are not partial results, are refused
    with exit code 2 and a message naming the files;
 3. --paths-range and --partial go together, the range must lie in [0, --paths), and --out belongs
    to ncsde merge;
 4. the same for `ncsde sample-network` (the range in [0, --networks)): shards of a stopped
    transformer run, merged, give its JSON summary, table and CSV byte for byte; shards of another
    sampler or seed, gaps, and a simulate shard among network shards are refused;
 5. the same for `ncsde validate` (samples [0, max(networks, paths))): merged shards give the
    one-process run's JSON, table and --plots data byte for byte (timing aside); gaps, overlaps,
    another run's shards, --out and a shard with --plots are refused;
 5b. shards run on a device (the emulated one) carry its report through the merge, for simulate and
    validate; a shard of the same run on the CPU is another run;
 6. a partial file carries its run's identity (validation/partial_file.hpp): a shard whose run
    differs from the others' in any one option that changes a number (the model, a model
    parameter, V0 in its last bit, T, dt, paths, seed, scheme, step control, stop level, blow-up
    threshold, pd policy, batching) is refused with the option named, while two spellings of one
    V0 merge; an --out that names a shard is refused and leaves it as it was; a damaged byte
    (checksum), a partial of the earlier format and a file that is not a regular file
    (/dev/zero, which would never end) are refused.
"""


from cli_support import CliTestCase, main, table_without_timing, without_timing

RUN = ["--model", "transformer", "--V0", "1,0.5,0.3;0.5,1,0.4;0.3,0.4,1", "--T", "0.5", "--dt",
       "0.01", "--paths", "150", "--seed", "7", "--threads", "2", "--stop-level", "1.6"]

NETS = ["--model", "transformer", "--V0", "1,0.5,0.3;0.5,1,0.4;0.3,0.4,1", "--n", "16", "--d",
        "16", "--networks", "90", "--sampler", "reduced", "--seed", "7", "--threads", "2",
        "--stop-level", "1.3"]



class ShardsCli(CliTestCase):
    def shards(self, d, ranges, run=RUN, tag="part", command="simulate"):
        """One shard file in d for each range (a, b) of the run."""
        files = []
        for a, b in ranges:
            f = d / f"{tag}_{a}_{b}.bin"
            self.run_ok(command, *run, "--paths-range", f"{a}:{b}", "--partial", f)
            files.append(f)
        return files

    def whole_run(self, d, command, run):
        """The one-process run: its JSON summary, its CSV (a file in d) and its table."""
        csv = d / "whole.csv"
        summary = self.run_ok(command, *run, "--format", "json", "--out", csv)
        return summary, csv, self.run_ok(command, *run)

    def assert_merge_is(self, files, whole_json, whole_csv, whole_table):
        """`ncsde merge` of the files (in reverse order, then in order) prints and writes the
        one-process run's JSON summary, CSV and table."""
        merged_csv = whole_csv.parent / "merged.csv"
        merged = self.run_ok("merge", *reversed(files), "--format", "json", "--out", merged_csv)
        self.assertEqual(without_timing(merged), without_timing(whole_json))
        self.assertEqual(merged_csv.read_bytes(), whole_csv.read_bytes())
        table = self.run_ok("merge", *files)
        self.assertEqual(table_without_timing(table), table_without_timing(whole_table))

    # ---- 1. shards + merge = the one-process run, byte for byte ----
    def test_merge_is_the_whole_run(self):
        d = self.scratch_dir()
        whole_json, whole_csv, whole_table = self.whole_run(d, "simulate", RUN)
        self.assertIn('"stopped"', whole_json)
        for ranges in ([(0, 37), (37, 100), (100, 150)], [(0, 64), (64, 150)], [(0, 150)],
                       [(0, 1), (1, 2), (2, 149), (149, 150)]):
            with self.subTest(ranges=ranges):
                self.assert_merge_is(self.shards(d, ranges), whole_json, whole_csv, whole_table)
        # Summaries that keep the variances only (--covariance diagonal) merge the same way.
        run = RUN + ["--covariance", "diagonal"]
        whole_json, whole_csv, whole_table = self.whole_run(d, "simulate", run)
        self.assertIn('"covariance": null', whole_json)
        self.assert_merge_is(self.shards(d, [(0, 37), (37, 150)], run=run, tag="diagonal"),
                             whole_json, whole_csv, whole_table)

    # ---- 2. refused shards ----
    def test_bad_shards(self):
        d = self.scratch_dir()
        a, b, c = self.shards(d, [(0, 37), (37, 100), (100, 150)])
        (overlap,) = self.shards(d, [(30, 100)])
        self.expect_usage_error(["an overlap", str(overlap)], "merge", a, overlap, b, c)
        self.expect_usage_error(["a gap", str(c)], "merge", a, c)
        self.expect_usage_error(["missing shards", "[0, 100)", str(b)], "merge", a, b)
        other_seed = [("8" if x == "7" and RUN[i - 1] == "--seed" else x) for i, x in enumerate(RUN)]
        (other,) = self.shards(d, [(100, 150)], run=other_seed, tag="seed8")
        self.expect_usage_error(["from another run", "--seed (7 vs 8)", str(other)], "merge", a, b,
                                other)
        junk = d / "junk.bin"
        junk.write_text("not a partial\n")
        self.expect_usage_error(["is not a partial result", str(junk)], "merge", a, junk)
        truncated = d / "truncated.bin"
        truncated.write_bytes(a.read_bytes()[:-9])
        self.expect_usage_error(["is not a partial result", str(truncated)], "merge", truncated)

    # ---- 3. flags ----
    def test_shard_flags(self):
        d = self.scratch_dir()
        self.expect_usage_error(["--paths-range", "--partial"], "simulate", *RUN,
                                "--paths-range", "0:10")
        self.expect_usage_error(["--partial", "--paths-range"], "simulate", *RUN, "--partial",
                                d / "x.bin")
        for bad in ("10:5", "0:151", "5", "a:b", "3:3"):
            self.expect_usage_error(["--paths-range", bad], "simulate", *RUN, "--paths-range",
                                    bad, "--partial", d / "x.bin")
        self.expect_usage_error(["--out", "ncsde merge"], "simulate", *RUN, "--paths-range",
                                "0:10", "--partial", d / "x.bin", "--out", d / "x.csv")
        self.assertFalse((d / "x.bin").exists(), "a refused shard wrote its --partial file")

    # ---- 4. sample-network shards ----
    def test_network_shards(self):
        d = self.scratch_dir()
        whole_json, whole_csv, whole_table = self.whole_run(d, "sample-network", NETS)
        self.assertIn('"stopped": ', whole_json)
        self.assertNotIn('"stopped": 0,', whole_json)

        def shards(ranges, run=NETS, tag="net"):
            return self.shards(d, ranges, run=run, tag=tag, command="sample-network")

        for ranges in ([(0, 37), (37, 90)], [(0, 90)], [(0, 1), (1, 89), (89, 90)]):
            with self.subTest(ranges=ranges):
                self.assert_merge_is(shards(ranges), whole_json, whole_csv, whole_table)
        a, b = shards([(0, 37), (37, 90)])
        self.expect_usage_error(["missing shards", "[0, 37)", str(a)], "merge", a)
        (c,) = shards([(50, 90)])
        self.expect_usage_error(["a gap", str(c)], "merge", a, c)
        literal = [("literal" if x == "reduced" else x) for x in NETS]
        (other,) = shards([(37, 90)], run=literal, tag="literal")
        self.expect_usage_error(["from another run", str(other)], "merge", a, other)
        seed = [("8" if x == "7" and NETS[i - 1] == "--seed" else x) for i, x in enumerate(NETS)]
        (other_seed,) = shards([(37, 90)], run=seed, tag="seed8")
        self.expect_usage_error(["from another run", "--seed", str(other_seed)], "merge", a,
                                other_seed)
        (sim,) = self.shards(d, [(0, 150)])
        self.expect_usage_error(["is a shard of 'simulate'", str(sim)], "merge", a, sim)
        self.expect_usage_error(["--paths-range", "0:91"], "sample-network", *NETS,
                                "--paths-range", "0:91", "--partial", d / "y.bin")
        self.expect_usage_error(["--out", "ncsde merge"], "sample-network", *NETS,
                                "--paths-range", "0:10", "--partial", d / "y.bin", "--out",
                                d / "y.csv")
        self.assertFalse((d / "y.bin").exists(), "a refused shard wrote its --partial file")

    # ---- 5. validate shards ----
    def test_validate_shards(self):
        # 300 networks per width and 250 SDE paths: the samples [0, 300), where the SDE runs stop
        # at 250 (a shard beyond them holds networks only).
        d = self.scratch_dir()
        run = ["--model", "attention", "--n", "8,16", "--networks", "300", "--paths", "250",
               "--dt", "0.0078125", "--seed", "3", "--threads", "2"]
        whole_json = self.run_ok("validate", *run, "--format", "json")
        whole_table = self.run_ok("validate", *run)
        self.run_ok("validate", *run, "--plots", d / "whole")

        def shards(ranges, args=run, tag="val"):
            return self.shards(d, ranges, run=args, tag=tag, command="validate")

        for ranges in ([(0, 100), (100, 260), (260, 300)], [(0, 300)]):
            with self.subTest(ranges=ranges):
                files = shards(ranges)
                merged = self.run_ok("merge", *reversed(files), "--format", "json")
                self.assertEqual(without_timing(merged), without_timing(whole_json))
                table = self.run_ok("merge", *files)
                self.assertEqual(table_without_timing(table), table_without_timing(whole_table))
        # With --plots: the same data files as the one-process run's.
        files = shards([(0, 120), (120, 300)], tag="plots")
        self.run_ok("merge", *files, "--plots", d / "merged")
        for name in ("values.csv", "paths.csv", "validation.json"):
            self.assertEqual((d / "merged" / name).read_bytes(), (d / "whole" / name).read_bytes(),
                             f"merged {name} differs from the one-process run's")

        # Refused: a gap, an overlap, another run's shard, mixed commands, --out, and the flags.
        a, b, c = shards([(0, 100), (100, 260), (260, 300)])
        self.expect_usage_error(["samples [100, 260) of the validate run are missing"], "merge",
                                a, c)
        (overlap,) = shards([(50, 260)], tag="overlap")
        self.expect_usage_error(["overlaps", str(overlap)], "merge", a, overlap, c)
        seed = [("4" if x == "3" and run[i - 1] == "--seed" else x) for i, x in enumerate(run)]
        (other,) = shards([(260, 300)], args=seed, tag="seed4")
        self.expect_usage_error(["from another run", "--seed", str(other)], "merge", a, b, other)
        (sim,) = self.shards(d, [(0, 150)])
        self.expect_usage_error(["is a shard of 'simulate'"], "merge", a, sim)
        self.expect_usage_error(["--out", "validate"], "merge", a, b, c, "--out", d / "v.csv")
        self.expect_usage_error(["--plots", "only for shards of ncsde validate"], "merge", sim,
                                "--plots", d / "p")
        self.expect_usage_error(["--paths-range", "0:301"], "validate", *run, "--paths-range",
                                "0:301", "--partial", d / "v.bin")
        self.expect_usage_error(["--plots", "ncsde merge --plots"], "validate", *run,
                                "--paths-range", "0:10", "--partial", d / "v.bin", "--plots",
                                d / "vp")
        self.assertFalse((d / "v.bin").exists(), "a refused shard wrote its --partial file")

    # ---- 5b. shards of runs on a device ----
    def test_device_shards(self):
        # Shards run on the emulated device carry its report: merged, the simulate and validate
        # outputs are the one-process run's, device and paths handed back included; a shard of
        # the same run on the CPU is another run (--device is part of the identity).
        d = self.scratch_dir()
        run = RUN + ["--device", "emulated", "--scheme", "em"]
        whole = self.run_ok("simulate", *run, "--format", "json")
        self.assertIn('"device": "emulated"', whole)
        files = self.shards(d, [(0, 70), (70, 150)], run=run, tag="dev")
        merged = self.run_ok("merge", *files, "--format", "json")
        self.assertEqual(without_timing(merged), without_timing(whole))
        (cpu,) = self.shards(d, [(70, 150)], run=RUN + ["--scheme", "em"], tag="cpu")
        self.expect_usage_error(["from another run", "--device"], "merge", files[0], cpu)
        val = ["--model", "attention", "--n", "8,16", "--networks", "200", "--paths", "200",
               "--dt", "0.0078125", "--seed", "3", "--threads", "2", "--device", "emulated"]
        whole = self.run_ok("validate", *val, "--format", "json")
        self.assertIn('"wrong_sdes": "cpu"', whole)
        files = self.shards(d, [(0, 90), (90, 200)], run=val, tag="valdev", command="validate")
        merged = self.run_ok("merge", *files, "--format", "json")
        self.assertEqual(without_timing(merged), without_timing(whole))

    # ---- 6. the run's identity, the checksum, files that are not partials ----
    def test_identity_of_the_run(self):
        d = self.scratch_dir()
        v0 = "1,0.5;0.5,1"
        base = ["--model", "transformer", "--V0", v0, "--paths", "150", "--T", "0.2", "--dt",
                "0.01", "--threads", "1", "--stop-level", "3"]
        (a,) = self.shards(d, [(0, 70)], run=base, tag="base")

        def with_flag(flag, value):
            run = list(base)
            if flag in run:
                run[run.index(flag) + 1] = value
            else:
                run += [flag] if value is None else [flag, value]
            return run

        # One option at a time, each changing a number of the run; the field that differs is
        # named. --V0's second value differs from "1,0.5;0.5,1" in the last bit of 0.5.
        altered = [("--model", "attention"), ("--V0", "1,0.5000000000000001;0.5000000000000001,1"),
                   ("--T", "0.3"), ("--dt", "0.02"), ("--paths", "160"), ("--seed", "2"),
                   ("--scheme", "milstein-commutative"), ("--stop-level", "4"),
                   ("--blowup-threshold", "1e5"), ("--pd-policy", "count"), ("--tau0", "2"),
                   ("--gamma2", "0.25"), ("--step-control", "increment"),
                   ("--covariance", "diagonal")]
        for flag, value in altered:
            with self.subTest(flag=flag):
                (b,) = self.shards(d, [(70, 150)], run=with_flag(flag, value), tag=flag[2:])
                self.expect_usage_error(["from another run", flag, str(b)], "merge", a, b)
        # Two spellings of one V0 (and of one T) are one run.
        (same,) = self.shards(d, [(70, 150)], run=with_flag("--V0", "1.0,5e-1;0.50,1.000"),
                              tag="spelled")
        self.run_ok("merge", a, same)
        # --out onto a shard: refused, the shard as it was.
        before = a.read_bytes()
        self.expect_usage_error(["--out", "other than the shards"], "merge", a, same, "--out", a)
        self.assertEqual(a.read_bytes(), before)
        # A damaged byte in the middle: the checksum.
        damaged = d / "damaged.bin"
        middle = len(before) // 2
        damaged.write_bytes(before[:middle] + bytes([before[middle] ^ 1]) + before[middle + 1:])
        self.expect_usage_error(["is not a partial result", "checksum"], "merge", damaged, same)
        # The earlier format, without identity and checksum, and files that are not partials.
        old = d / "old.bin"
        old.write_bytes(b"ncsde partial result\ncommand simulate\n" + b"\0" * 64)
        self.expect_usage_error(["earlier version", str(old)], "merge", old, same)
        self.expect_usage_error(["/dev/zero", "not a regular file"], "merge", "/dev/zero",
                                timeout=30)


if __name__ == "__main__":
    main()
