list(APPEND DLRIG_SOURCES
  model/catalog.cpp
  model/config.cpp
  model/params.cpp
  model/walk.cpp)
