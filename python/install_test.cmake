# cmake -P script of the ctest python_installed: installs the component python of the build into
# WORK_DIR/prefix and imports the package from there with PYTHONPATH = WORK_DIR/prefix/INSTALL_DIR
# only (run from WORK_DIR, not the build): ncsde.__file__ must lie under the prefix, the version
# must be VERSION, and a built-in model's drift must evaluate.
cmake_minimum_required(VERSION 3.25)
foreach(var NCSDE_BINARY_DIR PYTHON INSTALL_DIR VERSION WORK_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "python_installed: ${var} is not set")
  endif()
endforeach()
set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(config_args)
if(NOT "${NCSDE_CONFIG}" STREQUAL "")
  set(config_args --config "${NCSDE_CONFIG}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${NCSDE_BINARY_DIR}" --prefix "${prefix}"
                        --component python ${config_args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "python_installed: install failed (${rc})\n${out}\n${err}")
endif()
foreach(file __init__.py __init__.pyi models.py py.typed)
  if(NOT EXISTS "${prefix}/${INSTALL_DIR}/ncsde/${file}")
    message(FATAL_ERROR "python_installed: ${INSTALL_DIR}/ncsde/${file} was not installed")
  endif()
endforeach()
set(script [=[
import sys, ncsde, numpy as np
prefix = sys.argv[1]
assert ncsde.__file__.startswith(prefix), f"imported {ncsde.__file__}, not from {prefix}"
assert ncsde.__version__ == sys.argv[2], f"version {ncsde.__version__} != {sys.argv[2]}"
sde = ncsde.models.covariance_sde("transformer")
b = sde.drift(np.array([[1.0, 0.5], [0.5, 1.0]]))
assert b.shape == (2, 2) and np.all(np.isfinite(b)), b
print("python_installed: ncsde", ncsde.__version__, "from", ncsde.__file__)
]=])
execute_process(COMMAND "${CMAKE_COMMAND}" -E env --unset=PYTHONPATH
                        "PYTHONPATH=${prefix}/${INSTALL_DIR}" PYTHONDONTWRITEBYTECODE=1
                        "${PYTHON}" -B -c "${script}" "${prefix}" "${VERSION}"
                WORKING_DIRECTORY "${WORK_DIR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "python_installed: import from the prefix failed (${rc})\n${out}\n${err}")
endif()
message(STATUS "${out}")
