# gradsync_embed_text(<target> <file> <symbol>): compiles <file>'s text into <target> as
#   namespace gradsync::embedded { extern const char* const <symbol>; }
# regenerated whenever the file changes. The text must not contain the raw-string delimiter )gradsync".
function(gradsync_embed_text target file symbol)
  get_filename_component(source "${file}" ABSOLUTE)
  set(generated "${CMAKE_CURRENT_BINARY_DIR}/embedded_${symbol}.cc")
  add_custom_command(
    OUTPUT "${generated}"
    COMMAND ${CMAKE_COMMAND} -DSOURCE=${source} -DOUTPUT=${generated} -DSYMBOL=${symbol}
            -P "${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake"
    DEPENDS "${source}" "${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake"
    COMMENT "Embedding ${file}"
    VERBATIM)
  target_sources(${target} PRIVATE "${generated}")
endfunction()
