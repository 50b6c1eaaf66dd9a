#!/usr/bin/env python3
"""Hostile command lines and environments against the dlrig binary.

The libFuzzer targets reach the parsers; this reaches what is around them: the front door's flag
parsing, every path a user can name (a FIFO, a device, /proc/self/mem, a folder, a symlink loop, a
sparse 1 TB file, junk), numbers beyond a double, terminal escapes, and the environment variables
dlrig reads (HOME, XDG_*, HF_*, PATH, COLUMNS, DLRIG_*_LIBRARY ...). The flags are read from each
command's --help, so a new flag is covered without editing this file.

A run is a finding when dlrig
  - is killed by a signal, or exits with a code README.md's table does not list, or with 70 (a bug);
  - outlives the time limit (a one-shot command that waits for ever: a FIFO opened blocking);
  - writes a raw control byte (an unescaped terminal escape) to stdout or stderr, which are pipes;
  - says "terminate called", "what():", an assertion or a sanitizer report.
Each finding is printed with a shell line that reproduces it. Deterministic for a given --seed.

  fuzz/cli_args.py BINARY [--seconds 30] [--seed 1] [--timeout 20] [--show]
Exit status: 0 no finding, 1 findings, 2 usage.
"""
import argparse
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCUMENTED_EXITS = {0, 1, 2, 64, 65, 69, 74, 130}
BAD_TEXT = ("terminate called", "what():", "Assertion", "AddressSanitizer", "runtime error:",
            "LeakSanitizer", "Segmentation fault")
# Commands that run until stopped unless told otherwise: a timeout there is not a hang.
LIVE = {"serve", "watch"}
# bench measures for seconds: only its quick benchmarks (the GPU ones skip here), its verbs on
# stored results, --list and --help.
BENCH_STARTS = [["--list"], ["--help"], ["history"], ["show"], ["compare"],
                ["data.decode", "--quick"], ["storage.read", "--quick"], ["gpu", "--quick"],
                ["nccl.all_reduce", "--quick"], ["gpu.gemm.bf16", "--quick"]]

NUMBERS = ["0", "-1", "-0", "1", "1.5", "1e309", "-1e309", "1e-320", "nan", "inf", "-inf",
           "18446744073709551616", "9" * 400, "0x10", "1,5", " 7", "7 ", "+3", "1e3", "\u0663",
           "1_000", "2147483648", "-2147483649", "0.0000001", "5%", "1/2"]
TEXTS = ["", " ", "\x1b]0;pwned\x07", "\x1b[31mred", "a" * 5000, "%s%s%n", "..", "\u00e9",
         "\u4e2d\u6587", "\t", "--", "-", "=", "@file", "a,b,,c", "\\", "'\"", "\u202e",
         "x" * 255 + "/y", "h100,", ",", "sm_90,sm_" + "9" * 30, "llama-3-8b", "H100",
         "meta-llama/Llama-3.1-8B", "../../../../etc/passwd", "\udcff"]  # a byte not UTF-8


MODELS = ["llama-3-8b", "gpt2", "resnet50", "bert-base-uncased", "Qwen/Qwen2.5-7B", "gpus",
          "links", "7B", "mixtral", "1", "-1", "latest", "data.decode"]


class Sandbox:
    """A scratch folder with the odd files a user can name."""

    def __init__(self, root, build):
        self.root = root
        p = lambda *a: os.path.join(root, *a)
        os.mkdir(p("home"))
        os.mkdir(p("data"))
        os.mkdir(p("dir"))
        os.mkfifo(p("fifo"))
        os.symlink(p("loop"), p("loop"))
        os.symlink(p("dir"), p("dir", "self"))
        with open(p("empty"), "w"):
            pass
        with open(p("junk"), "wb") as f:
            f.write(bytes(range(256)) * 4)
        with open(p("json_junk"), "w") as f:
            f.write('{"schema_version": 1e999, "gpus": [{"memory_total": -1}], "x": "\\u0000"}')
        with open(p("nul"), "wb") as f:
            f.write(b"\0" * 4096)
        with open(p("sparse"), "wb") as f:
            f.truncate(1 << 40)
        with open(p("esc\x1b[2J"), "w") as f:
            f.write("x")
        self.paths = [p("fifo"), p("loop"), p("dir"), p("empty"), p("junk"), p("json_junk"),
                      p("nul"), p("sparse"), p("esc\x1b[2J"), p("missing", "file"), "/dev/zero",
                      "/dev/null", "/proc/self/mem", "/", p("home"), "relative/path",
                      p("data", "results.db")]
        self.home = p("home")
        self.data = p("data")
        self.root = root
        self.build = build
        self.env = {}  # what the values chosen for this run need in the environment
        self.count = 0
        data = os.path.join(REPO, "tests", "data")
        files = lambda d: sorted(os.path.join(data, d, f) for f in os.listdir(os.path.join(data, d))
                                 if os.path.isfile(os.path.join(data, d, f)))
        machines = sorted(os.path.join(data, d) for d in os.listdir(data)
                          if os.path.isdir(os.path.join(data, d, "sys")))
        snapshots = files("snapshots") + files("collect_env")
        # A flag's name -> the fixtures it takes (copied and mutated half the time).
        # Quantised checkpoints' configs: a published one with each kind of quantization_config.
        quantised = []
        with open(os.path.join(data, "models", "qwen3-8b.json")) as f:
            base = f.read().rstrip().rstrip("}")
        for i, quant in enumerate([
                '{"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": false}',
                '{"quant_method": "awq", "w_bit": 4, "q_group_size": 128, "version": "GEMM"}',
                '{"load_in_4bit": true, "bnb_4bit_use_double_quant": true}',
                '{"quant_method": "fp8", "weight_block_size": [128, 128]}',
                '{"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": '
                '{"num_bits": 8, "strategy": "channel"}}}}',
                '{"quant_method": "hqq", "nbits": 4}']):
            quantised.append(p(f"quantised{i}.json"))
            with open(quantised[-1], "w") as f:
                f.write(base + ', "quantization_config": ' + quant + "}")
        self.fixtures = {"sysroot": machines, "from": snapshots,
                         "model": files("models") + quantised,
                         "replay": files("recordings"), "prices": files("pick"),
                         "data": [p("data")]}

    def mutant(self, rng, path):
        """A mutated copy of the file at `path`."""
        with open(path, "rb") as f:
            text = f.read()
        self.count += 1
        out = os.path.join(self.root, f"mutant{self.count % 50}{os.path.splitext(path)[1]}")
        with open(out, "wb") as f:
            f.write(mutate(rng, text))
        return out

    def fixture(self, rng, name):
        path = rng.choice(self.fixtures[name])
        if name == "sysroot":
            return self.machine(rng, path)
        return path if os.path.isdir(path) or rng.random() < 0.5 else self.mutant(rng, path)

    def machine(self, rng, path):
        """A fixture machine as scripts/fixture runs it (its fake NVML scenario, pci.ids, its
        .dlrig/env), a third of the time copied with one to three of its files mutated, replaced by
        a FIFO, a symlink loop or nothing."""
        nvml = os.path.join(path, "nvml.json")
        fake = os.path.join(self.build, "tests", "fake_nvml", "libnvidia-ml-fake.so")
        if os.path.isfile(nvml) and os.path.isfile(fake):
            self.env.update({"DLRIG_NVML_LIBRARY": fake, "DLRIG_FAKE_NVML_SCENARIO": nvml})
        self.env["DLRIG_PCI_IDS"] = os.path.join(REPO, "tests", "data", "pci.ids")
        if os.path.isfile(os.path.join(path, ".dlrig", "env")):
            with open(os.path.join(path, ".dlrig", "env")) as f:
                for line in f:
                    if "=" in line and not line.startswith("#"):
                        k, v = line.rstrip("\n").split("=", 1)
                        self.env[k] = v
        if rng.random() < 0.66:
            return path
        copy = os.path.join(self.root, "machine")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(path, copy, symlinks=True)
        files = sorted(os.path.join(d, f) for d, _, fs in os.walk(copy) for f in fs
                       if os.path.isfile(os.path.join(d, f))
                       and not os.path.islink(os.path.join(d, f)))
        for victim in rng.sample(files, min(len(files), rng.randint(1, 3))):
            if victim.endswith("nvml.json"):
                with open(victim, "rb") as f:
                    if re.search(rb"hang|sleep|abort", f.read()):
                        continue  # the fake would wait or abort as told
            op = rng.random()
            if op < 0.7:
                shutil.move(self.mutant(rng, victim), victim)
            elif op < 0.8:
                os.remove(victim)
            elif op < 0.9:
                os.remove(victim)
                os.mkfifo(victim)
            else:
                os.remove(victim)
                os.symlink(victim, victim)
        if "DLRIG_FAKE_NVML_SCENARIO" in self.env:
            self.env["DLRIG_FAKE_NVML_SCENARIO"] = os.path.join(copy, "nvml.json")
        return copy


def mutate(rng, text):
    """One to three edits of a fixture: a number made extreme, a line dropped, doubled or cut, a
    control byte, a truncation."""
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(6)
        numbers = list(re.finditer(rb"-?\d+(\.\d+)?(e[-+]?\d+)?", text))
        lines = text.split(b"\n")
        if op == 0 and numbers:
            m = rng.choice(numbers)
            text = text[:m.start()] + rng.choice(NUMBERS).encode() + text[m.end():]
        elif op == 1 and len(lines) > 1:
            del lines[rng.randrange(len(lines))]
            text = b"\n".join(lines)
        elif op == 2 and lines:
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i] * rng.choice([1, 2, 1000]))
            text = b"\n".join(lines)
        elif op == 3 and text:
            i = rng.randrange(len(text))
            text = text[:i] + bytes([rng.choice([0, 7, 27, 0x80, 0xff, 0x22, 0x2c])]) + text[i:]
        elif op == 4 and text:
            text = text[:rng.randrange(len(text))]
        elif op == 5 and numbers:
            m = rng.choice(numbers)
            text = text[:m.start()] + b'"' + m.group(0) + b'"' + text[m.end():]
    return text


def choices_of(kind, text):
    """The values --help names for a flag: CLI11's {a,b}, "a | b | c", the ends of [LO to HI]."""
    found = []
    m = re.search(r"\{([^}]*)\}", kind)
    if m:
        found += m.group(1).split(",")
    if " | " in text:
        pieces = text.split(" | ")
        pieces[0] = re.sub(r"^.*:\s*", "", pieces[0])  # "Serving weights: int8"
        found += [re.split(r"[\s(]", piece.strip())[0] for piece in pieces]
    m = re.search(r"\[(\S+) to (\S+)\]", text)
    if m:
        lo, hi = float(m.group(1)), float(m.group(2))
        found += [m.group(1), m.group(2), f"{hi:.17g}", f"{lo + (hi - lo) / 3:.6g}",
                  f"{hi * 1.0000001:.17g}", f"{lo / 2:.17g}"]
    return [f for f in found if f]


def flags_of(binary, args):
    """(flags taking a value with the values --help names, boolean flags, subcommands) from
    `dlrig ... --help`."""
    out = subprocess.run([binary, *args, "--help"], capture_output=True, text=True,
                         timeout=30, errors="replace").stdout
    valued, boolean, subs = {}, [], []
    section, last = "", None
    for line in out.splitlines():
        if last and re.match(r"^\s{20,}\S", line):  # a flag's description on its own line
            valued[last] += choices_of("", line.strip())
            continue
        last = None
        if re.match(r"^[A-Z][A-Za-z ]*:\s*$", line):
            section = line.strip().rstrip(":").upper()
            continue
        # CLI11: "  -f,--flag TYPE  description": one space before a value's type, two before text.
        # "Excludes: --json" and "Needs: ..." follow a flag that takes no value.
        m = re.match(r"^\s+(?:-\w,\s*)?(--[a-z0-9][a-z0-9-]*)( (\S+))?", line)
        if m and m.group(1) not in ("--help", "--version"):
            if m.group(3) and not m.group(3).endswith(":"):
                last = m.group(1)
                valued[last] = choices_of(m.group(3), line[m.end():])
            else:
                boolean.append(m.group(1))
            continue
        m = re.match(r"^\s+([a-z][a-z0-9-]*)\s{2,}\S", line)
        if m and "SUBCOMMAND" in section:
            subs.append(m.group(1))
    return valued, boolean, subs


KB_TOPICS = ["gpus", "archs", "cuda", "torch", "links", "models", "cloud"]

# Values of the flags whose --help names none: what users type, and its edges.
VALUES = {
    "gpu": ["H100 SXM", "RTX 4090", "A100 80GB PCIe", "h100", "T4", "MI300X", "nope"],
    "params": ["7B", "110M", "70B", "1e15", "0.5", "1T", "7b", "-7B"],
    "budget": ["5000USD", "0USD", "1e9USD", "5000", "5000EUR", "$5000"],
    "max-per-hour": ["4USD", "0.01USD", "1e300USD"],
    "within": ["30d", "1h", "0h", "1e9d", "2w", "90min"],
    "torch": ["2.5.1", "1.13.1+cu117", "99.0", "2", "2.5.1.dev20240101"],
    "transformers": ["4.46.3", "5.0.0", "4"],
    "network": ["InfiniBand NDR", "100GbE", "NVLink"],
    "listen": ["127.0.0.1:0", ":0", "[::1]:0", "localhost:99999", "256.0.0.1:80"],
    "rendezvous": ["127.0.0.1:1", "host", ":", "127.0.0.1:0"],
    "explain": ["link.egpu-bandwidth", "gpu", "*"],
    "min-memory": ["24GB", "0GB", "1e30GB", "24GiB", "24"],
    "cpu-vs-gpu": ["gpt2", "resnet50", "llama-3-8b"],
}


def value_for(rng, flag, choices, box):
    name = flag.lstrip("-")
    if name in VALUES and rng.random() < 0.8:
        return rng.choice(VALUES[name])
    if name in box.fixtures and rng.random() < 0.8:
        return box.fixture(rng, name)
    if choices and rng.random() < 0.8:
        return rng.choice(choices)
    pathy = any(k in name for k in ("from", "file", "path", "db", "data", "sysroot", "record",
                                    "replay", "prices", "python", "out", "model", "snapshot",
                                    "collect"))
    pool = (box.paths * 3 + TEXTS if pathy else NUMBERS * 2 + TEXTS)
    return rng.choice(pool)


ENV_NAMES = ["HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE", "PATH",
             "LD_LIBRARY_PATH", "COLUMNS", "NO_COLOR", "USER", "VIRTUAL_ENV", "CONDA_PREFIX",
             "CUDA_VISIBLE_DEVICES", "TORCH_EXTENSIONS_DIR", "DLRIG_NVML_LIBRARY",
             "DLRIG_CUDA_LIBRARY", "DLRIG_CUBLASLT_LIBRARY", "DLRIG_NCCL_LIBRARY",
             "DLRIG_OPENBLAS_LIBRARY", "DLRIG_BENCH_STORAGE_MIB", "DLRIG_BENCH_EXPECT",
             "DLRIG_STREAM_VECTOR_BYTES", "OPENBLAS_NUM_THREADS", "PYENV_VERSION", "PWD"]


def environment(rng, box):
    """The run's environment: a clean one, what its fixture machine sets, then hostile values."""
    env = {"PATH": "/usr/bin:/bin", "HOME": box.home, "XDG_DATA_HOME": box.data, "LANG": "C.UTF-8",
           "DLRIG_BENCH_STORAGE_MIB": "8", **box.env}
    for _ in range(rng.choice([0, 0, 1, 2])):
        name = rng.choice(ENV_NAMES)
        env[name] = rng.choice(box.paths + NUMBERS + TEXTS)
    return {k: v for k, v in env.items() if "\0" not in v}


def finding(rc, out, err, timed_out, live, colour):
    if timed_out:
        return None if live else "still running at the time limit"
    if rc < 0:
        return f"killed by signal {signal.Signals(-rc).name}"
    if rc == 70:
        return "exit 70 (a bug in dlrig)"
    if rc not in DOCUMENTED_EXITS:
        return f"exit {rc}, not in README's table"
    for text in BAD_TEXT:
        if text.encode() in err or text.encode() in out:
            return f"says {text!r}"
    for name, stream in (("stdout", out), ("stderr", err)):
        if colour:  # --color always: SGR sequences only, nothing else raw
            stream = re.sub(rb"\x1b\[[0-9;]*m", b"", stream)
        raw = re.search(rb"[\x00-\x08\x0b-\x1f\x7f]", stream)
        if raw:
            return f"a raw control byte {raw.group(0)!r} on {name}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--show", action="store_true", help="print every command line run")
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    rng = random.Random(a.seed)

    commands = {}
    _, _, top = flags_of(binary, [])
    for cmd in top:
        valued, boolean, subs = flags_of(binary, [cmd])
        commands[(cmd,)] = (valued, boolean)
        for sub in subs:
            commands[(cmd, sub)] = flags_of(binary, [cmd, sub])[:2]
    if not commands:
        print("cli_args: no commands found in --help", file=sys.stderr)
        return 2

    findings, runs, exits, slowest = [], 0, {}, (0.0, "")
    end = time.monotonic() + a.seconds
    with tempfile.TemporaryDirectory(prefix="dlrig-cli-args-") as root:
        box = Sandbox(root, os.path.dirname(binary))
        keys = sorted(commands)
        while time.monotonic() < end:
            path = rng.choice(keys)
            valued, boolean = commands[path]
            argv = [binary, *path]
            box.env = {}
            if path[0] == "bench":
                argv += rng.choice(BENCH_STARTS)
            if path[0] in LIVE and rng.random() < 0.9:
                argv.append("--once")
            for _ in range(rng.choice([1, 1, 2, 3])):
                if valued and (not boolean or rng.random() < 0.75):
                    flag = rng.choice(sorted(valued))
                    value = value_for(rng, flag, valued[flag], box)
                    argv += ([f"{flag}={value}"] if rng.random() < 0.3 else [flag, value])
                elif boolean:
                    argv.append(rng.choice(boolean))
            if path[0] == "kb" and rng.random() < 0.8:
                argv.append(rng.choice(KB_TOPICS))
            takes_positional = path[0] in ("fit", "pick", "kb", "bench")
            if rng.random() < (0.6 if takes_positional else 0.05):  # a positional: fit's model, bench's names, kb's topic, or a stray one
                argv.append(box.fixture(rng, "model") if rng.random() < 0.5 else
                            rng.choice(TEXTS + box.paths + MODELS))
            env = environment(rng, box)
            live = path[0] in LIVE and "--once" not in argv
            timeout = 2 if live else a.timeout

            started = time.monotonic()
            p = subprocess.Popen([x.encode("utf-8", "surrogateescape") for x in argv],
                                 env={k.encode(): v.encode("utf-8", "surrogateescape")
                                      for k, v in env.items()},
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, cwd=box.data, start_new_session=True)
            try:
                out, err = p.communicate(timeout=timeout)
                rc, timed_out = p.returncode, False
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)  # its whole group: what it started too
                out, err = p.communicate()
                rc, timed_out = None, True
            runs += 1
            took = time.monotonic() - started
            if not live and took > slowest[0]:
                slowest = (took, shlex.join(argv[1:4]))
            exits[("timeout" if timed_out else rc)] = exits.get("timeout" if timed_out else rc, 0) + 1
            colour = "--color=always" in argv or any(
                a == "--color" and b == "always" for a, b in zip(argv, argv[1:]))
            if a.show:
                print(rc, shlex.join(argv), err[:120], flush=True)
            why = finding(rc, out, err, timed_out, live, colour)
            if why:
                envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
                findings.append(why)
                print(f"FINDING: {why}\n  env -i {envs} {shlex.join(argv)}\n  stderr: "
                      f"{err[-300:]!r}", flush=True)
    print(f"cli_args: {runs} runs of {len(commands)} commands in {a.seconds:.0f} s, "
          f"{len(findings)} findings (seed {a.seed}); exits: "
          + ", ".join(f"{k}: {v}" for k, v in sorted(exits.items(), key=str))
          + f"; slowest one-shot run {slowest[0]:.1f} s ({slowest[1]} ...)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
