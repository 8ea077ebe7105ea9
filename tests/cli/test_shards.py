#!/usr/bin/env python3
"""ctest cli_shards: shards of a run for batch schedulers (NCSDE=<path to ncsde> python3
test_shards.py).

 1. `ncsde simulate … --paths-range A:B --partial FILE` for a cover of [0, paths) by shards, merged
    by `ncsde merge` in any order, gives the one-process run's JSON summary (timing aside), table
    and CSV byte for byte: cuts inside blocks of 64 paths, a last partial block, stopped paths;
 2. overlapping, missing and mismatched shards, and files that are not partial results, are refused
    with exit code 2 and a message naming the files;
 3. --paths-range and --partial go together, the range must lie in [0, --paths), and --out belongs
    to ncsde merge.
"""

import json
import re

from cli_support import CliTestCase, main

RUN = ["--model", "transformer", "--V0", "1,0.5,0.3;0.5,1,0.4;0.3,0.4,1", "--T", "0.5", "--dt",
       "0.01", "--paths", "150", "--seed", "7", "--threads", "2", "--stop-level", "1.6"]


def without_timing(summary_json):
    d = json.loads(summary_json)
    d.pop("seconds", None)
    return d


def table_without_timing(text):
    return re.sub(r"[0-9.]+(e[-+]?[0-9]+)? s\b", "<time> s", text)


class ShardsCli(CliTestCase):
    def shards(self, d, ranges, run=RUN, tag="part"):
        files = []
        for a, b in ranges:
            f = d / f"{tag}_{a}_{b}.bin"
            self.run_ok("simulate", *run, "--paths-range", f"{a}:{b}", "--partial", f)
            files.append(f)
        return files

    # ---- 1. shards + merge = the one-process run, byte for byte ----
    def test_merge_is_the_whole_run(self):
        d = self.scratch_dir()
        whole_csv = d / "whole.csv"
        whole_json = self.run_ok("simulate", *RUN, "--format", "json", "--out", whole_csv)
        whole_table = self.run_ok("simulate", *RUN)
        self.assertIn('"stopped"', whole_json)
        for ranges in ([(0, 37), (37, 100), (100, 150)], [(0, 64), (64, 150)], [(0, 150)],
                       [(0, 1), (1, 2), (2, 149), (149, 150)]):
            with self.subTest(ranges=ranges):
                files = self.shards(d, ranges)
                merged_csv = d / "merged.csv"
                merged = self.run_ok("merge", *reversed(files), "--format", "json", "--out",
                                     merged_csv)
                self.assertEqual(without_timing(merged), without_timing(whole_json))
                self.assertEqual(merged_csv.read_bytes(), whole_csv.read_bytes())
                table = self.run_ok("merge", *files)
                self.assertEqual(table_without_timing(table), table_without_timing(whole_table))

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
        self.expect_usage_error(["from another run", "seed", str(other)], "merge", a, b, other)
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


if __name__ == "__main__":
    main()
