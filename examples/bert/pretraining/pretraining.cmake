# BERT's pretraining data (examples/bert/pretraining_data.hpp) compiled once: the static library
# bert_pretraining_data, which bert_pretrain, the examples' tests and fuzz_replay link instead of
# compiling the corpora readers, the instance algorithm and the cache in each of their units.
# The libFuzzer targets compile EMBER_BERT_PRETRAINING_SOURCES under their own sanitizers
# (tests/fuzz/CMakeLists.txt). Included from examples/, tests/ and tests/fuzz/: the first include
# defines the library, where ember::data is available (zlib); it is built only where something
# links it.
set(EMBER_BERT_PRETRAINING_SOURCES
    "${CMAKE_CURRENT_LIST_DIR}/batches.cpp" "${CMAKE_CURRENT_LIST_DIR}/documents.cpp"
    "${CMAKE_CURRENT_LIST_DIR}/gcide.cpp" "${CMAKE_CURRENT_LIST_DIR}/instance_cache.cpp"
    "${CMAKE_CURRENT_LIST_DIR}/instances.cpp")
if(NOT TARGET bert_pretraining_data AND TARGET ember_data)
  add_library(bert_pretraining_data STATIC EXCLUDE_FROM_ALL ${EMBER_BERT_PRETRAINING_SOURCES})
  target_link_libraries(bert_pretraining_data PUBLIC ember::data)
  target_include_directories(bert_pretraining_data PUBLIC "${PROJECT_SOURCE_DIR}/examples")
  ember_target_warnings(bert_pretraining_data)
endif()
