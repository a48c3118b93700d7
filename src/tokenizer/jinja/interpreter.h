// Renders a parsed Template. One Interpreter renders once: it owns the
// variable scopes and counters of that render and never mutates the Template,
// so many threads can render one Template with their own Interpreters.
// Scoping follows Jinja: {% for %} bodies and macros get their own scope
// (so `set` inside a loop does not leak; namespaces exist for that), `if` does not.
// Every render is bounded by RenderLimits (render_budget.h): steps, bytes created,
// output size and nesting depth; exceeding one is a ResourceExhausted error.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/render_budget.h"
#include "tokenizer/jinja/value.h"

namespace lmrun::jinja {

class Interpreter {
  public:
    // `variables` are the template's top-level context (messages, flags, ...);
    // builtin functions (range, namespace, raise_exception, ...) are added.
    explicit Interpreter(const ValueDict& variables, const RenderLimits& limits = {});
    ~Interpreter();
    Interpreter(const Interpreter&) = delete;
    Interpreter& operator=(const Interpreter&) = delete;

    Result<std::string> render(const Template& tmpl);

    // Used by builtins that call back into the template (macros, caller).
    Result<Value> call(const Value& callee, const CallArgs& args);
    Result<Value> call_macro(const MacroNode& macro, const CallArgs& args);
    // namespace() registers what it creates; they are emptied when the render ends.
    void own_namespace(const Value& ns);

  private:
    enum class Flow { Normal, Break, Continue };
    using Frame = std::unordered_map<std::string, Value>;

    // Statements (interpreter.cpp).
    Result<Flow> render_nodes(const NodeList& nodes, std::string& out);
    Result<Flow> render_node(const Node& node, std::string& out);
    Result<Flow> render_statement(const Node& node, std::string& out);
    Result<Flow> render_for(const ForNode& node, std::string& out);
    Status render_set(const SetNode& node);
    Status bind_targets(const std::vector<std::string>& targets, const Value& value, SourcePos pos);
    Status append_output(std::string& out, std::string_view text, SourcePos pos);
    // Counts one level of evaluation and one step; an error past the limits.
    Status enter(SourcePos pos);
    void leave() { --depth_; }
    Error budget_error(SourcePos pos) const;
    // Checks a value an expression created against the value limits and spends its bytes.
    Status check_created(const Value& value, SourcePos pos);

    // Expressions (evaluator.cpp).
    Result<Value> eval(const Expr& expr);
    Result<Value> eval_kind(const Expr& expr);
    Result<Value> eval_get_attr(const GetAttrExpr& expr);
    Result<Value> eval_get_item(const GetItemExpr& expr);
    Result<Value> eval_slice(const SliceExpr& expr);
    Result<Value> eval_call(const CallExpr& expr);
    Result<CallArgs> eval_args(const CallArgExprs& args);
    Result<Value> eval_filter(const FilterExpr& expr);
    Result<Value> eval_test(const FilterExpr& expr);
    Result<Value> eval_unary(const UnaryExpr& expr);
    Result<Value> eval_binary(const BinaryExpr& expr);
    Result<Value> eval_compare(const CompareExpr& expr);
    Result<Value> eval_list(const ListExpr& expr);
    Result<Value> eval_dict(const DictExpr& expr);

    Value lookup(const std::string& name) const;
    void assign(const std::string& name, Value value) { frames_.back()[name] = std::move(value); }

    // frames_[0] holds builtins and the context; lookups search
    // frames_[base_..] innermost first, then frames_[0].
    std::vector<Frame> frames_;
    size_t base_ = 0;
    RenderBudget budget_;
    int depth_ = 0;  // nested eval() and render_node() calls
    int call_depth_ = 0;
    int64_t num_loop_iterations_ = 0;
    std::vector<Value> namespaces_;
};

// Error message with "line L, column C: " prepended once; the second form keeps the error's kind.
Error error_at(SourcePos pos, const std::string& message);
Error error_at(SourcePos pos, const Error& error);

}  // namespace lmrun::jinja
