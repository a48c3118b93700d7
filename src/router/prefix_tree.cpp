#include "router/prefix_tree.h"

#include <algorithm>
#include <queue>
#include <utility>

namespace lmrun::router {

struct PrefixTree::Node {
    std::string label;  // the bytes on the edge from the parent
    Node* parent = nullptr;
    std::vector<std::unique_ptr<Node>> children;         // distinct first bytes
    std::vector<std::pair<TenantId, uint64_t>> tenants;  // holder, time of last use

    Node* child_starting_with(char byte) const {
        for (const auto& child : children)
            if (child->label[0] == byte) return child.get();
        return nullptr;
    }
    std::pair<TenantId, uint64_t>* find(TenantId tenant) {
        for (auto& entry : tenants)
            if (entry.first == tenant) return &entry;
        return nullptr;
    }
    bool holds(TenantId tenant) const {
        return std::any_of(tenants.begin(), tenants.end(), [&](const auto& e) { return e.first == tenant; });
    }
    bool is_leaf_of(TenantId tenant) const {
        return std::none_of(children.begin(), children.end(),
                            [&](const auto& child) { return child->holds(tenant); });
    }
};

namespace {

size_t common_prefix(std::string_view a, std::string_view b) {
    const size_t limit = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < limit && a[i] == b[i]) ++i;
    return i;
}

}  // namespace

PrefixTree::PrefixTree(size_t default_limit_bytes)
    : default_limit_(default_limit_bytes), root_(std::make_unique<Node>()) {}

PrefixTree::~PrefixTree() {
    // Iteratively: a long chain of nodes would overflow the stack in recursive destructors.
    std::vector<std::unique_ptr<Node>> pending;
    pending.push_back(std::move(root_));
    while (!pending.empty()) {
        std::unique_ptr<Node> node = std::move(pending.back());
        pending.pop_back();
        for (auto& child : node->children) pending.push_back(std::move(child));
    }
}

PrefixTree::TenantState& PrefixTree::state_of(TenantId tenant) {
    if (size_t(tenant) >= tenants_.size()) tenants_.resize(size_t(tenant) + 1);
    return tenants_[size_t(tenant)];
}

size_t PrefixTree::limit_of(TenantId tenant) const {
    const size_t own = size_t(tenant) < tenants_.size() ? tenants_[size_t(tenant)].limit : 0;
    return own > 0 ? own : default_limit_;
}

size_t PrefixTree::tenant_bytes(TenantId tenant) const {
    return size_t(tenant) < tenants_.size() ? tenants_[size_t(tenant)].bytes : 0;
}

void PrefixTree::set_limit(TenantId tenant, size_t limit_bytes) {
    state_of(tenant).limit = limit_bytes;
    if (tenant_bytes(tenant) > limit_of(tenant)) evict(tenant, limit_of(tenant) / 8 * 7);
}

void PrefixTree::match(std::string_view text, std::vector<int64_t>& matched) const {
    matched.assign(tenants_.size(), 0);
    const Node* node = root_.get();
    size_t depth = 0;
    while (depth < text.size()) {
        const Node* child = node->child_starting_with(text[depth]);
        if (!child) break;
        const size_t common = common_prefix(child->label, text.substr(depth));
        for (const auto& [tenant, last_use] : child->tenants)
            matched[size_t(tenant)] = int64_t(depth + common);
        if (common < child->label.size()) break;
        depth += common;
        node = child;
    }
}

void PrefixTree::mark(Node& node, TenantId tenant) {
    if (auto* entry = node.find(tenant)) {
        entry->second = clock_;
        return;
    }
    node.tenants.emplace_back(tenant, clock_);
    state_of(tenant).bytes += node.label.size();
}

void PrefixTree::insert(std::string_view text, TenantId tenant) {
    state_of(tenant);
    ++clock_;
    Node* node = root_.get();
    size_t depth = 0;
    while (depth < text.size()) {
        Node* child = node->child_starting_with(text[depth]);
        if (!child) {
            auto fresh = std::make_unique<Node>();
            fresh->label = std::string(text.substr(depth));
            fresh->parent = node;
            mark(*fresh, tenant);
            node->children.push_back(std::move(fresh));
            ++num_nodes_;
            break;
        }
        const size_t common = common_prefix(child->label, text.substr(depth));
        if (common < child->label.size()) {
            // Split the edge: a new node holds the shared part, with the same holders (their byte
            // counts do not change: the label is cut in two).
            auto middle = std::make_unique<Node>();
            middle->label = child->label.substr(0, common);
            middle->parent = node;
            middle->tenants = child->tenants;
            auto owner = std::find_if(node->children.begin(), node->children.end(),
                                      [&](const auto& c) { return c.get() == child; });
            std::unique_ptr<Node> lower = std::move(*owner);
            lower->label.erase(0, common);
            lower->parent = middle.get();
            middle->children.push_back(std::move(lower));
            child = middle.get();
            *owner = std::move(middle);
            ++num_nodes_;
        }
        mark(*child, tenant);
        depth += common;
        node = child;
    }
    if (tenant_bytes(tenant) > limit_of(tenant)) evict(tenant, limit_of(tenant) / 8 * 7);
}

void PrefixTree::remove_tenant(TenantId tenant) {
    if (size_t(tenant) < tenants_.size()) evict(tenant, 0);
}

void PrefixTree::unmark(Node* node, TenantId tenant) {
    auto& tenants = node->tenants;
    tenants.erase(
        std::remove_if(tenants.begin(), tenants.end(), [&](const auto& e) { return e.first == tenant; }),
        tenants.end());
    state_of(tenant).bytes -= node->label.size();
    num_evicted_bytes_ += int64_t(node->label.size());
    if (!tenants.empty()) return;
    // Nobody holds it, so by the invariant nobody holds its children: there are none left.
    Node* parent = node->parent;
    auto& siblings = parent->children;
    siblings.erase(
        std::find_if(siblings.begin(), siblings.end(), [&](const auto& c) { return c.get() == node; }));
    --num_nodes_;
}

void PrefixTree::evict(TenantId tenant, size_t target_bytes) {
    using Entry = std::pair<uint64_t, Node*>;  // last use, leaf
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> leaves;
    std::vector<Node*> stack = {root_.get()};
    while (!stack.empty()) {
        Node* node = stack.back();
        stack.pop_back();
        for (const auto& child : node->children) {
            if (!child->holds(tenant)) continue;
            if (child->is_leaf_of(tenant))
                leaves.emplace(child->find(tenant)->second, child.get());
            else
                stack.push_back(child.get());
        }
    }
    while (tenant_bytes(tenant) > target_bytes && !leaves.empty()) {
        Node* leaf = leaves.top().second;
        leaves.pop();
        Node* parent = leaf->parent;
        unmark(leaf, tenant);  // may destroy `leaf`
        if (parent != root_.get() && parent->is_leaf_of(tenant))
            leaves.emplace(parent->find(tenant)->second, parent);
    }
}

}  // namespace lmrun::router
