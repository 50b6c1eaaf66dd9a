#pragma once
// The software probe's areas, each in its own file; probe_software (software.cpp) runs them in
// this order, since later areas use what earlier ones found (toolkit roots, loader path).
#include "dlrig/probe/probe.hpp"

#include <string>
#include <vector>

namespace dlrig {

void probe_software_kernel(
    const ProbeContext &ctx); // software_kernel.cpp: modules, nodes, services, ACS
void probe_software_cuda(
    const ProbeContext &ctx); // software_cuda.cpp: driver libs, toolkits, CUDA libs
void probe_software_python(const ProbeContext &ctx); // software_python.cpp: Python envs (+ --deep)
void probe_software_env(
    const ProbeContext &ctx); // software_env.cpp: variables, port, compiler, runtime

// Prefixes of the conda environments under the usual roots (~/miniconda3, ~/anaconda3,
// ~/miniforge3, ~/mambaforge, /opt/conda...): each base and its envs/*, plus CONDA_PREFIX.
// Defined in software_python.cpp.
// Where conda, mamba and micromamba install (each a base env with envs/ under it).
std::vector<std::string> conda_bases(const ProbeContext &ctx);
std::vector<std::string> conda_env_prefixes(const ProbeContext &ctx);

// Joins a folder and a name on the probed machine.
std::string join_path(const std::string &dir, const std::string &name);
// The folder holding path ("/a/b/c" -> "/a/b"); "/" for top-level entries.
std::string parent_path(const std::string &path);
// The last component of path.
std::string base_name(const std::string &path);
// Whether path equals dir or lies below it.
bool path_under(const std::string &path, const std::string &dir);

} // namespace dlrig
