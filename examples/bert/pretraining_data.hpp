// BERT pretraining data: masked-LM + next-sentence-prediction instances, made the way Google's
// create_pretraining_data.py makes them (the MLPerf BERT reference's data), a binary cache of
// them, and batches as ember tensors. See docs/bert.md, "Pretraining data".
//
//   auto docs = bert::read_gcide();                       // or bert::read_text_documents(files)
//   ember::data::WordPieceTokenizer tok("vocab.txt");
//   bert::PretrainingOptions opts{.seq_len = 128};
//   auto instances = bert::create_instances(docs, tok, opts);
//   bert::save_instances("train.bpt", instances, opts);   // atomic; load_instances reads it back
//   bert::PretrainingBatch b = bert::make_batch(instances, indices, {.seq_len = 128,
//                                                                    .max_predictions = 20});
//
// Corpora. A Document is a list of sentences. read_gcide reads Debian's dict-gcide (GNU's
// Collaborative International Dictionary of English, the 1913 Webster plus WordNet): one
// document per dictionary entry, its headword lines, citations and source tags dropped and its
// text split into sentences by split_sentences. Entries are short (2.4 sentences on average):
// merge_short_documents joins neighbours into longer documents. read_text_documents reads
// Google's input format: one sentence per line, a blank line between documents.
//
// One header per concern, in examples/bert/pretraining/: documents.hpp (sentences, text files),
// gcide.hpp (the dictionary corpus), instances.hpp (create_instances: the algorithm),
// instance_cache.hpp (the cache file and cached_instances), batches.hpp (make_batch).
//
// The headers declare; their definitions are in the .cpp files beside them, compiled once into
// the static library bert_pretraining_data (pretraining/pretraining.cmake), which needs zlib
// (gzip for dict-gcide and .gz text, crc32 for the cache) and OpenMP (ember's target enables
// it). Host code only.
#pragma once

#include "pretraining/batches.hpp"
#include "pretraining/documents.hpp"
#include "pretraining/gcide.hpp"
#include "pretraining/instance_cache.hpp"
#include "pretraining/instances.hpp"
