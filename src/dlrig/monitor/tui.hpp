#pragma once
// The full-screen view of `dlrig watch` on a terminal (ncurses): per GPU a line of bars
// (utilisation, memory, power, temperature, clocks), a history graph of the selected GPU, the
// processes and the live diagnoses. Keys: q quits, up/down (or k/j) select a GPU, s changes the
// processes' sort (GPU memory, SM share, PID).
#include "dlrig/monitor/sample.hpp"

#include <atomic>
#include <functional>
#include <optional>
#include <string>

namespace dlrig::monitor {

struct TuiOptions {
  double interval_seconds = 1;
  bool colour = true;                      // colour pairs when the terminal has them
  const std::atomic<bool> *stop = nullptr; // set by a signal handler
  // Called with each sample after it is shown (--record while watching).
  std::function<void(const Sample &)> on_sample;
};

// Why the terminal on standard output cannot hold the full-screen view, or nullopt when it can:
// TERM unset or unknown to terminfo (ncurses' initscr() would print "Error opening terminal" and
// exit the process), or a terminal without cursor addressing (TERM=dumb: an editor's shell
// buffer). watch then prints one table per sample.
std::optional<std::string> full_screen_unavailable();

// Runs until q or *stop; returns the number of samples shown.
std::size_t run_tui(const std::function<Sample()> &take, const TuiOptions &o);

// One history graph row from ratios 0-1 (oldest first), width characters wide, in ASCII
// (" .:-=+*#%@" from empty to full; unknown is a space). Pure, for the tests.
std::string history_line(const std::vector<std::optional<double>> &values, std::size_t width);
// A bar "[|||||     ]" of width characters for a ratio 0-1; "[ n/a ]" padded when unknown.
std::string bar(const std::optional<double> &ratio, std::size_t width);

} // namespace dlrig::monitor
