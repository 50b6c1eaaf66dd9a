list(APPEND DLRIG_SOURCES
  pick/data.cpp
  pick/machine.cpp
  pick/pick.cpp
  pick/report.cpp
  pick/upgrade.cpp)
