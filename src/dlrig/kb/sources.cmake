list(APPEND DLRIG_SOURCES
  kb/csv.cpp
  kb/kb.cpp
  kb/lookup.cpp
  kb/row.cpp
  kb/report.cpp
  kb/search.cpp)
