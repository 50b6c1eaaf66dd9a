list(APPEND DLRIG_SOURCES
  monitor/sample.cpp
  monitor/host.cpp
  monitor/amd.cpp
  monitor/sampler.cpp
  monitor/diagnose.cpp
  monitor/view.cpp
  monitor/record.cpp
  monitor/exporter.cpp
  monitor/tui.cpp
  monitor/terminal.cpp)
