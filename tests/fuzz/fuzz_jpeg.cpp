// JPEG files (data/image_folder.hpp): read_jpeg, as the image folder's loader decodes every
// file, then both of its transforms (training's random resized crop and flip, evaluation's
// resize and centre crop) on what decoded.
#include <cstddef>
#include <cstdint>
#include <optional>

#include <ember/data/image_folder.hpp>

#include "fuzz_target.hpp"

EMBER_FUZZ_TARGET(jpeg)(const std::uint8_t* data, std::size_t size) {
  const auto path = ember::fuzz::scratch_file("input.jpg", data, size);
  std::optional<ember::data::Image> image;
  ember::fuzz::expect_file_errors([&] { image = ember::data::read_jpeg(path); });
  if (!image) return 0;
  ember::fuzz::expect_errors([&] {
    (void)ember::data::transform_image(*image, ember::data::ImageTransform::training(16), 7);
    (void)ember::data::transform_image(*image, ember::data::ImageTransform::evaluation(16));
  });
  return 0;
}
