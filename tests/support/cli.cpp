#include "support/cli.hpp"

#include <fcntl.h>
#include <pty.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace dlrig::test {

namespace {
std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
} // namespace

std::vector<std::string> sanitizer_options() {
  std::vector<std::string> out;
  for (const char *name : {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"})
    if (const char *v = std::getenv(name))
      out.push_back(std::string(name) + "=" + v);
  return out;
}

Exec::Exec(const std::vector<std::string> &args, const std::vector<std::string> &env,
           const std::vector<std::string> &more)
    : argv_s{DLRIG_BINARY}, env_s(env) {
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  env_s.insert(env_s.end(), more.begin(), more.end());
  env_s.insert(env_s.end(),
               {"PATH=/usr/bin:/bin", "DLRIG_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1"});
  for (auto &o : sanitizer_options())
    env_s.push_back(std::move(o));
  for (auto &a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto &e : env_s)
    envp.push_back(e.data());
  envp.push_back(nullptr);
}

CliRun run_dlrig(const std::vector<std::string> &args, const std::vector<std::string> &env) {
  return run_dlrig_with(args, env, false);
}

CliRun run_dlrig_with(const std::vector<std::string> &args, const std::vector<std::string> &env,
                      bool stderr_is_pipe) {
  char out_tmpl[] = "/tmp/dlrig-cli-out-XXXXXX";
  char err_tmpl[] = "/tmp/dlrig-cli-err-XXXXXX";
  int out_fd = mkstemp(out_tmpl);
  int err_fd = mkstemp(err_tmpl);
  if (out_fd < 0 || err_fd < 0)
    throw std::runtime_error("mkstemp failed");
  int pipe_fds[2] = {-1, -1};
  if (stderr_is_pipe && pipe(pipe_fds) != 0)
    throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, stderr_is_pipe ? pipe_fds[1] : err_fd, 2);
  if (stderr_is_pipe)
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);

  Exec exec(args, env);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, DLRIG_BINARY, &actions, nullptr, exec.argv.data(), exec.envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_fd);
  close(err_fd);
  CliRun run;
  if (stderr_is_pipe) { // read until the child's end closes, then wait
    close(pipe_fds[1]);
    char buf[4096];
    for (ssize_t got; rc == 0 && (got = read(pipe_fds[0], buf, sizeof buf)) != 0;)
      if (got > 0)
        run.err.append(buf, static_cast<std::size_t>(got));
      else if (errno != EINTR)
        break;
    close(pipe_fds[0]);
  }
  if (rc == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  run.out = slurp(out_tmpl);
  if (!stderr_is_pipe)
    run.err = slurp(err_tmpl);
  std::remove(out_tmpl);
  std::remove(err_tmpl);
  return run;
}

CliRun run_dlrig_in_terminal(const std::vector<std::string> &args, unsigned short columns,
                             const std::vector<std::string> &env) {
  char err_tmpl[] = "/tmp/dlrig-cli-err-XXXXXX";
  int err_fd = mkstemp(err_tmpl);
  if (err_fd < 0)
    throw std::runtime_error("mkstemp failed");
  // Everything the child needs is made before fork(): after it, only async-signal-safe calls.
  Exec exec(args, env, {"TERM=xterm"});
  winsize ws{};
  ws.ws_row = 50;
  ws.ws_col = columns;
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, &ws);
  if (pid < 0)
    throw std::runtime_error("forkpty failed");
  if (pid == 0) {
    dup2(err_fd, 2);
    execve(DLRIG_BINARY, exec.argv.data(), exec.envp.data());
    _exit(127);
  }
  close(err_fd);
  CliRun run;
  char buf[4096];
  for (ssize_t got; (got = read(master, buf, sizeof buf)) != 0;) // EIO once the child is gone
    if (got > 0)
      run.out.append(buf, static_cast<std::size_t>(got));
    else if (errno != EINTR)
      break;
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::erase(run.out, '\r');
  run.err = slurp(err_tmpl);
  std::remove(err_tmpl);
  return run;
}

void write_bytes(const std::filesystem::path &path, const std::vector<unsigned char> &bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

std::filesystem::path scratch(const std::string &name) {
  struct Cleanup {
    std::filesystem::path root =
        std::filesystem::temp_directory_path() / ("dlrig-cli-" + std::to_string(::getpid()));
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(root, ec);
    }
  };
  static Cleanup cleanup;
  std::filesystem::create_directories(cleanup.root);
  return cleanup.root / name;
}

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    lines.push_back(l);
  return lines;
}

std::vector<std::string> words_of(const std::string &text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;)
    words.push_back(w);
  return words;
}

std::string fixture(const std::string &name) {
  return std::string(DLRIG_TEST_DATA) + "/" + name;
}

} // namespace dlrig::test
