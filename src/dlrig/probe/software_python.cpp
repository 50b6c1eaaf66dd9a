// Python environments: the python3 on PATH, the active venv and conda env, conda envs under the
// usual roots, and --python PATH. Everything is read from files (pyvenv.cfg, torch/version.py,
// dist-info folder names, conda-meta); no interpreter starts unless --deep asks for it.
#include "dlrig/platform/process.hpp"
#include "dlrig/probe/software_parse.hpp"
#include "dlrig/probe/software_probe.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>

namespace dlrig {

namespace {

std::string env_value(const ProbeContext &ctx, const std::string &name) {
  auto it = ctx.env.find(name);
  return it == ctx.env.end() ? std::string() : it->second;
}

// HOME ready for "/name" to be joined to it: trailing slashes removed as Python's
// os.path.expanduser removes them ("/home/alice/" gives /home/alice/.venv, "/" gives /.venv, not
// //.venv); nullopt when HOME is unset or empty.
OptStr home_prefix(const ProbeContext &ctx) {
  auto home = env_value(ctx, "HOME");
  if (home.empty())
    return std::nullopt;
  while (!home.empty() && home.back() == '/')
    home.pop_back();
  return home;
}

void add_unique(std::vector<std::string> &v, const std::string &s) {
  if (std::find(v.begin(), v.end(), s) == v.end())
    v.push_back(s);
}

// The environment prefix of an interpreter path: /x/bin/python3 -> /x.
std::string prefix_of_interpreter(const std::string &interpreter) {
  auto dir = parent_path(interpreter);
  return base_name(dir) == "bin" ? parent_path(dir) : dir;
}

std::string kind_of(const ProbeContext &ctx, const std::string &root) {
  if (ctx.fs.exists(root + "/pyvenv.cfg"))
    return "venv";
  if (ctx.fs.is_directory(root + "/conda-meta"))
    return "conda";
  return "system";
}

std::string interpreter_in(const ProbeContext &ctx, const std::string &root) {
  for (const char *name : {"python3", "python"})
    if (ctx.fs.exists(root + "/bin/" + name))
      return root + "/bin/" + name;
  return root + "/bin/python3";
}

OptStr python_version(const ProbeContext &ctx, const PythonEnv &env, const std::string &root) {
  if (auto cfg = ctx.fs.read(root + "/pyvenv.cfg", 1 << 16))
    if (auto v = parse_pyvenv_version(*cfg))
      return v;
  OptStr best;
  for (const auto &name : ctx.fs.list(root + "/lib"))
    if (auto v = python_version_from_dirname(name))
      if (ctx.fs.is_directory(root + "/lib/" + name + "/site-packages") ||
          ctx.fs.exists(root + "/lib/" + name + "/os.py"))
        best = v; // the list is sorted; keep the last (python3.12 after python3.11)
  if (best)
    return best;
  // /usr/bin/python3 -> python3.11
  if (auto target = ctx.fs.readlink(env.interpreter))
    if (auto v = python_version_from_dirname(base_name(*target)))
      return v;
  return std::nullopt;
}

std::vector<std::string> site_dirs(const ProbeContext &ctx, const PythonEnv &env,
                                   const std::string &root) {
  std::vector<std::string> dirs;
  auto add = [&](const std::string &d) {
    if (ctx.fs.is_directory(d))
      add_unique(dirs, d);
  };
  std::vector<std::string> versions;
  if (env.python_version) {
    auto v = *env.python_version;
    auto second_dot = v.find('.', v.find('.') + 1);
    versions.push_back(v.substr(0, second_dot));
  }
  for (const auto &name : ctx.fs.list(root + "/lib"))
    if (auto v = python_version_from_dirname(name))
      add_unique(versions, *v);
  for (const auto &v : versions)
    add(root + "/lib/python" + v + "/site-packages");
  if (env.kind == std::optional<std::string>("system")) {
    // Debian: pip installs to local/.../dist-packages and ~/.local; apt to python3/dist-packages.
    auto home = home_prefix(ctx);
    for (const auto &v : versions) {
      if (home)
        add(*home + "/.local/lib/python" + v + "/site-packages");
      add(root + "/local/lib/python" + v + "/dist-packages");
      add(root + "/lib/python" + v + "/dist-packages");
    }
    add(root + "/lib/python3/dist-packages");
  }
  return dirs;
}

// Torch extensions pip compiled on this machine: in each site folder, a dist-info whose WHEEL
// says it was built here (linux_* tag) and whose METADATA requires torch.
std::vector<std::string> extensions_built_here(const ProbeContext &ctx,
                                               const std::vector<std::string> &sites) {
  std::vector<std::string> out;
  for (const auto &site : sites)
    for (const auto &name : ctx.fs.list(site)) {
      auto d = parse_dist_info_name(name);
      if (!d || d->name == "torch")
        continue;
      auto wheel = ctx.fs.read(site + "/" + name + "/WHEEL", 1 << 12);
      if (!wheel || wheel_built_locally(*wheel) != OptBool(true))
        continue;
      if (auto meta = ctx.fs.read(site + "/" + name + "/METADATA", 1 << 16);
          meta && metadata_requires(*meta, "torch"))
        add_unique(out, d->name + "==" + d->version);
    }
  return out;
}

// torch.utils.cpp_extension's JIT build folder when it holds anything: $TORCH_EXTENSIONS_DIR,
// else the user cache ($XDG_CACHE_HOME or ~/.cache) + /torch_extensions.
OptStr torch_extensions_cache(const ProbeContext &ctx) {
  auto dir = env_value(ctx, "TORCH_EXTENSIONS_DIR");
  if (dir.empty()) {
    auto cache = env_value(ctx, "XDG_CACHE_HOME");
    if (auto home = home_prefix(ctx); cache.empty() && home)
      cache = *home + "/.cache";
    if (cache.empty())
      return std::nullopt;
    dir = cache + "/torch_extensions";
  }
  return ctx.fs.list(dir).empty() ? OptStr{} : OptStr{dir};
}

void read_packages(const ProbeContext &ctx, PythonEnv &env, const std::string &root,
                   SoftwareInfo &sw) {
  auto dirs = site_dirs(ctx, env, root);
  std::map<std::string, std::pair<std::string, std::string>> dists; // name -> (version, site)
  for (const auto &site : dirs)
    for (const auto &name : ctx.fs.list(site))
      if (auto d = parse_dist_info_name(name))
        dists.emplace(d->name, std::make_pair(d->version, site));
  auto dist = [&](const std::string &name) -> OptStr {
    auto it = dists.find(name);
    return it == dists.end() ? OptStr{} : OptStr{it->second.first};
  };

  // conda packages (pytorch, cudnn, nccl from the conda channels carry no dist-info).
  std::map<std::string, std::string> conda;
  for (const auto &name : ctx.fs.list(root + "/conda-meta"))
    if (auto d = parse_conda_meta_name(name))
      conda.emplace(d->name, d->version);

  // The site folder holding torch is the one that counts; pip and apt may both have one.
  for (const auto &site : dirs)
    if (ctx.fs.exists(site + "/torch/version.py")) {
      env.site_packages = site;
      break;
    }
  if (!env.site_packages && !dirs.empty())
    env.site_packages = dirs.front();

  auto companion = [&](const std::string &pkg) -> OptStr {
    for (const auto &site : dirs)
      if (auto text = ctx.fs.read(site + "/" + pkg + "/version.py", 1 << 16))
        if (auto v = parse_python_version_assignment(*text))
          return v;
    return dist(pkg);
  };
  env.torchvision = companion("torchvision");
  env.torchaudio = companion("torchaudio");
  for (const char *tf : {"tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly"})
    if (!env.tensorflow)
      env.tensorflow = dist(tf);
  env.jax = dist("jax");
  env.jaxlib = dist("jaxlib");
  env.transformers = dist("transformers");
  for (const auto &[name, info] : dists) {
    // jax-cuda12-plugin / jax-cuda12-pjrt: the CUDA build of jaxlib.
    if (name.rfind("jax-cuda", 0) == 0) {
      auto flavour = name.substr(4, name.find('-', 4) - 4);
      env.jaxlib_cuda = flavour;
    }
    if (name.rfind("nvidia-", 0) == 0)
      env.nvidia_wheels[name] = info.first;
  }
  if (!env.jaxlib_cuda && env.jaxlib)
    if (auto variant = torch_variant(*env.jaxlib); variant && variant->rfind("cuda", 0) == 0)
      env.jaxlib_cuda = variant->substr(0, variant->find('.'));

  auto wheel = [&](const std::string &lib) -> std::optional<std::pair<std::string, std::string>> {
    for (const auto &[name, info] : dists)
      if (name == "nvidia-" + lib + "-cu11" || name == "nvidia-" + lib + "-cu12" ||
          name == "nvidia-" + lib + "-cu13" || name == "nvidia-" + lib)
        return std::make_pair(info.first, info.second);
    return std::nullopt;
  };
  auto conda_pkg = [&](const std::string &name) -> OptStr {
    auto it = conda.find(name);
    return it == conda.end() ? OptStr{} : OptStr{it->second};
  };
  if (env.site_packages) {
    auto text = ctx.fs.read(*env.site_packages + "/torch/version.py", 1 << 16);
    if (text) {
      TorchInstall t;
      auto parsed = parse_torch_version_py(*text);
      t.path = *env.site_packages + "/torch";
      t.version = parsed.version;
      if (!t.version) {
        t.version = dist("torch");
        ctx.note("software.python_envs.torch.version", *t.path + "/version.py",
                 "no __version__ line; the version comes from the dist-info folder name");
      }
      if (t.version)
        t.variant = torch_variant(*t.version);
      t.cuda = parsed.cuda;
      t.hip = parsed.hip;
      // CPU-only is what the build carries, whatever its name says: conda's cpuonly builds and
      // Debian's python3-torch have no +cpu suffix, only `cuda = None` in version.py.
      if (parsed.cuda || parsed.hip || parsed.xpu)
        t.cpu_only = false;
      else if (parsed.cuda_none)
        t.cpu_only = true;
      if (auto w = wheel("cudnn"))
        t.cudnn = w->first;
      else
        t.cudnn = conda_pkg("cudnn");
      if (auto w = wheel("nccl"))
        t.nccl = w->first;
      else
        t.nccl = conda_pkg("nccl");
      env.torch = std::move(t);
      env.built_here = extensions_built_here(ctx, dirs);
    }
  }

  // The bundled copies, next to the system installs in software.libraries.
  struct Bundled {
    std::vector<FoundLibrary> CudaLibraries::*list;
    const char *lib;
  };
  for (const auto &b :
       {Bundled{&CudaLibraries::cudnn, "cudnn"}, Bundled{&CudaLibraries::nccl, "nccl"},
        Bundled{&CudaLibraries::cublas, "cublas"}}) {
    if (auto w = wheel(b.lib)) {
      FoundLibrary lib{w->second + "/nvidia/" + b.lib + "/lib", w->first, "pip", false};
      if (b.list == &CudaLibraries::cudnn)
        lib.members = cudnn_members(ctx.fs.list(lib.path));
      (sw.libraries.*b.list).push_back(std::move(lib));
    } else if (auto c = conda_pkg(b.lib == std::string("cublas") ? "libcublas" : b.lib)) {
      FoundLibrary lib{root + "/lib", c, "conda", false};
      if (b.list == &CudaLibraries::cudnn)
        lib.members = cudnn_members(ctx.fs.list(lib.path));
      (sw.libraries.*b.list).push_back(std::move(lib));
    }
  }
  if (auto w = wheel("tensorrt-libs"))
    sw.libraries.tensorrt.push_back(
        FoundLibrary{w->second + "/tensorrt_libs", w->first, "pip", false});
}

struct Candidate {
  std::string root;
  std::string interpreter;
  OptStr name;
  bool active = false;
  std::string found_by;
};

// The Python snippet --deep runs: asks torch itself, prints one marked JSON line. The CUDA
// initialisation error comes from the warning is_available() raises or from torch.cuda.init().
constexpr const char *kDeepSnippet = R"PY(
import json, warnings
r = {}
try:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import torch
        r["cuda_available"] = bool(torch.cuda.is_available())
        r["device_count"] = int(torch.cuda.device_count())
        r["arch_list"] = list(torch.cuda.get_arch_list())
    msgs = [str(w.message) for w in caught if "CUDA" in str(w.message)]
    if not r["cuda_available"]:
        try:
            torch.cuda.init()
        except Exception as e:
            msgs.append(str(e))
    if msgs:
        r["error"] = msgs[-1]
except Exception as e:
    r["error"] = type(e).__name__ + ": " + str(e)
print("DLRIG_DEEP " + json.dumps(r))
)PY";

DeepProbe deep_from(const ProcessResult &run, std::chrono::milliseconds timeout) {
  DeepProbe d;
  d.ran = false;
  if (!run.started) {
    d.error = "could not start the interpreter: " + run.error;
  } else if (run.timed_out) {
    d.error = fmt::format("no answer within {:.1f} s; the interpreter was stopped",
                          static_cast<double>(timeout.count()) / 1000.0);
  } else if (run.out.find(kDeepMarker) == std::string::npos && (run.signal || run.exit_code != 0)) {
    auto tail = run.err.size() > 300 ? run.err.substr(run.err.size() - 300) : run.err;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' '))
      tail.pop_back();
    d.error = run.signal ? fmt::format("the interpreter was ended by signal {}", *run.signal)
                         : fmt::format("the interpreter exited with code {}", *run.exit_code);
    if (!tail.empty())
      *d.error += ": " + tail;
  } else {
    d = parse_deep_output(run.out);
  }
  return d;
}

void run_deep(const ProbeContext &ctx, std::vector<PythonEnv> &envs) {
  const auto &root = ctx.options.sysroot;
  bool fixture = !(root.empty() || root == "/");
  std::vector<ProcessSpec> specs;
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < envs.size(); ++i) {
    auto &env = envs[i];
    std::string program = env.interpreter;
    if (fixture) {
      // Under a fixture, only executable scripts inside the fixture run (fake interpreters).
      auto inside = ctx.fs.canonical(env.interpreter);
      auto head = inside ? ctx.fs.read(*inside, 2) : Result<std::string>(make_error(""));
      if (!inside || !head || *head != "#!" || !is_executable_file(root + *inside)) {
        env.deep = DeepProbe{false,
                             std::nullopt,
                             std::nullopt,
                             {},
                             "not run: under --sysroot only executable scripts inside the "
                             "sysroot are run"};
        continue;
      }
      program = root + *inside;
    } else if (!is_executable_file(program)) {
      env.deep =
          DeepProbe{false, std::nullopt, std::nullopt, {}, "not run: not an executable file"};
      continue;
    }
    specs.push_back(ProcessSpec{{program, "-c", kDeepSnippet}, ctx.env});
    which.push_back(i);
  }
  auto runs = run_processes(specs, ctx.options.deep_timeout);
  for (std::size_t k = 0; k < runs.size(); ++k) {
    auto &env = envs[which[k]];
    env.deep = deep_from(runs[k], ctx.options.deep_timeout);
    if (env.torch && !env.deep->arch_list.empty()) {
      env.torch->arch_list = env.deep->arch_list;
      env.torch->arch_list_source = "deep";
    }
  }
}

} // namespace

// The folders conda, mamba and micromamba install into (each a base env with envs/ under it);
// ~/.conda holds `conda create -n` envs when the base is not writable.
std::vector<std::string> conda_bases(const ProbeContext &ctx) {
  std::vector<std::string> bases;
  if (auto home = home_prefix(ctx))
    for (const char *d :
         {"miniconda3", "anaconda3", "miniforge3", "mambaforge", "micromamba", ".conda"})
      bases.push_back(*home + "/" + d);
  for (const char *d : {"/opt/conda", "/opt/miniconda3", "/opt/anaconda3", "/opt/miniforge3"})
    bases.emplace_back(d);
  return bases;
}

std::vector<std::string> conda_env_prefixes(const ProbeContext &ctx) {
  std::vector<std::string> prefixes;
  for (const auto &base : conda_bases(ctx)) {
    if (ctx.fs.is_directory(base + "/conda-meta"))
      add_unique(prefixes, base);
    for (const auto &name : ctx.fs.list(base + "/envs"))
      if (ctx.fs.is_directory(base + "/envs/" + name + "/conda-meta"))
        add_unique(prefixes, base + "/envs/" + name);
  }
  auto active = env_value(ctx, "CONDA_PREFIX");
  if (!active.empty() && ctx.fs.is_directory(active))
    add_unique(prefixes, active);
  return prefixes;
}

void probe_software_python(const ProbeContext &ctx) {
  auto &sw = ctx.snapshot.software;
  std::vector<Candidate> candidates;
  for (const auto &dir : split_path_list(env_value(ctx, "PATH"))) {
    if (!ctx.fs.exists(dir + "/python3"))
      continue;
    if (base_name(dir) == "shims" && base_name(parent_path(dir)) == ".pyenv") {
      // pyenv's shim is a script; the version it selects is the environment that runs.
      auto pyenv = parent_path(dir);
      auto version = env_value(ctx, "PYENV_VERSION");
      if (version.empty())
        version = read_trimmed(ctx.fs, pyenv + "/version").value_or("");
      version = version.substr(0, version.find_first_of(" \n:"));
      if (version.empty() || version == "system")
        continue; // the next python3 on PATH is the one that runs
      auto root = pyenv + "/versions/" + version;
      candidates.push_back({root, interpreter_in(ctx, root), version, false, "path"});
      break;
    }
    candidates.push_back(
        {prefix_of_interpreter(dir + "/python3"), dir + "/python3", {}, false, "path"});
    break;
  }
  if (auto venv = env_value(ctx, "VIRTUAL_ENV"); !venv.empty())
    candidates.push_back({venv, interpreter_in(ctx, venv), base_name(venv), true, "virtual-env"});
  if (auto conda = env_value(ctx, "CONDA_PREFIX"); !conda.empty()) {
    auto name = env_value(ctx, "CONDA_DEFAULT_ENV");
    candidates.push_back({conda, interpreter_in(ctx, conda), name.empty() ? base_name(conda) : name,
                          true, "conda-prefix"});
  }
  for (const auto &prefix : conda_env_prefixes(ctx)) {
    bool is_env = base_name(parent_path(prefix)) == "envs";
    candidates.push_back({prefix, interpreter_in(ctx, prefix),
                          is_env ? base_name(prefix) : std::string("base"), false, "conda"});
  }
  // Environments users run that need not be on PATH: the distribution's interpreter (Debian's
  // python3-torch lives in /usr/lib/python3/dist-packages), the usual venv homes of venv,
  // virtualenvwrapper, pipenv, pyenv and a project's .venv in the working directory.
  for (const char *sys : {"/usr/bin/python3", "/usr/local/bin/python3"})
    if (ctx.fs.exists(sys))
      candidates.push_back({prefix_of_interpreter(sys), sys, {}, false, "system"});
  auto home = home_prefix(ctx);
  auto pwd = env_value(ctx, "PWD");
  std::vector<std::pair<std::string, bool>> venv_places; // (folder, holds several envs)
  if (home)
    venv_places.insert(venv_places.end(), {{*home + "/.venv", false},
                                           {*home + "/venv", false},
                                           {*home + "/.virtualenvs", true},
                                           {*home + "/venvs", true},
                                           {*home + "/.local/share/virtualenvs", true},
                                           {*home + "/.pyenv/versions", true}});
  if (!pwd.empty() && (!home || pwd != *home) && pwd != env_value(ctx, "HOME"))
    venv_places.insert(venv_places.end(), {{pwd + "/.venv", false}, {pwd + "/venv", false}});
  auto is_env = [&](const std::string &root) {
    return ctx.fs.exists(root + "/pyvenv.cfg") || ctx.fs.exists(root + "/bin/python3") ||
           ctx.fs.exists(root + "/bin/python");
  };
  for (const auto &[place, several] : venv_places) {
    if (!several) {
      if (is_env(place))
        candidates.push_back({place, interpreter_in(ctx, place), {}, false, "home"});
      continue;
    }
    for (const auto &name : ctx.fs.list(place))
      if (is_env(place + "/" + name))
        candidates.push_back(
            {place + "/" + name, interpreter_in(ctx, place + "/" + name), name, false, "home"});
  }
  for (const auto &given : ctx.options.pythons)
    candidates.push_back({prefix_of_interpreter(given), given, {}, false, "given"});

  auto &searched = sw.python_search;
  searched = {"PATH (first python3)", "VIRTUAL_ENV", "CONDA_PREFIX"};
  for (const auto &base : conda_bases(ctx))
    searched.push_back(base + " (conda, and its envs/)");
  searched.insert(searched.end(), {"/usr/bin/python3", "/usr/local/bin/python3"});
  for (const auto &[place, several] : venv_places)
    searched.push_back(several ? place + "/*" : place);
  for (const auto &given : ctx.options.pythons)
    searched.push_back(given + " (--python)");

  std::vector<PythonEnv> envs;
  for (const auto &c : candidates) {
    auto root = ctx.fs.canonical(c.root).value_or(c.root);
    auto same =
        std::find_if(envs.begin(), envs.end(), [&](const PythonEnv &e) { return e.root == root; });
    if (same != envs.end()) {
      add_unique(same->found_by, c.found_by);
      if (c.active)
        same->active = true;
      if (!same->name && c.name)
        same->name = c.name;
      continue;
    }
    if (!ctx.fs.exists(c.interpreter)) {
      ctx.note("software.python_envs", c.interpreter,
               "no interpreter there (named by " + c.found_by + ")");
      continue;
    }
    PythonEnv env;
    env.interpreter = c.interpreter;
    env.root = root;
    env.kind = kind_of(ctx, root);
    env.name = c.name;
    if (!env.name && env.kind == std::optional<std::string>("venv"))
      env.name = base_name(root);
    env.active = c.active;
    env.found_by.push_back(c.found_by);
    envs.push_back(std::move(env));
  }
  for (auto &env : envs) {
    env.python_version = python_version(ctx, env, *env.root);
    read_packages(ctx, env, *env.root, sw);
  }
  if (ctx.options.deep)
    run_deep(ctx, envs);
  sw.python_envs = std::move(envs);
  sw.torch_extensions_cache = torch_extensions_cache(ctx);
}

} // namespace dlrig
