list(APPEND DLRIG_SOURCES
  core/clock.cpp
  core/snapshot.cpp
  core/text.cpp
  core/version.cpp)
