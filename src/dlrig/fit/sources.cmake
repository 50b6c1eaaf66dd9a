list(APPEND DLRIG_SOURCES
  fit/fit.cpp
  fit/load.cpp
  fit/memory.cpp
  fit/model_input.cpp
  fit/report.cpp
  fit/run.cpp
  fit/safetensors.cpp
  fit/time.cpp)

# Until the knowledge base's loader and lookups land (kb/sources.cmake lists only the model seam),
# an empty catalog lets the command link. Remove with kb_link_bridge.cpp once kb is in main.
set(dlrig_fit_kb_sources ${DLRIG_SOURCES})
list(FILTER dlrig_fit_kb_sources INCLUDE REGEX "^kb/")
if(dlrig_fit_kb_sources STREQUAL "kb/models.cpp")
  list(APPEND DLRIG_SOURCES fit/kb_link_bridge.cpp)
endif()
