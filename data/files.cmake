# Knowledge-base files embedded into the binary (paths relative to this folder).
set(DLRIG_DATA_FILES "")
foreach(f IN ITEMS
    models.json
    placeholder.txt)
  list(APPEND DLRIG_DATA_FILES ${CMAKE_CURRENT_LIST_DIR}/${f})
endforeach()
