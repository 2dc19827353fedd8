// ember::kernels: the safetensors reader and writer (io/safetensors.hpp) and the metrics logs'
// writers (io/metrics_log.hpp), compiled once where nlohmann/json is found. The library's targets
// get EMBER_IO_COMPILED, so the headers declare them; this unit defines them. They do not evaluate:
// a host compile serves nvcc's units too (their copies to and from a device are the runtime's
// copies, which work from any unit).
#include <ember/io/metrics_log.hpp>
#include <ember/io/metrics_log_impl.hpp>
#include <ember/io/safetensors.hpp>
#include <ember/io/safetensors_impl.hpp>
