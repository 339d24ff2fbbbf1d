// needs: synthetic-weights turbo-synthetic-weights
// The generated synthetic checkpoints of English and Turbo: exactly the official tensors (names, shapes, dtypes),
// the byte sizes of shared/golden/WEIGHTS.md, the WEIGHTS.md test-vector values, and the hyper-parameters their
// shapes declare.

#include "core/safetensors.h"
#include "models/chatterbox/model_files.h"
#include "models/chatterbox/synthetic_weights.h"
#include "support/synthetic_test_vectors.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

namespace chatterbox::synthetic {
namespace {

struct ExpectedFile {
    const char *file;
    size_t tensors;
    uint64_t bytes;
};

// One variant's synthetic folder and what WEIGHTS.md says of it.
struct VariantFolder {
    Variant variant;
    std::string dir;
    std::vector<ExpectedFile> files;
    const std::vector<test::SyntheticTestVector> &vectors;
    const char *flow_file;
};

const std::vector<VariantFolder> &variant_folders() {
    static const std::vector<VariantFolder> folders = {
        {Variant::english,
         test::synthetic_dir(),
         {{"ve.safetensors", 16, 5'695'784},
          {"t3_cfg.safetensors", 292, 2'129'653'744},
          {"s3gen.safetensors", 2488, 1'056'381'612}},
         test::synthetic_test_vectors(),
         "s3gen.safetensors"},
        {Variant::turbo,
         test::turbo_synthetic_dir(),
         {{"ve.safetensors", 16, 5'695'784},
          {"t3_turbo_v1.safetensors", 299, 1'915'480'052},
          {"s3gen_meanflow.safetensors", 2491, 1'064'875'036}},
         test::turbo_synthetic_test_vectors(),
         "s3gen_meanflow.safetensors"},
    };
    return folders;
}

TEST(SyntheticFiles, SizesMatchWeightsMd) {
    for (const VariantFolder &folder : variant_folders()) {
        for (const ExpectedFile &e : folder.files) {
            SCOPED_TRACE(folder.dir + "/" + e.file);
            EXPECT_EQ(std::filesystem::file_size(folder.dir + "/" + e.file), e.bytes);
            EXPECT_EQ(SafetensorsFile(folder.dir + "/" + e.file).tensors().size(), e.tensors);
        }
    }
}

TEST(SyntheticFiles, ExactlyTheManifestTensors) {
    for (const VariantFolder &folder : variant_folders()) {
        for (const ManifestCheckpoint &checkpoint : official_manifest(folder.variant)) {
            SCOPED_TRACE(folder.dir + "/" + checkpoint.file);
            const SafetensorsFile file(folder.dir + "/" + checkpoint.file);
            size_t stored = 0;
            for (const ManifestTensor &tensor : checkpoint.tensors) {
                const TensorView *view = file.find(tensor.name);
                if (!tensor.stored) {
                    EXPECT_EQ(view, nullptr) << tensor.name << " is a computed constant and must not be stored";
                    continue;
                }
                ++stored;
                ASSERT_NE(view, nullptr) << tensor.name << " is missing";
                EXPECT_EQ(view->shape, tensor.shape) << tensor.name;
                EXPECT_EQ(view->type, tensor.type) << tensor.name;
            }
            EXPECT_EQ(file.tensors().size(), stored) << "the file holds tensors the manifest does not list";
            EXPECT_TRUE(file.metadata().empty());
        }
    }
}

TEST(SyntheticFiles, TestVectorTensorsHoldTheRuleValues) {
    for (const VariantFolder &folder : variant_folders()) {
        for (const auto &v : folder.vectors) {
            SCOPED_TRACE(v.name);
            const SafetensorsFile file(folder.dir + "/" + v.file);
            const TensorView *view = file.find(v.name);
            ASSERT_NE(view, nullptr);
            ASSERT_EQ(view->shape, Shape(v.shape));
            const std::vector<float> values = to_f32(*view);
            for (int i = 0; i < 4; ++i) {
                uint32_t bits;
                std::memcpy(&bits, &values[i], sizeof bits);
                EXPECT_EQ(bits, v.first_bits[i]) << "value " << i;
            }
            std::vector<float> expected(values.size());
            fill_tensor(v.name, view->shape, kDefaultSeed, expected.data());
            EXPECT_EQ(std::memcmp(values.data(), expected.data(), values.size() * sizeof(float)), 0);
        }
    }
}

TEST(SyntheticFiles, BatchNormCountersAreZero) {
    for (const VariantFolder &folder : variant_folders()) {
        const SafetensorsFile file(folder.dir + "/" + folder.flow_file);
        size_t counters = 0;
        for (const TensorView &view : file.tensors()) {
            if (view.type != GGML_TYPE_I64) continue;
            ++counters;
            EXPECT_EQ(to_i64(view), std::vector<int64_t>{0}) << view.name;
        }
        EXPECT_EQ(counters, 122u) << folder.flow_file;
    }
}

// The folder's sizes come from its tensor shapes; on the full-size synthetic folder they give exactly the
// English configuration (each component struct's defaults).
TEST(SyntheticFiles, FolderHparamsAreTheEnglishDefaults) {
    const ModelFiles files = ModelFiles::open(test::synthetic_model_dir());
    EXPECT_EQ(files.hparams().variant, Variant::english);
    size_t compared = 0;
    visit_component_hparams(files.hparams(), [&](const auto &table, const auto &component) {
        static const std::decay_t<decltype(component)> english{};
        for (const auto &field : table) {
            std::visit([&](auto member) { EXPECT_EQ(component.*member, english.*member) << field.key; }, field.member);
            ++compared;
        }
    });
    EXPECT_GT(compared, 90u);
}

} // namespace
} // namespace chatterbox::synthetic
