# dlrig_embed(OUT_CPP FILES...) writes a C++ source that holds each file's bytes, looked up by its
# name relative to the project's data/ folder through dlrig::embedded_file().
function(dlrig_embed out_cpp)
  set(files ${ARGN})
  add_custom_command(
    OUTPUT ${out_cpp}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out_cpp} -DBASE=${PROJECT_SOURCE_DIR}/data
            "-DFILES=${files}" -P ${PROJECT_SOURCE_DIR}/cmake/embed_run.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/embed_run.cmake
    COMMENT "Embedding data files"
    VERBATIM)
endfunction()
