list(APPEND DLRIG_SOURCES
  kb/csv.cpp
  kb/kb.cpp
  kb/lookup.cpp
  kb/models.cpp
  kb/row.cpp)
