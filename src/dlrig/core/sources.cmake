list(APPEND DLRIG_SOURCES
  core/clock.cpp
  core/python_json.cpp
  core/snapshot.cpp
  core/text.cpp
  core/version.cpp)
