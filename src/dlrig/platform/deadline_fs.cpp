#include "dlrig/platform/deadline_fs.hpp"

#include <condition_variable>
#include <fmt/format.h>
#include <optional>
#include <thread>

namespace dlrig {

// One reader thread and the job it serves. The thread holds a shared_ptr to this state, so an
// abandoned worker (stuck in the kernel) can finish its read and exit after its owner left.
struct DeadlineFileSystem::Worker {
  std::mutex m;
  std::condition_variable cv;
  bool stop = false;
  bool has_job = false;
  bool done = false;
  std::string path;
  std::size_t max_bytes = 0;
  std::optional<Result<std::string>> result;

  static void serve(std::shared_ptr<Worker> self, const FileSystem *fs) {
    std::unique_lock lock(self->m);
    for (;;) {
      self->cv.wait(lock, [&] { return self->stop || self->has_job; });
      if (self->stop)
        return;
      std::string path = self->path;
      std::size_t max_bytes = self->max_bytes;
      lock.unlock();
      auto r = fs->read(path, max_bytes);
      lock.lock();
      self->has_job = false;
      self->result = std::move(r);
      self->done = true;
      self->cv.notify_all();
    }
  }
};

DeadlineFileSystem::DeadlineFileSystem(const FileSystem &inner, std::chrono::milliseconds per_file,
                                       std::chrono::milliseconds total)
    : inner_(inner), per_file_(per_file), total_(total) {}

DeadlineFileSystem::~DeadlineFileSystem() {
  if (!worker_)
    return;
  std::lock_guard lock(worker_->m);
  worker_->stop = true; // idle (a stuck worker was already abandoned): it exits at once
  worker_->cv.notify_all();
}

Result<std::string> DeadlineFileSystem::read(const std::string &path, std::size_t max_bytes) const {
  std::lock_guard call(call_);
  auto left = total_ - waited_;
  if (left <= Clock::duration::zero()) {
    ++skipped_;
    return make_error(ErrorKind::io,
                      fmt::format("{}: not read: file reads had already waited {} ms in all, the "
                                  "probe's limit",
                                  path, total_.count()));
  }
  if (!worker_) {
    worker_ = std::make_shared<Worker>();
    std::thread(Worker::serve, worker_, &inner_).detach();
  }
  auto wait = std::min<Clock::duration>(per_file_, left);
  auto start = Clock::now();
  std::unique_lock lock(worker_->m);
  worker_->path = path;
  worker_->max_bytes = max_bytes;
  worker_->done = false;
  worker_->has_job = true;
  worker_->cv.notify_all();
  bool answered = worker_->cv.wait_for(lock, wait, [&] { return worker_->done; });
  waited_ += Clock::now() - start;
  if (answered) {
    auto r = std::move(*worker_->result);
    worker_->result.reset();
    return r;
  }
  // Abandon the stuck worker: it exits after its read returns; the next read starts a new one.
  worker_->stop = true;
  lock.unlock();
  worker_.reset();
  timed_out_.push_back(path);
  return make_error(
      ErrorKind::io,
      fmt::format("{}: no answer within {} ms (the file blocks when read); not read", path,
                  std::chrono::duration_cast<std::chrono::milliseconds>(wait).count()));
}

std::vector<std::string> DeadlineFileSystem::timed_out() const {
  std::lock_guard call(call_);
  return timed_out_;
}

std::size_t DeadlineFileSystem::skipped() const {
  std::lock_guard call(call_);
  return skipped_;
}

} // namespace dlrig
