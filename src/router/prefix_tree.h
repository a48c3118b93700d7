// PrefixTree: the router's approximate picture of what each worker holds in its prefix
// cache (SGLang's "approximate tree"): a radix tree over the bytes of the prompt text
// that was sent, where every node records which workers ("tenants") were sent text
// passing through it, and when last. Nothing is asked of the workers: the tree only
// remembers what went where, so it is approximate (a worker may have evicted a prefix
// the tree still has, and the tokenizer's boundaries do not fall on the text's).
//
// Text, not token ids: the router needs no tokenizer or chat template (it stays
// model-agnostic and costs no tokenization per request), and a prompt that extends an
// earlier one (the next turn of a conversation, resending the history) extends its text
// just as it extends its tokens. The price is that a match is measured in bytes.
//
// Invariant: a tenant present at a node is present at all its ancestors (insertion marks
// the whole path; eviction removes a tenant only where no child holds it), so the match
// length of a tenant is the depth of the deepest node on the text's path that holds it.
//
// Memory bound: each tenant owns at most `limit` bytes of labels (the sum of the labels
// of the nodes that hold it); past that its least recently used leaves are evicted, down
// to 7/8 of the limit so that eviction runs once per many insertions. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lmrun::router {

class PrefixTree {
  public:
    using TenantId = int32_t;

    explicit PrefixTree(size_t default_limit_bytes);
    ~PrefixTree();
    PrefixTree(const PrefixTree&) = delete;
    PrefixTree& operator=(const PrefixTree&) = delete;

    // matched[t] = bytes of `text`'s longest prefix held by tenant t (0 for tenants never
    // seen); resized to cover every tenant id seen so far.
    void match(std::string_view text, std::vector<int64_t>& matched) const;
    // Records that `text` was sent to `tenant` (marks its path as just used), then evicts
    // that tenant's least recently used leaves if it is over its limit.
    void insert(std::string_view text, TenantId tenant);
    // Forgets everything sent to `tenant` (a worker removed from the router).
    void remove_tenant(TenantId tenant);
    // The tenant's own bound (e.g. from its KV cache's capacity); 0 = the default.
    void set_limit(TenantId tenant, size_t limit_bytes);

    size_t tenant_bytes(TenantId tenant) const;
    size_t num_nodes() const { return num_nodes_; }
    int64_t num_evicted_bytes() const { return num_evicted_bytes_; }

  private:
    struct Node;
    struct TenantState {
        size_t bytes = 0;
        size_t limit = 0;  // 0 = default
    };

    TenantState& state_of(TenantId tenant);
    size_t limit_of(TenantId tenant) const;
    void mark(Node& node, TenantId tenant);
    void evict(TenantId tenant, size_t target_bytes);
    // Removes `tenant` from `node` (a leaf for it); drops the node when nobody holds it.
    void unmark(Node* node, TenantId tenant);

    const size_t default_limit_;
    std::unique_ptr<Node> root_;
    std::vector<TenantState> tenants_;
    uint64_t clock_ = 0;  // logical time of insertions, for LRU
    size_t num_nodes_ = 0;
    int64_t num_evicted_bytes_ = 0;
};

}  // namespace lmrun::router
