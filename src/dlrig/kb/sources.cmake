list(APPEND DLRIG_SOURCES
  kb/csv.cpp
  kb/kb.cpp
  kb/lookup.cpp
  kb/model_config.cpp
  kb/models.cpp
  kb/params.cpp
  kb/row.cpp
  kb/report.cpp
  kb/search.cpp)
