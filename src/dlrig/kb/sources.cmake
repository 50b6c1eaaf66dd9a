list(APPEND DLRIG_SOURCES
  kb/model_config.cpp
  kb/models.cpp
  kb/params.cpp)
