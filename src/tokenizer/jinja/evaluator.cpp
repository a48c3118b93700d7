// Expression evaluation of the Interpreter (statements are in interpreter.cpp).
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/operations.h"
#include "tokenizer/jinja/value_format.h"

namespace lmrun::jinja {

// Builtins report errors without a position; the first caller that knows the
// node adds it (nested errors already carry theirs).
Error error_at(SourcePos pos, const std::string& message) {
    return error_at(pos, make_error("{}", message));
}

Error error_at(SourcePos pos, const Error& error) {
    if (error.message.rfind("line ", 0) == 0) return error;
    return Error{fmt::format("line {}, column {}: {}", pos.line, pos.column, error.message), error.kind,
                 error.subject};
}

// `lhs` may be a declaration ("Value v"), which parentheses would break.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define LMRUN_JINJA_TRY(lhs, expr, pos)                                      \
    auto LMRUN_CONCAT(jinja_result_, __LINE__) = (expr);                     \
    if (!LMRUN_CONCAT(jinja_result_, __LINE__).ok())                         \
        return error_at(pos, LMRUN_CONCAT(jinja_result_, __LINE__).error()); \
    lhs = std::move(LMRUN_CONCAT(jinja_result_, __LINE__)).value()
// NOLINTEND(bugprone-macro-parentheses)

Status Interpreter::enter(SourcePos pos) {
    if (++depth_ > budget_.limits().max_depth) {
        --depth_;
        return error_at(pos, make_error(ErrorKind::ResourceExhausted,
                                        "template nested too deeply (more than {} "
                                        "levels of evaluation)",
                                        budget_.limits().max_depth));
    }
    if (!budget_.spend_steps(1)) {
        --depth_;
        return budget_error(pos);
    }
    return ok_status();
}

Error Interpreter::budget_error(SourcePos pos) const {
    return error_at(pos, make_error(ErrorKind::ResourceExhausted, "{}", budget_.reason()));
}

Status Interpreter::check_created(const Value& value, SourcePos pos) {
    if (value.kind() == ValueKind::List || value.kind() == ValueKind::Dict) {
        const size_t items =
            value.kind() == ValueKind::List ? value.as_list().size() : value.as_dict().entries.size();
        Status status = check_list_items(items, fmt::format("a {}", type_name(value.kind())));
        if (status.ok())
            status = check_value_bytes(value.size_bytes(), fmt::format("a {}", type_name(value.kind())));
        if (!status.ok()) return error_at(pos, status.error());
        if (!budget_.spend_bytes(16 * uint64_t(items))) return budget_error(pos);
    } else if (value.is_string()) {
        if (Status status = check_value_bytes(value.size_bytes(), "a string"); !status.ok())
            return error_at(pos, status.error());
        if (!budget_.spend_bytes(value.size_bytes())) return budget_error(pos);
    }
    return ok_status();
}

Value Interpreter::lookup(const std::string& name) const {
    for (size_t i = frames_.size(); i > base_; --i) {
        const auto found = frames_[i - 1].find(name);
        if (found != frames_[i - 1].end()) return found->second;
    }
    const auto global = frames_[0].find(name);
    if (global != frames_[0].end()) return global->second;
    return Value::undefined(fmt::format("'{}' is undefined", name));
}

Result<Value> Interpreter::eval(const Expr& expr) {
    LMRUN_RETURN_IF_ERROR(enter(expr.pos));
    Result<Value> result = eval_kind(expr);
    leave();
    if (!result.ok()) return result;
    // Operations stop early once the budget is spent; their (partial) result is discarded here.
    if (budget_.exhausted()) return budget_error(expr.pos);
    switch (expr.kind) {
        case ExprKind::Literal:
        case ExprKind::Name:
        case ExprKind::GetAttr:
        case ExprKind::GetItem:
        case ExprKind::Conditional:
            return result;  // an existing value, not a new one
        default:
            LMRUN_RETURN_IF_ERROR(check_created(*result, expr.pos));
            return result;
    }
}

Result<Value> Interpreter::eval_kind(const Expr& expr) {
    switch (expr.kind) {
        case ExprKind::Literal:
            return static_cast<const LiteralExpr&>(expr).value;
        case ExprKind::Name:
            return lookup(static_cast<const NameExpr&>(expr).name);
        case ExprKind::GetAttr:
            return eval_get_attr(static_cast<const GetAttrExpr&>(expr));
        case ExprKind::GetItem:
            return eval_get_item(static_cast<const GetItemExpr&>(expr));
        case ExprKind::Slice:
            return eval_slice(static_cast<const SliceExpr&>(expr));
        case ExprKind::Call:
            return eval_call(static_cast<const CallExpr&>(expr));
        case ExprKind::Filter:
            return eval_filter(static_cast<const FilterExpr&>(expr));
        case ExprKind::Test:
            return eval_test(static_cast<const FilterExpr&>(expr));
        case ExprKind::Unary:
            return eval_unary(static_cast<const UnaryExpr&>(expr));
        case ExprKind::Binary:
            return eval_binary(static_cast<const BinaryExpr&>(expr));
        case ExprKind::Compare:
            return eval_compare(static_cast<const CompareExpr&>(expr));
        case ExprKind::Conditional: {
            const auto& conditional = static_cast<const ConditionalExpr&>(expr);
            LMRUN_ASSIGN_OR_RETURN(Value condition, eval(*conditional.condition));
            if (condition.truthy()) return eval(*conditional.if_true);
            if (conditional.if_false) return eval(*conditional.if_false);
            return Value::undefined("the inline if expression has no else branch");
        }
        case ExprKind::List:
            return eval_list(static_cast<const ListExpr&>(expr));
        case ExprKind::Dict:
            return eval_dict(static_cast<const DictExpr&>(expr));
    }
    return error_at(expr.pos, "unknown expression");
}

Result<Value> Interpreter::eval_get_attr(const GetAttrExpr& expr) {
    LMRUN_ASSIGN_OR_RETURN(Value object, eval(*expr.object));
    if (object.is_undefined()) return error_at(expr.pos, undefined_error(object).message);
    return get_attribute(object, expr.name);
}

Result<Value> Interpreter::eval_get_item(const GetItemExpr& expr) {
    LMRUN_ASSIGN_OR_RETURN(Value object, eval(*expr.object));
    LMRUN_ASSIGN_OR_RETURN(Value index, eval(*expr.index));
    LMRUN_JINJA_TRY(Value item, get_item(object, index), expr.pos);
    return item;
}

Result<Value> Interpreter::eval_slice(const SliceExpr& expr) {
    LMRUN_ASSIGN_OR_RETURN(Value object, eval(*expr.object));
    Value bounds[3];
    const Expr* bound_exprs[3] = {expr.start.get(), expr.stop.get(), expr.step.get()};
    for (int i = 0; i < 3; ++i) {
        if (bound_exprs[i] != nullptr) {
            LMRUN_ASSIGN_OR_RETURN(bounds[i], eval(*bound_exprs[i]));
        }
    }
    LMRUN_JINJA_TRY(Value sliced, slice_value(object, bounds[0], bounds[1], bounds[2]), expr.pos);
    return sliced;
}

Result<CallArgs> Interpreter::eval_args(const CallArgExprs& args) {
    CallArgs values;
    for (const ExprPtr& arg : args.positional) {
        LMRUN_ASSIGN_OR_RETURN(Value value, eval(*arg));
        values.positional.push_back(std::move(value));
    }
    for (const auto& [name, arg] : args.keyword) {
        LMRUN_ASSIGN_OR_RETURN(Value value, eval(*arg));
        values.keyword.emplace_back(name, std::move(value));
    }
    return values;
}

Result<Value> Interpreter::eval_call(const CallExpr& expr) {
    Value callee;
    if (expr.callee->kind == ExprKind::GetAttr) {
        // obj.method(args): Python methods of str and dict.
        const auto& attr = static_cast<const GetAttrExpr&>(*expr.callee);
        LMRUN_ASSIGN_OR_RETURN(Value object, eval(*attr.object));
        if (object.is_undefined()) return error_at(attr.pos, undefined_error(object).message);
        if (has_method(object, attr.name)) {
            LMRUN_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr.args));
            LMRUN_JINJA_TRY(Value result, call_method(object, attr.name, args), expr.pos);
            return result;
        }
        callee = get_attribute(object, attr.name);
    } else {
        LMRUN_ASSIGN_OR_RETURN(callee, eval(*expr.callee));
    }
    LMRUN_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr.args));
    LMRUN_JINJA_TRY(Value result, call(callee, args), expr.pos);
    return result;
}

Result<Value> Interpreter::call(const Value& callee, const CallArgs& args) {
    if (callee.is_undefined()) return undefined_error(callee);
    if (callee.kind() != ValueKind::Callable)
        return make_error("'{}' object is not callable", type_name(callee.kind()));
    return callee.as_callable().function(args, *this);
}

Result<Value> Interpreter::eval_filter(const FilterExpr& expr) {
    LMRUN_ASSIGN_OR_RETURN(Value operand, eval(*expr.operand));
    LMRUN_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr.args));
    LMRUN_JINJA_TRY(Value result, apply_filter(expr.name, operand, args, *this), expr.pos);
    return result;
}

Result<Value> Interpreter::eval_test(const FilterExpr& expr) {
    LMRUN_ASSIGN_OR_RETURN(Value operand, eval(*expr.operand));
    LMRUN_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr.args));
    LMRUN_JINJA_TRY(bool passed, apply_test(expr.name, operand, args), expr.pos);
    return Value(passed != expr.negated);
}

Result<Value> Interpreter::eval_unary(const UnaryExpr& expr) {
    LMRUN_ASSIGN_OR_RETURN(Value operand, eval(*expr.operand));
    if (expr.op == "not") return Value(!operand.truthy());
    if (operand.is_undefined()) return error_at(expr.pos, undefined_error(operand).message);
    if (!operand.is_number())
        return error_at(
            expr.pos, fmt::format("bad operand type for unary {}: '{}'", expr.op, type_name(operand.kind())));
    if (expr.op == "+")
        return operand.kind() == ValueKind::Bool ? Value(int64_t{operand.as_bool()}) : operand;
    if (operand.kind() == ValueKind::Float) return Value(-operand.as_float());  // keeps -0.0
    LMRUN_JINJA_TRY(Value negated, arithmetic("-", Value(int64_t{0}), operand), expr.pos);
    return negated;
}

Result<Value> Interpreter::eval_binary(const BinaryExpr& expr) {
    LMRUN_ASSIGN_OR_RETURN(Value left, eval(*expr.left));
    // and/or short-circuit and return an operand, as in Python.
    if (expr.op == "and") return left.truthy() ? eval(*expr.right) : left;
    if (expr.op == "or") return left.truthy() ? left : eval(*expr.right);
    LMRUN_ASSIGN_OR_RETURN(Value right, eval(*expr.right));
    if (expr.op == "~") {
        std::string left_text = to_python_str(left);
        std::string right_text = to_python_str(right);
        if (Status fits = check_value_bytes(left_text.size() + right_text.size(), "the result of '~'");
            !fits.ok())
            return error_at(expr.pos, fits.error());
        return Value(std::move(left_text) + right_text);
    }
    LMRUN_JINJA_TRY(Value result, arithmetic(expr.op, left, right), expr.pos);
    return result;
}

namespace {

Result<bool> compare_values(const std::string& op, const Value& left, const Value& right) {
    if (op == "==") return values_equal(left, right);
    if (op == "!=") return !values_equal(left, right);
    if (op == "in") return contains(right, left);
    if (op == "notin") {
        LMRUN_ASSIGN_OR_RETURN(bool found, contains(right, left));
        return !found;
    }
    if (op == "<") return value_less(left, right);
    if (op == ">") return value_less(right, left);
    if (op == "<=") {
        LMRUN_ASSIGN_OR_RETURN(bool greater, value_less(right, left));
        return !greater;
    }
    LMRUN_ASSIGN_OR_RETURN(bool less, value_less(left, right));  // ">="
    return !less;
}

}  // namespace

Result<Value> Interpreter::eval_compare(const CompareExpr& expr) {
    LMRUN_ASSIGN_OR_RETURN(Value left, eval(*expr.first));
    for (const auto& [op, operand_expr] : expr.rest) {
        LMRUN_ASSIGN_OR_RETURN(Value right, eval(*operand_expr));
        LMRUN_JINJA_TRY(bool holds, compare_values(op, left, right), expr.pos);
        if (!holds) return Value(false);
        left = std::move(right);
    }
    return Value(true);
}

Result<Value> Interpreter::eval_list(const ListExpr& expr) {
    ValueList items;
    items.reserve(expr.items.size());
    for (const ExprPtr& item : expr.items) {
        LMRUN_ASSIGN_OR_RETURN(Value value, eval(*item));
        items.push_back(std::move(value));
    }
    Value list = Value::list(std::move(items));
    if (list.depth() > Value::kMaxDepth) return error_at(expr.pos, "lists and dicts nested too deeply");
    return list;
}

Result<Value> Interpreter::eval_dict(const DictExpr& expr) {
    ValueDict dict;
    for (const auto& [key_expr, value_expr] : expr.items) {
        LMRUN_ASSIGN_OR_RETURN(Value key, eval(*key_expr));
        if (!key.is_string())
            return error_at(key_expr->pos,
                            fmt::format("dict keys must be strings, not {}", type_name(key.kind())));
        LMRUN_ASSIGN_OR_RETURN(Value value, eval(*value_expr));
        dict.set(key.as_string(), std::move(value));
    }
    Value result = Value::dict(std::move(dict));
    if (result.depth() > Value::kMaxDepth) return error_at(expr.pos, "lists and dicts nested too deeply");
    return result;
}

}  // namespace lmrun::jinja
