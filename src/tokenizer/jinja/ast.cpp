#include "tokenizer/jinja/ast.h"

#include <algorithm>

namespace lmrun::jinja {
namespace {

int depth_of(const ExprPtr& expr) {
    return expr ? expr->depth : 0;
}

int depth_of(const CallArgExprs& args) {
    int depth = 0;
    for (const ExprPtr& arg : args.positional) depth = std::max(depth, depth_of(arg));
    for (const auto& [name, arg] : args.keyword) depth = std::max(depth, depth_of(arg));
    return depth;
}

}  // namespace

int max_child_depth(const Expr& expr) {
    switch (expr.kind) {
        case ExprKind::Literal:
        case ExprKind::Name:
            return 0;
        case ExprKind::GetAttr:
            return depth_of(static_cast<const GetAttrExpr&>(expr).object);
        case ExprKind::GetItem: {
            const auto& item = static_cast<const GetItemExpr&>(expr);
            return std::max(depth_of(item.object), depth_of(item.index));
        }
        case ExprKind::Slice: {
            const auto& slice = static_cast<const SliceExpr&>(expr);
            return std::max(
                {depth_of(slice.object), depth_of(slice.start), depth_of(slice.stop), depth_of(slice.step)});
        }
        case ExprKind::Call: {
            const auto& call = static_cast<const CallExpr&>(expr);
            return std::max(depth_of(call.callee), depth_of(call.args));
        }
        case ExprKind::Filter:
        case ExprKind::Test: {
            const auto& filter = static_cast<const FilterExpr&>(expr);
            return std::max(depth_of(filter.operand), depth_of(filter.args));
        }
        case ExprKind::Unary:
            return depth_of(static_cast<const UnaryExpr&>(expr).operand);
        case ExprKind::Binary: {
            const auto& binary = static_cast<const BinaryExpr&>(expr);
            return std::max(depth_of(binary.left), depth_of(binary.right));
        }
        case ExprKind::Compare: {
            const auto& compare = static_cast<const CompareExpr&>(expr);
            int depth = depth_of(compare.first);
            for (const auto& [op, operand] : compare.rest) depth = std::max(depth, depth_of(operand));
            return depth;
        }
        case ExprKind::Conditional: {
            const auto& conditional = static_cast<const ConditionalExpr&>(expr);
            return std::max({depth_of(conditional.condition), depth_of(conditional.if_true),
                             depth_of(conditional.if_false)});
        }
        case ExprKind::List: {
            int depth = 0;
            for (const ExprPtr& item : static_cast<const ListExpr&>(expr).items)
                depth = std::max(depth, depth_of(item));
            return depth;
        }
        case ExprKind::Dict: {
            int depth = 0;
            for (const auto& [key, value] : static_cast<const DictExpr&>(expr).items)
                depth = std::max({depth, depth_of(key), depth_of(value)});
            return depth;
        }
    }
    return 0;
}

}  // namespace lmrun::jinja
