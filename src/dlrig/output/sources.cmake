list(APPEND DLRIG_SOURCES
  output/envelope.cpp
  output/print.cpp
  output/table.cpp
  output/text.cpp)
