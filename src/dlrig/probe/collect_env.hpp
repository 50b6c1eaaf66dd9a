#pragma once
// Reading the text `python -m torch.utils.collect_env` prints (most PyTorch bug reports carry it)
// as a partial machine snapshot. parse_collect_env is pure: it takes the text and returns every
// field the report prints, or an error naming the line. collect_env_snapshot turns that into a
// Snapshot in which everything the report does not say stays unknown (null), marked by the note
// {field "*", source "collect_env"} so the doctor runs only the checks such a report can decide.
//
// The layouts, from torch/utils/collect_env.py (https://github.com/pytorch/pytorch, the file's
// env_info_fmt and pretty_str across its history):
//   - the first layout: PyTorch version, Is debug build, CUDA used to build PyTorch, OS, GCC/Clang/
//     CMake version, Python version ("3.7"), Is CUDA available (Yes/No), CUDA runtime version
//     (nvcc), GPU models and configuration (`nvidia-smi -L`, UUIDs removed), Nvidia driver
//     version, cuDNN version, then "Versions of relevant libraries:" with [pip]/[pip3]/[conda]
//     lines;
//   - later: ROCM used to build PyTorch, Libc version, Python platform (platform.platform()),
//     HIP and MIOpen runtime versions; True/False instead of Yes/No; the full sys.version;
//   - 2.x: CUDA_MODULE_LOADING set to, Is XNNPACK available, a "CPU:" section (lscpu), and in
//     current versions Is XPU available (with the XPU details under it) and Caching allocator
//     config.
// Values that say nothing: "Could not collect" (the command failed), "N/A" (not this build, or
// torch not importable), "No CUDA" (torch sees no CUDA and neither nvcc nor nvidia-smi answered).
#include "dlrig/core/result.hpp"
#include "dlrig/core/snapshot.hpp"
#include "dlrig/kb/kb.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlrig::probe {

// One "Label: value" line of the report and the lines that continue it.
struct CollectEnvField {
  std::string value;             // after "Label: ", trimmed; "" when it starts on the next line
  std::vector<std::string> more; // continuation lines, trimmed (GPUs, cuDNN files, XPU details)
  int line = 0;                  // 1-based line of the label
};

// One line of "Versions of relevant libraries:".
struct CollectEnvPackage {
  std::string manager; // pip | pip3 | conda
  std::string name;    // as printed: "torch", "nvidia-cudnn-cu12", "pytorch"
  OptStr version;      // null for "name @ URL" and editable lines
  OptStr build;        // conda's build string: "py3.10_cuda12.1_cudnn8.9.2_0"
  OptStr channel;      // conda's channel: "pytorch", "pypi"
  int line = 0;
};

struct CollectEnvGpu {
  std::optional<int> index; // "GPU 0: ..." (nvidia-smi -L); null for a bare device name (ROCm)
  std::string name;         // "NVIDIA GeForce RTX 4090"; ROCm's "(gfx942:...)" tail removed
  OptStr gfx;               // ROCm's target in brackets: "gfx942:sramecc+:xnack-"
  int line = 0;
};

struct CollectEnvReport {
  // Which layout the labels show: 1 (no Libc/Python platform/ROCM lines), 2 (those lines, no
  // CUDA_MODULE_LOADING, XNNPACK or CPU section), 3 (2.x: any of the latter).
  int format = 1;
  int first_line = 0;                                          // the "PyTorch version:" line
  std::vector<std::pair<std::string, CollectEnvField>> fields; // by label, in text order
  std::vector<CollectEnvGpu> gpus;
  std::vector<std::string> cudnn_files; // the one cuDNN file, or every "Probably one of" line
  std::vector<std::string> cpu;         // the CPU section's lines as printed (lscpu)
  std::vector<CollectEnvPackage> packages;
  std::vector<std::pair<std::string, int>> unknown_labels; // labels of a newer layout, by line

  const CollectEnvField *field(std::string_view label) const;
  // The value, or nullopt when the line is absent or says nothing ("Could not collect", "N/A",
  // "No CUDA", "").
  OptStr value(std::string_view label) const;
  // "True"/"Yes" -> true, "False"/"No" -> false; nullopt otherwise.
  OptBool flag(std::string_view label) const;
};

// True when the text is a collect_env report rather than JSON: it does not start with '{' and
// has a line starting "PyTorch version:", or one that does after the same indent or markdown
// quote ("    ", "> ") as the report was pasted with (see unwrap_pasted_report).
bool looks_like_collect_env(std::string_view text);

// A report pasted into a markdown issue as an indented code block (every line 4 spaces in) or
// a quote ("> " before every line, ">" alone on an empty one): the prefix the "PyTorch
// version:" line carries, if it is only spaces, tabs and '>', is removed from every line that
// has it. A UTF-8 byte-order mark is dropped. Lines stay where they were, so "line N" in an
// error is the file's line N. Text without such a prefix comes back unchanged.
std::string unwrap_pasted_report(std::string_view text);

// Text saved as UTF-16 with a byte-order mark (PowerShell 5's `>` and Out-File write UTF-16LE),
// as UTF-8; a code unit that is no character becomes U+FFFD. nullopt when the text does not
// start with a UTF-16 byte-order mark.
std::optional<std::string> utf8_from_utf16(std::string_view bytes);

// Errors (bad_input) start "line N: " and say what was expected: a value that is not what the
// field holds ("Is CUDA available: maybe"), a line in the fields that is neither "Label: value"
// nor a continuation of the field above, a package line that is not "[pip3] name==version" or
// "[conda] name version build channel", a second "PyTorch version:" (two reports in one file),
// or no "PyTorch version:" line at all. Text before that line ("Collecting environment
// information...", a ``` fence) and after the package list is ignored; CR LF line ends are
// accepted.
Result<CollectEnvReport> parse_collect_env(std::string_view text);

// The partial snapshot (docs/snapshot.md, "From a collect_env report"). `kb` gives the compute
// capability and architecture of a GPU the report names, which nvidia-smi -L does not print.
Snapshot collect_env_snapshot(const CollectEnvReport &report, const kb::KnowledgeBase &kb);

// --from FILE: reads the file as platform/snapshot_file.hpp does (UTF-16 with a byte-order mark
// is read as its UTF-8) and takes it as a collect_env report when it looks like one, else as a
// snapshot document. Errors name the file (and for a report the line: "FILE:12: ..."); a file
// that is neither (no '{' first, no "PyTorch version:" line) says both forms, and UTF-16 without
// a byte-order mark says how to save it as UTF-8; bad_input, or not_found for a missing file.
Result<Snapshot> load_snapshot_or_report(const std::string &path, const kb::KnowledgeBase &kb);

} // namespace dlrig::probe
