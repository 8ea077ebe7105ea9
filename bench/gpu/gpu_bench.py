#!/usr/bin/python3
"""GPU benchmark: Euler–Maruyama of the shaped transformer covariance SDE (docs/maths.md §3, the
structured noise of §4, the coefficients of `ncsde coefficients --model transformer` with the
library's default parameters), in ns per path-step, on one GPU and the machine's CPU cores:

  ncsde-gpu   ncsde simulate --device cuda (the device engine), the run's own "seconds";
  ncsde-cpu   ncsde simulate --device cpu --threads 0 (every core), the run's own "seconds";
  jax-f64     a jitted JAX loop (jax.jit of a jax.lax.scan over the steps, all paths as one
  jax-f32     (P, m, m) batch), float64 and float32;
  torch-f64   an eager PyTorch loop on the GPU (bench/baselines/torch_em.py's coefficients),
  torch-f32   float64 and float32;

at m = 4, 16, 64, 256 from V₀ = I + C (bench/common.hpp; the identity where I + C does not fit in
one command-line argument, m = 256). Each column is timed after a warm-up run (JAX: the compiling
run, of the full length) and reports the median of --repeats runs. Before timing, the drift and the
exact covariance of the noise map of the JAX and torch coefficients, on the device they are timed
on, are checked against `ncsde coefficients` at V₀ (1e-12 relative, float64), or the script stops.
A column that fails (out of memory, a device the program refuses, a framework that is not
installed) is recorded with its error text.

    python3 bench/gpu/gpu_bench.py --ncsde PROGRAM [--quick] [--repeats 1] [--out results.json]
    python3 bench/gpu/gpu_bench.py --ncsde build/ncsde --cpu-smoke --out /tmp/smoke.json

--cpu-smoke runs without a GPU: tiny sizes, the torch and JAX loops on the CPU and the program's
emulated device (its GPU kernels run on the CPU) in place of cuda; its numbers are not timings.
"""
import os

# ncsde's runs get the environment as it was: numpy_em pins the BLAS threads of this process to one.
_ENV = dict(os.environ)
# JAX takes 75% of the GPU's memory at its first computation unless told to allocate as it goes;
# ncsde's runs, in processes of their own, need that memory too.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "baselines"))
import numpy_em  # noqa: E402  (initial_state, Model, cli_coefficients)

try:
    import torch  # noqa: E402
    import torch_em  # noqa: E402  (TorchModel, b_att, b_relu, factor)
    TORCH_MISSING = None
except ImportError as e:
    torch = torch_em = None
    TORCH_MISSING = f"torch not installed ({e})"

try:
    import jax  # noqa: E402
    import jax.numpy as jnp  # noqa: E402
    jax.config.update("jax_enable_x64", True)
    # float32 products in float32 (JAX may otherwise use TF32 on the GPU; torch does not).
    jax.config.update("jax_default_matmul_precision", "highest")
    JAX_MISSING = None
except ImportError as e:
    jax = jnp = None
    JAX_MISSING = f"jax not installed ({e})"

MODEL = "transformer"
# The library's default parameters (ncsde simulate --help), passed explicitly to every command.
PARAMS = {"c_plus": 0.0, "c_minus": -2.0, "gamma2": 0.5, "tau0": 1.0, "hidden_ratio": 1.0,
          "heads": 1}
COLUMNS = ("ncsde-gpu", "ncsde-cpu", "jax-f64", "jax-f32", "torch-f64", "torch-f32")
# m:paths:steps[:dt]. dt = 2⁻¹⁰ keeps every path positive definite up to m = 64 (T ≤ 0.2); at
# m = 256 from the identity it does not (the first steps leave the cone), 2⁻¹³ does.
PLAN = "4:65536:200,16:16384:100,64:2048:50,256:256:10:0.0001220703125"
QUICK_PLAN = "4:4096:20,16:1024:10,64:128:5,256:16:2:0.0001220703125"
SMOKE_PLAN = "4:64:5,16:32:3"
DEFAULT_DT = 2.0 ** -10
BLOWUP = 1e6  # ncsde's default --blowup-threshold
MAX_ARG = 131072  # Linux's limit on one argument's length (MAX_ARG_STRLEN), the terminating 0 too
# Targets: (column ratio, m) → (comparison, bound).
TARGETS = {("jax_f64_over_ncsde_gpu", 4): (">", 1.0),
           ("jax_f64_over_ncsde_gpu", 16): (">=", 2.0),
           ("jax_f64_over_ncsde_gpu", 64): (">=", 2.0),
           ("jax_f64_over_ncsde_gpu", 256): (">=", 2.0),
           ("ncsde_cpu_over_ncsde_gpu", 64): (">=", 20.0)}


class ColumnError(Exception):
    """A column that could not be measured; its text goes into the results."""


def tr(x):
    return x.swapaxes(-1, -2)


# ---------------------------------------------------------------------------------------------
# JAX: the coefficients of numpy_em.Model / torch_em.TorchModel on jnp arrays.

class JaxModel(numpy_em.Model):
    """numpy_em.Model's coefficients on jnp arrays."""

    def drift(self, v):
        b = self.g2 * jax_b_att(v, self.tau0)
        if self.name == "transformer":
            b = b + self.g2 * jax_b_relu(v, self.c_plus, self.c_minus)
        return b

    def noise(self, v, l, g, z):
        """√k_lin L W Lᵀ + √k_att (ζPV + VPζᵀ)/(mτ₀), W = (G + Gᵀ)/√2, ζ = L Z Lᵀ."""
        m = v.shape[-1]
        lin = l @ g @ tr(l)
        lin = (lin + tr(lin)) * (float(self.sqrt_k_lin) / math.sqrt(2.0))
        pv = v - v.mean(axis=-2, keepdims=True)
        y = (l @ z @ tr(l)) @ pv
        return lin + (y + tr(y)) * (float(self.sqrt_k_att) / (m * self.tau0))


def jax_b_att(v, tau0):
    m = float(v.shape[-1])  # a Python float: the result keeps v's dtype
    row_mean = v.mean(axis=-1)
    grand = row_mean.mean(axis=-1)
    diag = jnp.diagonal(v, axis1=-2, axis2=-1)
    pvp = v - row_mean[..., :, None] - row_mean[..., None, :] + grand[..., None, None]
    pvp_diag = jnp.diagonal(pvp, axis1=-2, axis2=-1)
    tr_pvp = pvp_diag.sum(axis=-1)
    tr_pvpv = (pvp * v).sum(axis=(-1, -2))
    u = 0.5 * (pvp_diag - tr_pvp[..., None] / m)
    vu = (v @ u[..., :, None])[..., 0]
    out = (diag[..., :, None] * vu[..., None, :] + vu[..., :, None] * diag[..., None, :]) / m
    out = out + v * (tr_pvpv / (m * m))[..., None, None]
    return out / (tau0 * tau0)


def jax_b_relu(v, c_plus, c_minus):
    m = v.shape[-1]
    scale = (c_plus - c_minus) ** 2 / (2.0 * math.pi)
    s = jnp.sqrt(jnp.maximum(jnp.diagonal(v, axis1=-2, axis2=-1), 0.0))
    norm = s[..., :, None] * s[..., None, :]
    safe = jnp.where(norm > 0.0, norm, 1.0)
    rho = jnp.clip(v / safe, -1.0, 1.0)
    out = scale * (jnp.sqrt(1.0 - rho * rho) - rho * jnp.arccos(rho)) * norm
    return out * (1.0 - jnp.eye(m, dtype=v.dtype))  # ν(1) = 0 on the diagonal


def jax_factor(v):
    """(V, L) with L Lᵀ = V (batched Cholesky); when some V is not positive definite (the factor
    has NaNs), the batch is projected onto the cone and L is the eigen-factor, as torch_em does."""
    l = jnp.linalg.cholesky(v)

    def eigen(v):
        w, q = jnp.linalg.eigh(v)
        f = q * jnp.sqrt(jnp.maximum(w, 0.0))[..., None, :]
        return f @ tr(f), f

    return jax.lax.cond(jnp.all(jnp.isfinite(l)), lambda v: (v, l), eigen, v)


def jax_run(model, m, paths, steps, dt, dtype):
    """A jitted Euler–Maruyama of `paths` paths for `steps` steps: (V₀, key) ↦ (V_T, alive). The
    key is split on every step; a path that leaves max|V| ≤ BLOWUP (or turns non-finite) is frozen
    at its last state, as torch_em.simulate_model does."""
    sqrt_dt = math.sqrt(dt)

    def step(carry, _):
        v, alive, key = carry
        key, kg, kz = jax.random.split(key, 3)
        g = jax.random.normal(kg, (paths, m, m), dtype)
        z = jax.random.normal(kz, (paths, m, m), dtype)
        v, l = jax_factor(v)
        new = v + dt * model.drift(v) + sqrt_dt * model.noise(v, l, g, z)
        alive = alive & jnp.all(jnp.abs(new) <= BLOWUP, axis=(-1, -2))
        return (jnp.where(alive[:, None, None], new, v), alive, key), None

    @jax.jit
    def run(v0, key):
        v = jnp.broadcast_to(v0, (paths, m, m))
        alive = jnp.ones(paths, dtype=bool)
        (v, alive, _), _ = jax.lax.scan(step, (v, alive, key), None, length=steps)
        return v, alive

    return run


def jax_column(m, v0, paths, steps, dt, dtype, repeats, smoke):
    if JAX_MISSING:
        raise ColumnError(JAX_MISSING)
    if not smoke and jax.default_backend() != "gpu":
        raise ColumnError(f"jax sees no GPU (default backend {jax.default_backend()}: "
                          f"{jax.devices()})")
    dt_ = {"float64": jnp.float64, "float32": jnp.float32}[dtype]
    run = jax_run(JaxModel(MODEL, PARAMS), m, paths, steps, dt, dt_)
    start = jnp.asarray(v0, dtype=dt_)

    def timed(seed):
        t0 = time.perf_counter()
        v, alive = run(start, jax.random.PRNGKey(seed))
        v.block_until_ready()
        alive.block_until_ready()
        return time.perf_counter() - t0, v, alive

    compile_seconds = timed(0)[0]  # compiles, and runs once
    runs = [timed(1 + r) for r in range(repeats)]
    v, alive = np.asarray(runs[-1][1]), np.asarray(runs[-1][2])
    if v.dtype != np.dtype(dtype):
        raise ColumnError(f"the loop computed in {v.dtype}, not {dtype}")
    return framework_entry([r[0] for r in runs], paths, steps, v, alive,
                           compile_and_first_run_seconds=compile_seconds)


# ---------------------------------------------------------------------------------------------
# PyTorch: torch_em's coefficients, the loop of torch_em.simulate_model on a device.

def torch_sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def torch_simulate(model, m, v0, paths, steps, dt, seed, device, dtype):
    """torch_em.simulate_model on `device` in `dtype`: (seconds, V_T, alive)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    v = torch.tensor(v0, dtype=dtype, device=device).expand(paths, m, m).clone()
    alive = torch.ones(paths, dtype=torch.bool, device=device)
    sqrt_dt = math.sqrt(dt)
    torch_sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        g = torch.randn((paths, m, m), generator=gen, device=device, dtype=dtype)
        z = torch.randn((paths, m, m), generator=gen, device=device, dtype=dtype)
        v, l = torch_em.factor(v)
        new = v + dt * model.drift(v) + sqrt_dt * model.noise(v, l, g, z)
        alive &= (new.abs() <= BLOWUP).all(dim=-1).all(dim=-1)
        v = torch.where(alive[:, None, None], new, v)
    torch_sync(device)
    return time.perf_counter() - start, v, alive


def torch_device(smoke):
    if TORCH_MISSING:
        raise ColumnError(TORCH_MISSING)
    if smoke:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ColumnError(f"torch sees no CUDA device (torch {torch.__version__}, "
                          f"built for CUDA {torch.version.cuda})")
    return torch.device("cuda")


def torch_column(m, v0, paths, steps, dt, dtype, repeats, smoke):
    device = torch_device(smoke)
    dt_ = {"float64": torch.float64, "float32": torch.float32}[dtype]
    model = torch_em.TorchModel(MODEL, PARAMS)
    try:
        torch_simulate(model, m, v0, paths, 2, dt, 0, device, dt_)  # warm-up: first-call costs
        runs = [torch_simulate(model, m, v0, paths, steps, dt, 1 + r, device, dt_)
                for r in range(repeats)]
        if runs[-1][1].dtype != dt_:
            raise ColumnError(f"the loop computed in {runs[-1][1].dtype}, not {dtype}")
        v, alive = runs[-1][1].cpu().numpy(), runs[-1][2].cpu().numpy()
        return framework_entry([r[0] for r in runs], paths, steps, v, alive)
    finally:
        if device.type == "cuda":
            torch.cuda.empty_cache()  # the next columns (ncsde's processes) need the memory


def framework_entry(seconds, paths, steps, v, alive, **extra):
    entry = {"ns_per_path_step": statistics.median(seconds) * 1e9 / (paths * steps),
             "seconds": seconds, "blown_up": int((~alive).sum()),
             "terminal_mean_v11": float(v[alive, 0, 0].mean()) if alive.any() else None}
    entry.update(extra)
    return entry


# ---------------------------------------------------------------------------------------------
# The coefficient checks.

def check_coefficients(label, drift, noise, m, ref):
    """Stops unless drift(V₀) and the exact covariance of the noise map (G, Z) ↦ noise(V, G, Z), a
    sum over its 2m² basis inputs (the map is linear), equal `ncsde coefficients` at V₀ to 1e-12
    relative (numpy_em.check_against_cli's test, on the framework and device that are timed)."""
    v = numpy_em.initial_state(m)
    drift_ref, sigma_ref = ref
    k = m * m
    basis = np.eye(k).reshape(k, m, m)
    zeros = np.zeros((k, m, m))
    n = noise(np.broadcast_to(v, (2 * k, m, m)), np.concatenate([basis, zeros]),
              np.concatenate([zeros, basis]))
    flat = np.asarray(n, dtype=np.float64).reshape(2 * k, m * m)
    drift_err = np.abs(np.asarray(drift(v)) - drift_ref).max() / np.abs(drift_ref).max()
    sigma_err = np.abs(flat.T @ flat - sigma_ref).max() / np.abs(sigma_ref).max()
    if not (drift_err <= 1e-12 and sigma_err <= 1e-12):
        sys.exit(f"gpu_bench: {label}, {MODEL}, m = {m}: the coefficients differ from "
                 f"`ncsde coefficients` (drift {drift_err:.3g}, covariance {sigma_err:.3g} "
                 f"relative, tolerance 1e-12): the benchmark would time a different SDE")
    return {"drift_relative_error": float(drift_err), "covariance_relative_error": float(sigma_err)}


def torch_coefficients(device):
    model = torch_em.TorchModel(MODEL, PARAMS)

    def as_tensor(a):
        return torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float64, device=device)

    def noise(v, g, z):
        vt, l = torch_em.factor(as_tensor(v))
        return model.noise(vt, l, as_tensor(g), as_tensor(z)).cpu().numpy()

    return (lambda v: model.drift(as_tensor(v)).cpu().numpy()), noise


def jax_coefficients():
    model = JaxModel(MODEL, PARAMS)

    def noise(v, g, z):
        vj, l = jax_factor(jnp.asarray(v, dtype=jnp.float64))
        return np.asarray(model.noise(vj, l, jnp.asarray(g), jnp.asarray(z)))

    return (lambda v: np.asarray(model.drift(jnp.asarray(v, dtype=jnp.float64)))), noise


def run_checks(cli, sizes, columns, smoke):
    """The checks of the frameworks whose columns run: {framework: {m: errors} or error text}."""
    refs = {m: numpy_em.cli_coefficients(cli, MODEL, PARAMS, numpy_em.initial_state(m))
            for m in sizes}
    out = {}
    if any(c.startswith("torch") for c in columns):
        try:
            device = torch_device(smoke)
            drift, noise = torch_coefficients(device)
            out["torch"] = {"device": str(device)}
            for m in sizes:
                out["torch"][m] = check_coefficients(f"torch on {device}", drift, noise, m,
                                                     refs[m])
        except Exception as e:  # noqa: BLE001  (a framework that cannot run: its columns fail)
            out["torch"] = error_text(e)
    if any(c.startswith("jax") for c in columns):
        try:
            if JAX_MISSING:
                raise ColumnError(JAX_MISSING)
            drift, noise = jax_coefficients()
            out["jax"] = {"device": str(jax.devices()[0])}
            for m in sizes:
                out["jax"][m] = check_coefficients(f"jax on {jax.devices()[0]}", drift, noise, m,
                                                   refs[m])
        except Exception as e:  # noqa: BLE001
            out["jax"] = error_text(e)
    return out


# ---------------------------------------------------------------------------------------------
# ncsde's columns.

def v0_text(v):
    return ";".join(",".join(repr(float(x)) for x in row) for row in v)


def initial_state(m):
    """(V₀, its --V0 text, what it is): I + C where its text fits in one argument, else I."""
    v = numpy_em.initial_state(m)
    text = v0_text(v)
    if len(text) < MAX_ARG:
        return v, text, "I + C, C^{ab} = 0.3/(1 + |a - b|) off the diagonal"
    v = np.eye(m)
    return v, ";".join(",".join("1" if a == b else "0" for b in range(m)) for a in range(m)), \
        "I (the text of I + C does not fit in one command-line argument)"


def run_ncsde(args, device, text, paths, steps, dt, threads=None):
    cmd = [args.ncsde, "simulate", "--model", MODEL, "--V0", text, "--T", repr(steps * dt),
           "--dt", repr(dt), "--paths", str(paths), "--device", device, "--format", "json",
           "--seed", "1", "--c-plus", repr(PARAMS["c_plus"]), "--c-minus", repr(PARAMS["c_minus"]),
           "--gamma2", repr(PARAMS["gamma2"]), "--tau0", repr(PARAMS["tau0"]),
           "--hidden-ratio", repr(PARAMS["hidden_ratio"]), "--heads", str(PARAMS["heads"])]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=_ENV)
    except subprocess.TimeoutExpired:
        raise ColumnError(f"ncsde simulate --device {device}: no result in {args.timeout} s")
    except OSError as e:
        raise ColumnError(f"ncsde simulate --device {device}: could not start it: {e}")
    if p.returncode != 0:
        raise ColumnError(f"ncsde simulate --device {device} exited with {p.returncode}: "
                          f"{p.stderr.strip()[-2000:]}")
    doc = json.loads(p.stdout)
    if round(doc["T"] / doc["dt"]) != steps or doc["paths"] != paths:
        raise ColumnError(f"ncsde ran {doc['paths']} paths of {doc['T']}/{doc['dt']} steps, "
                          f"not {paths} of {steps}")
    return doc


def ncsde_column(args, device, text, paths, steps, dt, threads=None):
    # Warm-up: the program's first-run costs (pages, the driver and its kernel cache), and a
    # refusal of the device found before the long run.
    run_ncsde(args, device, text, min(paths, 1024), min(steps, 2), dt, threads)
    docs = [run_ncsde(args, device, text, paths, steps, dt, threads)
            for _ in range(args.repeats)]
    last = docs[-1]
    ran_on = (last.get("device") or {}).get("device", "cpu")
    if not ran_on.startswith(device.split(":")[0]):
        raise ColumnError(f"asked for --device {device}, ran on {last.get('device')}")
    seconds = [d["seconds"] for d in docs]
    mean = last["terminal_completed"]["mean"]
    return {"ns_per_path_step": statistics.median(seconds) * 1e9 / (paths * steps),
            "seconds": seconds, "threads": last["threads"], "device": last.get("device"),
            "blown_up": last["blown_up"], "pd_violations": last["pd"]["violations"],
            "terminal_mean_v11": mean[0] if mean else None}


# ---------------------------------------------------------------------------------------------

def error_text(e):
    if isinstance(e, ColumnError):
        return str(e)
    text = f"{type(e).__name__}: {e}".strip()
    return text[-3000:] if len(text) > 3000 else text


def parse_plan(text):
    plan = []
    for item in text.split(","):
        fields = item.strip().split(":")
        if len(fields) not in (3, 4):
            sys.exit(f"gpu_bench: --plan entry '{item}' is not m:paths:steps[:dt]")
        m, paths, steps = (int(f) for f in fields[:3])
        dt = float(fields[3]) if len(fields) == 4 else DEFAULT_DT
        plan.append((m, paths, steps, dt))
    return plan


def command_text(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return p.stdout.strip() if p.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def environment():
    env = {"python": platform.python_version(), "numpy": np.__version__,
           "cpu_cores": os.cpu_count(), "cpu": platform.processor() or platform.machine()}
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        if names:
            env["cpu"] = names[0]
    except OSError:
        pass
    smi = command_text(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                        "--format=csv,noheader"])
    env["nvidia_smi_gpus"] = smi.splitlines() if smi else None
    header = command_text(["nvidia-smi"]) or ""
    env["cuda_driver_version"] = (header.split("CUDA Version:")[1].split()[0]
                                  if "CUDA Version:" in header else None)
    env["gpu"] = smi.splitlines()[0].split(",")[0].strip() if smi else None
    if TORCH_MISSING:
        env["torch"] = TORCH_MISSING
    else:
        env["torch"] = torch.__version__
        env["torch_cuda"] = torch.version.cuda
        env["torch_cuda_available"] = torch.cuda.is_available()
        if torch.cuda.is_available():
            env["gpu"] = torch.cuda.get_device_name(0)
            env["torch_matmul_allow_tf32"] = torch.backends.cuda.matmul.allow_tf32
    if JAX_MISSING:
        env["jax"] = JAX_MISSING
    else:
        env["jax"] = jax.__version__
        try:
            import jaxlib
            env["jaxlib"] = jaxlib.__version__
        except (ImportError, AttributeError):
            pass
        try:
            env["jax_backend"] = jax.default_backend()
            env["jax_devices"] = [str(d) for d in jax.devices()]
        except Exception as e:  # noqa: BLE001  (no backend: the JAX columns will say why)
            env["jax_devices"] = error_text(e)
        try:
            env["jax_platform_version"] = jax.devices()[0].client.platform_version
        except Exception:  # noqa: BLE001  (not every version has it)
            pass
        env["jax_float32_matmul_precision"] = "highest"
    return env


def ratio(columns, num, den):
    a, b = columns.get(num, {}), columns.get(den, {})
    if "ns_per_path_step" in a and "ns_per_path_step" in b and b["ns_per_path_step"] > 0:
        return a["ns_per_path_step"] / b["ns_per_path_step"]
    return None


def ratios(m, columns):
    out = {}
    for name, num, den in (("jax_f64_over_ncsde_gpu", "jax-f64", "ncsde-gpu"),
                           ("ncsde_cpu_over_ncsde_gpu", "ncsde-cpu", "ncsde-gpu"),
                           ("torch_f64_over_ncsde_gpu", "torch-f64", "ncsde-gpu")):
        value = ratio(columns, num, den)
        entry = {"value": value}
        if (name, m) in TARGETS:
            op, bound = TARGETS[(name, m)]
            entry["target"] = f"{op} {bound:g}"
            entry["met"] = None if value is None else (value > bound if op == ">"
                                                       else value >= bound)
        out[name] = entry
    return out


def print_table(results, smoke):
    heads = ["m", "paths", "steps"] + list(COLUMNS) + ["jax64/gpu", "cpu/gpu"]
    rows, notes = [], []
    for r in results:
        row = [str(r["m"]), str(r["paths"]), str(r["steps"])]
        for c in COLUMNS:
            e = r["columns"].get(c)
            if e is None:
                row.append("-")
            elif "error" in e:
                notes.append(f"m = {r['m']}, {c}: {e['error']}")
                row.append(f"error[{len(notes)}]")
            else:
                row.append(f"{e['ns_per_path_step']:.4g}")
        for key in ("jax_f64_over_ncsde_gpu", "ncsde_cpu_over_ncsde_gpu"):
            q = r["ratios"][key]
            cell = "-" if q["value"] is None else f"{q['value']:.3g}"
            if "target" in q:
                met = "n/a" if q["met"] is None else "yes" if q["met"] else "no"
                cell += f" ({q['target']}: {met})"
            row.append(cell)
        rows.append(row)
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(heads)]
    print("ns per path-step" + (" (smoke run: not timings)" if smoke else ""))
    print("  ".join(h.rjust(w) for h, w in zip(heads, widths)))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))
    for i, n in enumerate(notes, 1):
        print(f"[{i}] {' '.join(n.split())[:400]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ncsde", required=True, help="the ncsde program (a packed one: its script)")
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"),
                    help="where the results go (default bench/gpu/results.json)")
    ap.add_argument("--plan", help=f"m:paths:steps[:dt],... (default {PLAN}; dt default 2^-10)")
    ap.add_argument("--quick", action="store_true", help=f"smoke sizes on the GPU: {QUICK_PLAN}")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help=f"no GPU: {SMOKE_PLAN}, torch and JAX on the CPU, ncsde's emulated device")
    ap.add_argument("--columns", default=",".join(COLUMNS), help="which columns run")
    ap.add_argument("--repeats", type=int, default=1, help="timed runs per column (median)")
    ap.add_argument("--check-sizes", default="4,16",
                    help="m at which the coefficients are checked (Σ is m²×m²)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per ncsde run")
    args = ap.parse_args()

    if not os.access(args.ncsde, os.X_OK):
        sys.exit(f"gpu_bench: --ncsde {args.ncsde} is not an executable file")
    smoke = args.cpu_smoke
    plan = parse_plan(args.plan or (SMOKE_PLAN if smoke else QUICK_PLAN if args.quick else PLAN))
    columns = [c.strip() for c in args.columns.split(",") if c.strip()]
    unknown = sorted(set(columns) - set(COLUMNS))
    if unknown:
        sys.exit(f"gpu_bench: unknown columns {unknown}; known: {', '.join(COLUMNS)}")
    gpu_device = "emulated" if smoke else "cuda"

    env = environment()
    print(f"gpu_bench: GPU {env.get('gpu')}; {os.cpu_count()} CPU cores; torch: {env['torch']}; "
          f"jax: {env['jax']}", file=sys.stderr, flush=True)
    check_sizes = [int(m) for m in args.check_sizes.split(",") if m.strip()]
    checks = run_checks(args.ncsde, check_sizes, columns, smoke)
    framework_error = {k: v for k, v in checks.items() if isinstance(v, str)}

    results = []
    for m, paths, steps, dt in plan:
        v0, text, v0_name = initial_state(m)
        entry = {"m": m, "paths": paths, "steps": steps, "dt": dt, "T": steps * dt,
                 "v0": v0_name, "columns": {}}
        for c in columns:
            started = time.perf_counter()
            try:
                framework = c.split("-")[0]
                if framework in framework_error:
                    raise ColumnError(framework_error[framework])
                if c == "ncsde-gpu":
                    out = ncsde_column(args, gpu_device, text, paths, steps, dt)
                elif c == "ncsde-cpu":
                    out = ncsde_column(args, "cpu", text, paths, steps, dt, threads=0)
                elif framework == "jax":
                    dtype = "float64" if c.endswith("64") else "float32"
                    out = jax_column(m, v0, paths, steps, dt, dtype, args.repeats, smoke)
                else:
                    dtype = "float64" if c.endswith("64") else "float32"
                    out = torch_column(m, v0, paths, steps, dt, dtype, args.repeats, smoke)
            except Exception as e:  # noqa: BLE001  (recorded; the other columns go on)
                out = {"error": error_text(e)}
                if not isinstance(e, ColumnError):
                    out["traceback"] = traceback.format_exc()[-4000:]
            entry["columns"][c] = out
            shown = (f"{out['ns_per_path_step']:.4g} ns per path-step" if "error" not in out
                     else "error: " + " ".join(out["error"].split())[:200])
            print(f"gpu_bench: m = {m:>3} {c:<9} {shown} "
                  f"({time.perf_counter() - started:.1f} s)", file=sys.stderr, flush=True)
        entry["ratios"] = ratios(m, entry["columns"])
        results.append(entry)

    targets = [{"ratio": name, "m": r["m"], "target": f"{op} {bound:g}",
                "value": r["ratios"][name]["value"], "met": r["ratios"][name]["met"]}
               for r in results for (name, tm), (op, bound) in TARGETS.items() if tm == r["m"]]
    doc = {"benchmark": "Euler–Maruyama of the transformer covariance SDE, ns per path-step",
           "smoke": smoke, "quick": args.quick, "model": MODEL, "parameters": PARAMS,
           "blowup_threshold": BLOWUP, "repeats": args.repeats, "ncsde_gpu_device": gpu_device,
           "environment": env,
           "coefficient_checks": {k: ({str(m): e for m, e in v.items()} if isinstance(v, dict)
                                      else {"error": v}) for k, v in checks.items()},
           "results": results, "targets": targets}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print_table(results, smoke)
    print(f"gpu_bench: wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
