// The Fashion-MNIST test split for tests that build their inputs from real images: loaded once
// per process; a missing Debian package fails the test with how to install it.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>

#include <ember/data/fashion_mnist.hpp>

namespace ember::testing {

inline const data::FashionMnist& fashion_mnist_test_split() {
  const std::filesystem::path dir = data::FashionMnist::default_dir();
  if (!std::filesystem::exists(dir / "t10k-images-idx3-ubyte.gz")) {
    FAIL("Fashion-MNIST is not in '" << dir.string()
                                     << "': install the Debian package dataset-fashion-mnist "
                                        "(apt-get install dataset-fashion-mnist; CI installs it)"
                                        " or set EMBER_FASHION_MNIST_DIR");
  }
  static const data::FashionMnist ds(data::Split::test);
  return ds;
}

}  // namespace ember::testing
