#!/usr/bin/env python3
"""ctest cli_registry: the model registry on the command line
(NCSDE=<path to ncsde> python3 test_registry.py).

 1. `ncsde models` lists every registered model with its parameters;
 2. shaped-tanh runs under coefficients (its drift by hand), simulate and sample-network;
 3. a tiny `ncsde validate --model shaped-tanh` runs on its literal network (no wrong SDEs);
 4. flags of another model, bad values and an unknown model fail with exit code 2 and a message
    naming the flag, the value and the registered models.
"""

from cli_support import CliTestCase, main

SQUARE = "1,0.5;0.5,1"
IDENTITY = "1,0;0,1"


class RegistryCli(CliTestCase):
    def test_listing(self):
        listing = self.run_ok("models")
        for text in ("mlp", "resnet", "attention", "transformer", "shaped-tanh", "--activation",
                     "--gamma2", "networks: literal"):
            self.assertIn(text, listing, f"ncsde models does not list '{text}'")
        entries = self.run_json("models", "--format", "json")
        self.assertEqual(entries[4]["name"], "shaped-tanh")
        self.assertEqual(entries[4]["parameters"][0]["flag"], "--a")

    def test_shaped_tanh_runs(self):
        # tanh, a = 2, V = [[1, .5], [.5, 1]]: b^{ab} = −(1/a²) V^{ab}(V^{aa} + V^{bb}), so
        # b¹² = −1/4 and b¹¹ = −1/2; Σ^{11,11} = 2 (V¹¹)² = 2 (Σ_lin).
        coef = self.run_json("coefficients", "--model", "shaped-tanh", "--a", "2", "--V", SQUARE,
                             "--format", "json")
        self.assertEqual(coef["drift"][0][1], -0.25)
        self.assertEqual(coef["drift"][0][0], -0.5)
        self.assertEqual(coef["diffusion"][0], 2)
        # tanh's drift pulls V back (b^{aa} = −2(V^{aa})²/a²): every path completes. swish's is
        # quadratic and positive (σ''(0) = 1), so its paths may blow up; the run must still work.
        sim = self.run_json("simulate", "--model", "shaped-tanh", "--V0", SQUARE, "--paths", "50",
                            "--dt", "0.01", "--threads", "2", "--format", "json")
        self.assertEqual((sim["paths"], sim["completed"]), (50, 50))
        swish = self.run_json("simulate", "--model", "shaped-tanh", "--activation", "swish",
                              "--V0", SQUARE, "--paths", "50", "--dt", "0.01", "--threads", "2",
                              "--format", "json")
        self.assertEqual(swish["paths"], 50)
        net = self.run_json("sample-network", "--model", "shaped-tanh", "--V0", SQUARE, "--n",
                            "16", "--d", "16", "--networks", "20", "--threads", "2", "--format",
                            "json")
        self.assertEqual(net["sampler"], "literal")

    def test_tiny_validate(self):
        val = self.run_json("validate", "--model", "shaped-tanh", "--n", "8,16", "--networks",
                            "300", "--paths", "300", "--dt", "0.0078125", "--threads", "2",
                            "--format", "json")
        # Two widths and the noise floor.
        self.assertEqual(len(val["rows"]), 3)
        self.assertEqual(val["model"], "shaped-tanh")
        self.assertEqual(val["params"]["a"], 1.0)

    def test_refusals(self):
        cases = [
            ("--gamma2 is not a parameter of shaped-tanh (its parameters: --a, --activation)",
             ["simulate", "--model", "shaped-tanh", "--gamma2", "0.3", "--V0", IDENTITY, "--paths",
              "2"]),
            ("--a is not a parameter of mlp",
             ["coefficients", "--model", "mlp", "--a", "2", "--V", IDENTITY]),
            ("shaped_activation_sde: a must be > 0 and finite (got -1) (flag --a)",
             ["coefficients", "--model", "shaped-tanh", "--a", "-1", "--V", IDENTITY]),
            ("--activation: relu not in",
             ["coefficients", "--model", "shaped-tanh", "--activation", "relu", "--V", IDENTITY]),
            (["--model: foo not in", "shaped-tanh"],
             ["simulate", "--model", "foo", "--V0", IDENTITY]),
            ("shaped-tanh: sampler must be one of literal (got reduced) (flag --sampler)",
             ["sample-network", "--model", "shaped-tanh", "--sampler", "reduced", "--V0", IDENTITY,
              "--n", "8", "--d", "8"]),
            ("variant must be none for model shaped-tanh",
             ["validate", "--model", "shaped-tanh", "--variants", "vpv", "--n", "8", "--networks",
              "10", "--paths", "10"]),
        ]
        for texts, args in cases:
            with self.subTest(args=args):
                self.expect_usage_error(texts, *args)


if __name__ == "__main__":
    main()
