# Layering check (cmake -P): the solver layer knows SDEs, never neural networks. No file of the solver
# layer, i.e. include/ncsde/** outside include/ncsde/models/ and include/ncsde/networks/, and solvers/**,
# may include the model layer: "ncsde/models…" or "ncsde/networks…" in either include form, or the
# same directories reached by a relative path ("models/x.hpp", "../networks/x.hpp", "../lib/models/…").
# Usage: cmake -DNCSDE_SOURCE_DIR=<tree> -P check_layer_includes.cmake
# Exits non-zero, listing every offending file and line, when a violation is found, or when a root
# holds no source file (a check that scans nothing must not pass).
cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED NCSDE_SOURCE_DIR OR NOT IS_DIRECTORY "${NCSDE_SOURCE_DIR}")
  message(FATAL_ERROR "include hygiene: NCSDE_SOURCE_DIR (${NCSDE_SOURCE_DIR}) is not a directory")
endif()

set(source_regex "\\.(h|hh|hpp|hxx|ipp|inl|c|cc|cpp|cxx)$")
set(model_layer_regex "(^|/)ncsde/(models|networks)([/.]|$)|^(\\./|\\.\\./)*(lib/|include/ncsde/)?(models|networks)/")

set(scanned 0)
set(violations 0)
set(report "")
foreach(root include/ncsde solvers)
  file(GLOB_RECURSE files LIST_DIRECTORIES false "${NCSDE_SOURCE_DIR}/${root}/*")
  list(FILTER files INCLUDE REGEX "${source_regex}")
  list(FILTER files EXCLUDE REGEX "/include/ncsde/(models|networks)/")
  list(LENGTH files count)
  if(count EQUAL 0)
    message(FATAL_ERROR "include hygiene: no source files under ${NCSDE_SOURCE_DIR}/${root}")
  endif()
  math(EXPR scanned "${scanned} + ${count}")
  foreach(file IN LISTS files)
    file(STRINGS "${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]*)[>\"].*$" "\\1" path "${line}")
      if(path MATCHES "${model_layer_regex}")
        file(RELATIVE_PATH rel "${NCSDE_SOURCE_DIR}" "${file}")
        string(APPEND report "  ${rel}: ${line}\n")
        math(EXPR violations "${violations} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations GREATER 0)
  message(FATAL_ERROR "include hygiene: ${violations} layering violations (the solver layer includes "
                      "the model layer):\n${report}")
endif()
message(STATUS "include hygiene: ${scanned} solver-layer files, no include of ncsde/models or ncsde/networks")
