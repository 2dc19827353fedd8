// The trainer's optimizer recipe as the command line gives it: the same checks are compiled by
// the host compiler (test_trainer.cpp) and by nvcc (test_trainer.cu), because the nvcc-built
// trainer once trained with a weight decay of 1 (nvcc dropped the designators of a braced list
// assigned to an object of dependent type; examples/resnet50/train_main.hpp, make_recipe). Each
// file's own test case calls them: ctest selects a file's test cases by the file they are written
// in (tests/CMakeLists.txt), so a test case written in this header would run in neither.
#pragma once

#include <catch2/catch.hpp>

#include "resnet50/config.hpp"

inline void check_optimizer_recipe() {
  resnet::Config c;
  c.lr = 0.4;
  c.momentum = 0.85;
  c.weight_decay = 5e-5;
  c.epochs = 2;
  c.warmup_epochs = 0.5;
  const std::int64_t steps = 10;

  SECTION("SGD: Nesterov momentum, weight decay on weights only, warmup + cosine") {
    const auto r = resnet::make_recipe<ember::optim::SGD>(c, steps);
    CHECK(r.main.lr == 0.4);
    CHECK(r.main.momentum == 0.85);
    CHECK(r.main.dampening == 0);
    CHECK(r.main.weight_decay == 5e-5);
    CHECK(r.main.nesterov);
    CHECK(r.excluded.weight_decay == 0);
    CHECK(r.excluded.momentum == 0.85);
    CHECK(r.excluded.nesterov);
    CHECK(r.schedule(0) == 0);
    CHECK(r.schedule(5) == Approx(0.4));  // the end of the warmup: the peak
    CHECK(r.schedule(20) == Approx(0).margin(1e-12));
  }
  SECTION("LARS: no decay and no trust ratio for biases and batch norm, warmup + poly(2)") {
    const auto r = resnet::make_recipe<ember::optim::LARS>(c, steps);
    CHECK(r.main.lr == 0.4);
    CHECK(r.main.momentum == 0.85);
    CHECK(r.main.weight_decay == 5e-5);
    CHECK(r.main.trust_coefficient == ember::optim::LARSOptions{}.trust_coefficient);
    CHECK_FALSE(r.main.exclude_from_adaptation);
    CHECK(r.excluded.weight_decay == 0);
    CHECK(r.excluded.exclude_from_adaptation);
    CHECK(r.schedule(5) == Approx(0.4));
    CHECK(r.schedule(20) == Approx(0.4e-4));
  }
}
