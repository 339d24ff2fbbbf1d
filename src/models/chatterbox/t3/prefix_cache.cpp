#include "models/chatterbox/t3/prefix_cache.h"

#include "core/error.h"

namespace chatterbox::t3 {

PrefixCache::PrefixCache(size_t max_entries) : max_entries_(max_entries) {
    if (max_entries < 1) fail("T3 prefix cache: it needs room for one entry at least");
}

size_t PrefixCache::entries() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
}

std::shared_ptr<const KvPrefix> PrefixCache::get(T3Session &session, const CondEmbeddings &cond) {
    const ggml_type type = session.options().kv_type;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = entries_.begin(); it != entries_.end(); ++it)
            if (it->type == type && it->cond == cond.values) {
                entries_.splice(entries_.begin(), entries_, it);
                ++hits_;
                return it->prefix;
            }
    }
    // Computed outside the lock: two sessions missing the same voice at once both compute it (the
    // same values), and other voices are not held up.
    ++misses_;
    session.prefill(cond.values, 1, cond.length, 0);
    auto prefix = std::make_shared<const KvPrefix>(session.export_prefix(cond.length));
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_front({type, cond.values, prefix});
    if (entries_.size() > max_entries_) entries_.pop_back();
    return prefix;
}

} // namespace chatterbox::t3
