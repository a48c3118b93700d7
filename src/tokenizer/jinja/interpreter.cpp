// Statement execution of the Interpreter (expressions are in evaluator.cpp).
#include "tokenizer/jinja/interpreter.h"

#include <algorithm>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/operations.h"
#include "tokenizer/jinja/value_format.h"

namespace lmrun::jinja {
namespace {

// Small enough that deep macro recursion with nested expressions stays within an 8 MiB stack.
constexpr int kMaxCallDepth = 32;
constexpr int64_t kMaxLoopIterations = 10'000'000;

// Jinja's `loop` variable for iteration `index` of `items`.
Value make_loop_value(const ValueList& items, size_t index) {
    const int64_t length = static_cast<int64_t>(items.size());
    const int64_t index0 = static_cast<int64_t>(index);
    ValueDict loop;
    loop.entries.reserve(12);
    loop.entries.emplace_back("index0", Value(index0));
    loop.entries.emplace_back("index", Value(index0 + 1));
    loop.entries.emplace_back("revindex0", Value(length - index0 - 1));
    loop.entries.emplace_back("revindex", Value(length - index0));
    loop.entries.emplace_back("first", Value(index == 0));
    loop.entries.emplace_back("last", Value(index + 1 == items.size()));
    loop.entries.emplace_back("length", Value(length));
    loop.entries.emplace_back("depth", Value(int64_t{1}));
    loop.entries.emplace_back("depth0", Value(int64_t{0}));
    loop.entries.emplace_back("previtem",
                              index > 0 ? items[index - 1] : Value::undefined("there is no previous item"));
    loop.entries.emplace_back(
        "nextitem", index + 1 < items.size() ? items[index + 1] : Value::undefined("there is no next item"));
    loop.entries.emplace_back(
        "cycle", Value::callable("loop.cycle", [index](const CallArgs& args, Interpreter&) -> Result<Value> {
            if (args.positional.empty()) return make_error("loop.cycle() needs at least one argument");
            return args.positional[index % args.positional.size()];
        }));
    return Value::dict(std::move(loop));
}

}  // namespace

Interpreter::Interpreter(const ValueDict& variables, const RenderLimits& limits) : budget_(limits) {
    frames_.emplace_back();
    add_builtin_globals(frames_[0]);
    for (const auto& [name, value] : variables.entries) frames_[0][name] = value;
}

Interpreter::~Interpreter() {
    // A namespace may hold itself (`set ns.me = [ns]`); clearing breaks such cycles.
    for (const Value& ns : namespaces_) ns.namespace_attributes().entries.clear();
}

void Interpreter::own_namespace(const Value& ns) {
    namespaces_.push_back(ns);
}

Result<std::string> Interpreter::render(const Template& tmpl) {
    ScopedRenderBudget scope(budget_);  // builtins and Value operations spend from it
    std::string out;
    LMRUN_ASSIGN_OR_RETURN(Flow flow, render_nodes(tmpl.body, out));
    (void)flow;  // the parser rejects break/continue outside loops
    return out;
}

Status Interpreter::append_output(std::string& out, std::string_view text, SourcePos pos) {
    if (out.size() + text.size() > budget_.limits().max_output_bytes)
        return error_at(pos, make_error(ErrorKind::ResourceExhausted,
                                        "rendered output is too large (more than {} "
                                        "bytes)",
                                        budget_.limits().max_output_bytes));
    // Copying text costs like creating it: a loop re-rendering a long string is bounded too.
    if (!budget_.spend_bytes(text.size())) return budget_error(pos);
    out += text;
    return ok_status();
}

Result<Interpreter::Flow> Interpreter::render_nodes(const NodeList& nodes, std::string& out) {
    for (const NodePtr& node : nodes) {
        LMRUN_ASSIGN_OR_RETURN(Flow flow, render_node(*node, out));
        if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
}

Result<Interpreter::Flow> Interpreter::render_node(const Node& node, std::string& out) {
    LMRUN_RETURN_IF_ERROR(enter(node.pos));
    Result<Flow> flow = render_statement(node, out);
    leave();
    return flow;
}

Result<Interpreter::Flow> Interpreter::render_statement(const Node& node, std::string& out) {
    switch (node.kind) {
        case NodeKind::Text:
            LMRUN_RETURN_IF_ERROR(append_output(out, static_cast<const TextNode&>(node).text, node.pos));
            return Flow::Normal;
        case NodeKind::Output: {
            LMRUN_ASSIGN_OR_RETURN(Value value, eval(*static_cast<const OutputNode&>(node).expr));
            const std::string text = to_python_str(value);
            if (budget_.exhausted()) return budget_error(node.pos);
            LMRUN_RETURN_IF_ERROR(append_output(out, text, node.pos));
            return Flow::Normal;
        }
        case NodeKind::If: {
            const auto& if_node = static_cast<const IfNode&>(node);
            for (const IfNode::Branch& branch : if_node.branches) {
                LMRUN_ASSIGN_OR_RETURN(Value condition, eval(*branch.condition));
                if (condition.truthy()) return render_nodes(branch.body, out);
            }
            return render_nodes(if_node.else_body, out);
        }
        case NodeKind::For:
            return render_for(static_cast<const ForNode&>(node), out);
        case NodeKind::Set:
            LMRUN_RETURN_IF_ERROR(render_set(static_cast<const SetNode&>(node)));
            return Flow::Normal;
        case NodeKind::SetBlock: {
            const auto& set_block = static_cast<const SetBlockNode&>(node);
            std::string captured;
            LMRUN_ASSIGN_OR_RETURN(Flow flow, render_nodes(set_block.body, captured));
            assign(set_block.target, Value(std::move(captured)));
            return flow;
        }
        case NodeKind::Macro: {
            const auto* macro = &static_cast<const MacroNode&>(node);
            assign(macro->name,
                   Value::callable(macro->name, [macro](const CallArgs& args, Interpreter& interpreter) {
                       return interpreter.call_macro(*macro, args);
                   }));
            return Flow::Normal;
        }
        case NodeKind::Break:
            return Flow::Break;
        case NodeKind::Continue:
            return Flow::Continue;
        case NodeKind::Scope:
            return render_nodes(static_cast<const ScopeNode&>(node).body, out);
    }
    return error_at(node.pos, "unknown statement");
}

Status Interpreter::bind_targets(const std::vector<std::string>& targets, const Value& value, SourcePos pos) {
    if (targets.size() == 1) {
        assign(targets[0], value);
        return ok_status();
    }
    auto items = iterate(value);
    if (!items.ok()) return error_at(pos, items.error().message);
    if (items->size() != targets.size())
        return error_at(pos,
                        fmt::format("cannot unpack {} values into {} names", items->size(), targets.size()));
    for (size_t i = 0; i < targets.size(); ++i) assign(targets[i], (*items)[i]);
    return ok_status();
}

Result<Interpreter::Flow> Interpreter::render_for(const ForNode& node, std::string& out) {
    LMRUN_ASSIGN_OR_RETURN(Value iterable, eval(*node.iterable));
    auto all_items = iterate(iterable);
    if (!all_items.ok()) return error_at(node.iterable->pos, all_items.error().message);
    ValueList items;
    if (node.filter) {
        // `for x in xs if cond`: filtering happens first, so loop.length counts kept items.
        for (Value& item : *all_items) {
            frames_.emplace_back();
            Status bound = bind_targets(node.targets, item, node.pos);
            Result<Value> keep = bound.ok() ? eval(*node.filter) : Result<Value>(bound.error());
            frames_.pop_back();
            if (!keep.ok()) return keep.error();
            if (keep->truthy()) items.push_back(std::move(item));
        }
    } else {
        items = std::move(*all_items);
    }
    if (items.empty()) return render_nodes(node.else_body, out);
    for (size_t i = 0; i < items.size(); ++i) {
        if (++num_loop_iterations_ > kMaxLoopIterations)
            return error_at(node.pos, "too many loop iterations");
        frames_.emplace_back();
        Status bound = bind_targets(node.targets, items[i], node.pos);
        if (bound.ok()) assign("loop", make_loop_value(items, i));
        Result<Flow> flow = bound.ok() ? render_nodes(node.body, out) : Result<Flow>(bound.error());
        frames_.pop_back();
        if (!flow.ok()) return flow.error();
        if (*flow == Flow::Break) break;
    }
    return Flow::Normal;
}

Status Interpreter::render_set(const SetNode& node) {
    LMRUN_ASSIGN_OR_RETURN(Value value, eval(*node.value));
    if (node.attribute.empty()) return bind_targets(node.targets, value, node.pos);
    const Value target = lookup(node.targets[0]);
    if (target.kind() != ValueKind::Namespace)
        return error_at(node.pos,
                        fmt::format("cannot assign attribute on non-namespace object '{}'", node.targets[0]));
    // Namespaces are the only way to grow a value across loop iterations, so
    // nesting is bounded here.
    if (value.depth() >= Value::kMaxDepth) return error_at(node.pos, "lists and dicts nested too deeply");
    target.namespace_attributes().set(node.attribute, std::move(value));
    return ok_status();
}

Result<Value> Interpreter::call_macro(const MacroNode& macro, const CallArgs& args) {
    if (args.positional.size() > macro.params.size())
        return make_error("macro '{}' takes not more than {} argument(s)", macro.name, macro.params.size());
    if (call_depth_ >= kMaxCallDepth)
        return make_error(ErrorKind::ResourceExhausted, "macro calls nested too deeply (more than {})",
                          kMaxCallDepth);
    Frame locals;
    for (size_t i = 0; i < args.positional.size(); ++i) locals[macro.params[i]] = args.positional[i];
    for (const auto& [name, value] : args.keyword) {
        if (std::find(macro.params.begin(), macro.params.end(), name) == macro.params.end())
            return make_error("macro '{}' has no argument named '{}'", macro.name, name);
        locals[name] = value;
    }
    // The macro body sees its arguments and the template globals, not the caller's locals.
    const size_t saved_base = base_;
    frames_.push_back(std::move(locals));
    base_ = frames_.size() - 1;
    ++call_depth_;
    Status defaults_status = ok_status();
    for (size_t i = 0; i < macro.params.size() && defaults_status.ok(); ++i) {
        if (frames_.back().count(macro.params[i]) != 0 || !macro.defaults[i]) continue;
        Result<Value> default_value = eval(*macro.defaults[i]);
        if (default_value.ok()) {
            frames_.back()[macro.params[i]] = std::move(*default_value);
        } else {
            defaults_status = default_value.error();
        }
    }
    std::string out;
    Result<Flow> flow =
        defaults_status.ok() ? render_nodes(macro.body, out) : Result<Flow>(defaults_status.error());
    --call_depth_;
    frames_.pop_back();
    base_ = saved_base;
    if (!flow.ok()) return flow.error();
    return Value(std::move(out));
}

}  // namespace lmrun::jinja
