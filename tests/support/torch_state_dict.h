#pragma once
// A writer of PyTorch .pt state dicts for tests: what torch.save(module.state_dict(), path) writes
// (torch 2.x zip format), in the subset src/core/torch_pickle.cpp reads. Real weights are published
// this way (the multilingual ve.pt, s3gen.pt); no project code writes them, so the tests make their own.
//
// Archive (zip, stored), records in torch's order under `root`/: data.pkl, .format_version ("1"),
// .storage_alignment ("64"), byteorder ("little"), data/<key> (one storage per tensor, raw
// little-endian), version ("3\n"), .data/serialization_id. Unlike torch, record data is not padded to
// 64-byte offsets (the reader does not need it).
// data.pkl, pickle protocol 2 as Python's pickler emits it for a state dict:
//   collections.OrderedDict() filled by SETITEMS (batches of 1000, as Python's), each value
//   torch._utils._rebuild_tensor_v2(storage, 0, size, stride, False, OrderedDict()) where the storage
//   is the persistent id ('storage', torch.<Type>Storage, key, 'cpu', numel); then BUILD with the
//   state {'_metadata': OrderedDict({'': {'version': 1}})}, the attribute state_dict() sets.

#include "core/tensor.h"
#include "core/weight_store.h"

#include <string>
#include <vector>

namespace chatterbox::test {

// Writes tensors (f32, f16, bf16, i64, i32; keys = their names) as a state dict. Throws Error for
// another type or when the file cannot be written.
void write_torch_state_dict(const std::string &path, const std::vector<TensorView> &tensors,
                            const std::string &root = "archive");

// The tensors of store under prefix, named as in their checkpoint (without the prefix): a component's
// state dict ("ve.", "s3gen.").
std::vector<TensorView> state_dict_of(const WeightStore &store, const std::string &prefix);

// The archive around any data.pkl: storages[i] is record data/<i> (a pickle may name them as its
// persistent ids). For hand-written pickles in reader tests.
void write_torch_archive(const std::string &path, const std::string &data_pkl, const std::vector<TensorView> &storages,
                         const std::string &root = "archive");

} // namespace chatterbox::test
