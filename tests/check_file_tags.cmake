# Run by the <folder executable>_file_tags tests (tests/CMakeLists.txt): every test case of EXE
# must carry the file tag of one of its test files (STEMS, comma-separated), since ctest selects
# each file's test cases by that tag and runs nothing else.
cmake_minimum_required(VERSION 3.20)

execute_process(COMMAND "${EXE}" --filenames-as-tags --list-tags "[.],~[.]"
                OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
string(REPLACE "," ";" stems "${STEMS}")
string(REGEX MATCHALL "\\[#[A-Za-z0-9_]+\\]" tags "${out}")
if(NOT tags)
  message(FATAL_ERROR "${EXE} lists no file tags (exit ${rc}):\n${out}")
endif()
foreach(tag IN LISTS tags)
  string(REGEX REPLACE "^\\[#(.*)\\]$" "\\1" file "${tag}")
  if(NOT file IN_LIST stems)
    message(FATAL_ERROR "${EXE}: test cases tagged ${tag} run under no ctest test: they are "
                        "written in a file named ${file}, not in one of its test files (${STEMS})")
  endif()
endforeach()
list(REMOVE_DUPLICATES tags)
list(LENGTH tags n)
message(STATUS "${EXE}: all test cases belong to its ${n} test files")
