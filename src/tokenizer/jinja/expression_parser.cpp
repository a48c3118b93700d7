#include "tokenizer/jinja/expression_parser.h"

#include <array>

#include "tokenizer/jinja/builtins.h"

namespace lmrun::jinja {
namespace {

Result<ExprPtr> parse_or(TokenStream& stream);

Error error_at_pos(SourcePos pos, const std::string& message) {
    return make_error("line {}, column {}: {}", pos.line, pos.column, message);
}

// Every node gets its depth when it is built; a chain (a|f|f|..., a+a+..., a.b.c...) grows
// one level per link in a loop, so the recursion guards alone would not bound it.
Result<ExprPtr> sealed(ExprPtr node) {
    node->depth = 1 + max_child_depth(*node);
    if (node->depth > kMaxExpressionDepth)
        return Error{fmt::format("line {}, column {}: expression nested too deeply (more than {} levels)",
                                 node->pos.line, node->pos.column, kMaxExpressionDepth),
                     ErrorKind::ResourceExhausted,
                     {}};
    return node;
}
Result<ExprPtr> parse_unary(TokenStream& stream, bool with_filter);

using SubParser = Result<ExprPtr> (*)(TokenStream&);

// Left-associative binary level: operand (op operand)*, where an op is an
// operator token or a keyword name such as "and".
Result<ExprPtr> parse_binary_level(TokenStream& stream, SubParser operand,
                                   std::initializer_list<std::string_view> ops, bool keyword) {
    LMRUN_ASSIGN_OR_RETURN(ExprPtr left, operand(stream));
    while (true) {
        std::string_view matched;
        for (const std::string_view op : ops)
            if (keyword ? stream.at_name(op) : stream.at_operator(op)) matched = op;
        if (matched.empty()) return left;
        const SourcePos pos = stream.next().pos;
        LMRUN_ASSIGN_OR_RETURN(ExprPtr right, operand(stream));
        LMRUN_ASSIGN_OR_RETURN(left, sealed(std::make_unique<BinaryExpr>(pos, std::string(matched),
                                                                         std::move(left), std::move(right))));
    }
}

Result<ExprPtr> parse_unary_filtered(TokenStream& stream) {
    return parse_unary(stream, true);
}
Result<ExprPtr> parse_pow(TokenStream& stream) {
    return parse_binary_level(stream, parse_unary_filtered, {"**"}, false);
}
Result<ExprPtr> parse_math2(TokenStream& stream) {
    return parse_binary_level(stream, parse_pow, {"*", "/", "//", "%"}, false);
}
Result<ExprPtr> parse_concat(TokenStream& stream) {
    return parse_binary_level(stream, parse_math2, {"~"}, false);
}
Result<ExprPtr> parse_math1(TokenStream& stream) {
    return parse_binary_level(stream, parse_concat, {"+", "-"}, false);
}

Result<ExprPtr> parse_compare(TokenStream& stream) {
    const SourcePos pos = stream.peek().pos;
    LMRUN_ASSIGN_OR_RETURN(ExprPtr first, parse_math1(stream));
    std::unique_ptr<CompareExpr> compare;
    static constexpr std::array<std::string_view, 6> kOps = {"==", "!=", "<", ">", "<=", ">="};
    while (true) {
        std::string op;
        for (const std::string_view candidate : kOps)
            if (stream.at_operator(candidate)) op = candidate;
        if (!op.empty() || stream.at_name("in")) {
            if (op.empty()) op = "in";
            stream.next();
        } else if (stream.at_name("not") && stream.at_name("in", 1)) {
            op = "notin";
            stream.next();
            stream.next();
        } else {
            break;
        }
        if (!compare) compare = std::make_unique<CompareExpr>(pos, std::move(first));
        LMRUN_ASSIGN_OR_RETURN(ExprPtr operand, parse_math1(stream));
        compare->rest.emplace_back(std::move(op), std::move(operand));
    }
    if (compare) return sealed(std::move(compare));
    return first;
}

Result<ExprPtr> parse_not(TokenStream& stream) {
    if (stream.at_name("not")) {
        const SourcePos pos = stream.next().pos;
        TokenStream::NestingGuard guard(stream);
        if (!guard.ok()) return stream.too_deep("expression");
        LMRUN_ASSIGN_OR_RETURN(ExprPtr operand, parse_not(stream));
        return sealed(std::make_unique<UnaryExpr>(pos, "not", std::move(operand)));
    }
    return parse_compare(stream);
}

Result<ExprPtr> parse_and(TokenStream& stream) {
    return parse_binary_level(stream, parse_not, {"and"}, true);
}
Result<ExprPtr> parse_or(TokenStream& stream) {
    return parse_binary_level(stream, parse_and, {"or"}, true);
}

// Literal, name, parenthesised expression or tuple, list or dict display.
Result<ExprPtr> parse_primary(TokenStream& stream);

Result<ExprPtr> parse_list_display(TokenStream& stream, const SourcePos pos) {
    auto list = std::make_unique<ListExpr>(pos);
    while (!stream.at_operator("]")) {
        LMRUN_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(stream));
        list->items.push_back(std::move(item));
        if (!stream.accept_operator(",")) break;
    }
    LMRUN_RETURN_IF_ERROR(stream.expect_operator("]"));
    return sealed(std::move(list));
}

Result<ExprPtr> parse_dict_display(TokenStream& stream, const SourcePos pos) {
    auto dict = std::make_unique<DictExpr>(pos);
    while (!stream.at_operator("}")) {
        LMRUN_ASSIGN_OR_RETURN(ExprPtr key, parse_expression(stream));
        LMRUN_RETURN_IF_ERROR(stream.expect_operator(":"));
        LMRUN_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(stream));
        dict->items.emplace_back(std::move(key), std::move(value));
        if (!stream.accept_operator(",")) break;
    }
    LMRUN_RETURN_IF_ERROR(stream.expect_operator("}"));
    return sealed(std::move(dict));
}

Result<ExprPtr> parse_parenthesized(TokenStream& stream, const SourcePos pos) {
    if (stream.accept_operator(")")) return ExprPtr(std::make_unique<ListExpr>(pos));  // ()
    LMRUN_ASSIGN_OR_RETURN(ExprPtr first, parse_expression(stream));
    if (!stream.at_operator(",")) {
        LMRUN_RETURN_IF_ERROR(stream.expect_operator(")"));
        return first;
    }
    auto tuple = std::make_unique<ListExpr>(pos);
    tuple->items.push_back(std::move(first));
    while (stream.accept_operator(",") && !stream.at_operator(")")) {
        LMRUN_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(stream));
        tuple->items.push_back(std::move(item));
    }
    LMRUN_RETURN_IF_ERROR(stream.expect_operator(")"));
    return sealed(std::move(tuple));
}

Result<ExprPtr> parse_primary(TokenStream& stream) {
    TokenStream::NestingGuard guard(stream);
    if (!guard.ok()) return stream.too_deep("expression");
    const Token& token = stream.peek();
    const SourcePos pos = token.pos;
    switch (token.kind) {
        case TokenKind::Name: {
            const std::string name = stream.next().text;
            if (name == "true" || name == "True")
                return ExprPtr(std::make_unique<LiteralExpr>(pos, Value(true)));
            if (name == "false" || name == "False")
                return ExprPtr(std::make_unique<LiteralExpr>(pos, Value(false)));
            if (name == "none" || name == "None")
                return ExprPtr(std::make_unique<LiteralExpr>(pos, Value::none()));
            return ExprPtr(std::make_unique<NameExpr>(pos, name));
        }
        case TokenKind::String: {
            std::string text;
            while (stream.at(TokenKind::String)) text += stream.next().text;  // "a" "b" == "ab"
            return ExprPtr(std::make_unique<LiteralExpr>(pos, Value(std::move(text))));
        }
        case TokenKind::Integer:
            return ExprPtr(std::make_unique<LiteralExpr>(pos, Value(stream.next().int_value)));
        case TokenKind::Float:
            return ExprPtr(std::make_unique<LiteralExpr>(pos, Value(stream.next().float_value)));
        case TokenKind::Operator:
            if (stream.accept_operator("(")) return parse_parenthesized(stream, pos);
            if (stream.accept_operator("[")) return parse_list_display(stream, pos);
            if (stream.accept_operator("{")) return parse_dict_display(stream, pos);
            break;
        default:
            break;
    }
    return stream.unexpected("an expression");
}

// After '[': an index or a slice [start:stop:step].
Result<ExprPtr> parse_subscript(TokenStream& stream, ExprPtr object, const SourcePos pos) {
    ExprPtr start;
    if (!stream.at_operator(":")) {
        LMRUN_ASSIGN_OR_RETURN(start, parse_expression(stream));
        if (stream.accept_operator("]"))
            return sealed(std::make_unique<GetItemExpr>(pos, std::move(object), std::move(start)));
    }
    LMRUN_RETURN_IF_ERROR(stream.expect_operator(":"));
    auto slice = std::make_unique<SliceExpr>(pos, std::move(object));
    slice->start = std::move(start);
    if (!stream.at_operator("]") && !stream.at_operator(":")) {
        LMRUN_ASSIGN_OR_RETURN(slice->stop, parse_expression(stream));
    }
    if (stream.accept_operator(":") && !stream.at_operator("]")) {
        LMRUN_ASSIGN_OR_RETURN(slice->step, parse_expression(stream));
    }
    LMRUN_RETURN_IF_ERROR(stream.expect_operator("]"));
    return sealed(std::move(slice));
}

Result<ExprPtr> parse_call(TokenStream& stream, ExprPtr callee, const SourcePos pos) {
    auto call = std::make_unique<CallExpr>(pos, std::move(callee));
    LMRUN_ASSIGN_OR_RETURN(call->args, parse_call_args(stream));
    return sealed(std::move(call));
}

Result<ExprPtr> parse_postfix(TokenStream& stream, ExprPtr node) {
    while (true) {
        const SourcePos pos = stream.peek().pos;
        if (stream.accept_operator(".")) {
            if (stream.at(TokenKind::Integer)) {
                auto index = std::make_unique<LiteralExpr>(pos, Value(stream.next().int_value));
                LMRUN_ASSIGN_OR_RETURN(
                    node, sealed(std::make_unique<GetItemExpr>(pos, std::move(node), std::move(index))));
                continue;
            }
            LMRUN_ASSIGN_OR_RETURN(std::string name, stream.expect_name());
            LMRUN_ASSIGN_OR_RETURN(
                node, sealed(std::make_unique<GetAttrExpr>(pos, std::move(node), std::move(name))));
        } else if (stream.accept_operator("[")) {
            LMRUN_ASSIGN_OR_RETURN(node, parse_subscript(stream, std::move(node), pos));
        } else if (stream.accept_operator("(")) {
            LMRUN_ASSIGN_OR_RETURN(node, parse_call(stream, std::move(node), pos));
        } else {
            return node;
        }
    }
}

// `is [not] name`, then `(args)` or, as in Jinja, one bare primary argument.
Result<ExprPtr> parse_test(TokenStream& stream, ExprPtr operand, const SourcePos pos) {
    const bool negated = stream.accept_name("not");
    LMRUN_ASSIGN_OR_RETURN(std::string name, stream.expect_name());
    if (!is_known_test(name)) return error_at_pos(pos, fmt::format("unknown test '{}'", name));
    auto test = std::make_unique<FilterExpr>(ExprKind::Test, pos, std::move(operand), std::move(name));
    test->negated = negated;
    const Token& token = stream.peek();
    if (stream.accept_operator("(")) {
        LMRUN_ASSIGN_OR_RETURN(test->args, parse_call_args(stream));
    } else if ((token.kind == TokenKind::Name || token.kind == TokenKind::String ||
                token.kind == TokenKind::Integer || token.kind == TokenKind::Float ||
                stream.at_operator("[") || stream.at_operator("{")) &&
               !stream.at_name("else") && !stream.at_name("or") && !stream.at_name("and")) {
        if (stream.at_name("is")) return stream.error_at(token, "tests cannot be chained with 'is'");
        LMRUN_ASSIGN_OR_RETURN(ExprPtr argument, parse_primary(stream));
        LMRUN_ASSIGN_OR_RETURN(argument, parse_postfix(stream, std::move(argument)));
        test->args.positional.push_back(std::move(argument));
    }
    return sealed(std::move(test));
}

Result<ExprPtr> parse_filter_chain(TokenStream& stream, ExprPtr node) {
    while (true) {
        const SourcePos pos = stream.peek().pos;
        if (stream.accept_operator("|")) {
            LMRUN_ASSIGN_OR_RETURN(std::string name, stream.expect_name());
            if (!is_known_filter(name)) return error_at_pos(pos, fmt::format("unknown filter '{}'", name));
            auto filter =
                std::make_unique<FilterExpr>(ExprKind::Filter, pos, std::move(node), std::move(name));
            if (stream.accept_operator("(")) {
                LMRUN_ASSIGN_OR_RETURN(filter->args, parse_call_args(stream));
            }
            LMRUN_ASSIGN_OR_RETURN(node, sealed(std::move(filter)));
        } else if (stream.accept_name("is")) {
            LMRUN_ASSIGN_OR_RETURN(node, parse_test(stream, std::move(node), pos));
        } else if (stream.accept_operator("(")) {
            LMRUN_ASSIGN_OR_RETURN(node, parse_call(stream, std::move(node), pos));
        } else {
            return node;
        }
    }
}

Result<ExprPtr> parse_unary(TokenStream& stream, bool with_filter) {
    TokenStream::NestingGuard guard(stream);
    if (!guard.ok()) return stream.too_deep("expression");
    const SourcePos pos = stream.peek().pos;
    ExprPtr node;
    if (stream.at_operator("-") || stream.at_operator("+")) {
        const std::string op = stream.next().text;
        LMRUN_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(stream, false));
        LMRUN_ASSIGN_OR_RETURN(node, sealed(std::make_unique<UnaryExpr>(pos, op, std::move(operand))));
    } else {
        LMRUN_ASSIGN_OR_RETURN(node, parse_primary(stream));
    }
    LMRUN_ASSIGN_OR_RETURN(node, parse_postfix(stream, std::move(node)));
    if (with_filter) {
        LMRUN_ASSIGN_OR_RETURN(node, parse_filter_chain(stream, std::move(node)));
    }
    return node;
}

}  // namespace

Result<ExprPtr> parse_expression(TokenStream& stream, bool with_conditional) {
    TokenStream::NestingGuard guard(stream);
    if (!guard.ok()) return stream.too_deep("expression");
    LMRUN_ASSIGN_OR_RETURN(ExprPtr node, parse_or(stream));
    if (!with_conditional) return node;
    while (stream.at_name("if")) {
        const SourcePos pos = stream.next().pos;
        LMRUN_ASSIGN_OR_RETURN(ExprPtr condition, parse_or(stream));
        ExprPtr if_false;
        if (stream.accept_name("else")) {
            LMRUN_ASSIGN_OR_RETURN(if_false, parse_expression(stream));
        }
        LMRUN_ASSIGN_OR_RETURN(node, sealed(std::make_unique<ConditionalExpr>(
                                         pos, std::move(condition), std::move(node), std::move(if_false))));
    }
    return node;
}

Result<ExprPtr> parse_tuple(TokenStream& stream, bool with_conditional) {
    const SourcePos pos = stream.peek().pos;
    LMRUN_ASSIGN_OR_RETURN(ExprPtr first, parse_expression(stream, with_conditional));
    if (!stream.at_operator(",")) return first;
    auto tuple = std::make_unique<ListExpr>(pos);
    tuple->items.push_back(std::move(first));
    while (stream.accept_operator(",")) {
        if (stream.at(TokenKind::BlockEnd) || stream.at(TokenKind::VariableEnd) || stream.at_name("if"))
            break;
        LMRUN_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(stream, with_conditional));
        tuple->items.push_back(std::move(item));
    }
    return sealed(std::move(tuple));
}

Result<CallArgExprs> parse_call_args(TokenStream& stream) {
    CallArgExprs args;
    while (!stream.at_operator(")")) {
        if (stream.at_operator("*") || stream.at_operator("**"))
            return stream.error_at(stream.peek(), "*args and **kwargs in calls are not supported");
        if (stream.at(TokenKind::Name) && stream.at_operator("=", 1)) {
            std::string name = stream.next().text;
            stream.next();
            LMRUN_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(stream));
            args.keyword.emplace_back(std::move(name), std::move(value));
        } else {
            if (!args.keyword.empty())
                return stream.error_at(stream.peek(), "positional argument follows keyword argument");
            LMRUN_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(stream));
            args.positional.push_back(std::move(value));
        }
        if (!stream.accept_operator(",")) break;
    }
    LMRUN_RETURN_IF_ERROR(stream.expect_operator(")"));
    return args;
}

}  // namespace lmrun::jinja
