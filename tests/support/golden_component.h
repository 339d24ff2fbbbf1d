#pragma once
// The one fixture of the per-component golden tests: the full-size synthetic checkpoint (a ctest
// fixture), a backend on the test device (test_device(): 2 CPU threads, or the GPU of the gpu-labelled
// entries) and the component under test, made once per suite and shared by its tests (loading a
// full-size component costs seconds). Without the test device every test skips (test_support.h).
//
//   class CampPlusGolden : public test::GoldenComponent<campplus::CampPlus> {
//     protected:
//       static void SetUpTestSuite() {
//           load("s3gen.safetensors", "s3gen.", [](const WeightStore &s, Backend &b) {
//               return std::make_unique<campplus::CampPlus>(s, b, campplus::CampPlusHParams{}); });
//       }
//   };
//   TEST_F(CampPlusGolden, XVector) { ... model_->embed(*backend_, ...) ... }

#include "core/backend.h"
#include "core/weight_store.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

namespace chatterbox::test {

template <class Component> class GoldenComponent : public ::testing::Test {
  protected:
    using Make = std::function<std::unique_ptr<Component>(const WeightStore &, Backend &)>;

    // file: a checkpoint of a synthetic folder ("s3gen.safetensors"; the English one unless `folder`
    // says otherwise, e.g. turbo_synthetic_dir()), added under prefix ("s3gen.").
    static void load(const std::string &file, const std::string &prefix, const Make &make,
                     const std::string &folder = synthetic_dir()) {
        store_ = std::make_unique<WeightStore>();
        store_->add_safetensors(folder + "/" + file, prefix);
        backend_ = std::make_unique<Backend>(test_backend_options(2));
        model_ = make(*store_, *backend_);
    }
    static void TearDownTestSuite() {
        model_.reset();
        backend_.reset();
        store_.reset();
    }

    static inline std::unique_ptr<WeightStore> store_;
    static inline std::unique_ptr<Backend> backend_;
    static inline std::unique_ptr<Component> model_;
};

} // namespace chatterbox::test
