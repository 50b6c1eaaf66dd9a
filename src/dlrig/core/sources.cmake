list(APPEND DLRIG_SOURCES
  core/snapshot.cpp)
