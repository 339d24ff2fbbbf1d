#pragma once
// chatterbox-golden torch-rng --golden DIR --out DIR: the draws of a torch_rng golden set
// (golden/torch_rng/index.json) recomputed from its seeds, probability rows and shapes alone.

namespace chatterbox::golden {

// argv[0] is "torch-rng". Returns the process's exit status.
int torch_rng_main(int argc, char **argv);

} // namespace chatterbox::golden
