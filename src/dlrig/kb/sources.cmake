list(APPEND DLRIG_SOURCES
  kb/models.cpp)
