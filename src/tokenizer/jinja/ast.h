// Abstract syntax tree of a parsed Jinja template. Expressions and statement
// nodes are tagged by a kind enum; the interpreter switches on it and
// static_casts to the concrete struct. The tree is immutable after parsing,
// so one template can be rendered from many threads at once.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/value.h"

namespace lmrun::jinja {

enum class ExprKind {
    Literal,      // None, bools, numbers, strings
    Name,         // variable lookup
    GetAttr,      // obj.name
    GetItem,      // obj[index]
    Slice,        // obj[start:stop:step]
    Call,         // callee(args)
    Filter,       // operand | name(args)
    Test,         // operand is [not] name(args)
    Unary,        // not, -, +
    Binary,       // arithmetic, ~, and, or
    Compare,      // chained ==, !=, <, >, <=, >=, in, not in
    Conditional,  // a if cond else b
    List,         // [a, b] and tuples (a, b)
    Dict,         // {k: v}
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    Expr(ExprKind kind, SourcePos pos) : kind(kind), pos(pos) {}
    virtual ~Expr() = default;
    ExprKind kind;
    SourcePos pos;
    // Levels of the subtree rooted here (a leaf is 1): set by the parser, which bounds it so
    // that evaluating and destroying the tree (both recursive) stay shallow.
    int depth = 1;
};

// The largest depth among the direct children of `expr` (0 for a leaf).
int max_child_depth(const Expr& expr);

struct LiteralExpr : Expr {
    LiteralExpr(SourcePos pos, Value value) : Expr(ExprKind::Literal, pos), value(std::move(value)) {}
    Value value;
};

struct NameExpr : Expr {
    NameExpr(SourcePos pos, std::string name) : Expr(ExprKind::Name, pos), name(std::move(name)) {}
    std::string name;
};

struct GetAttrExpr : Expr {
    GetAttrExpr(SourcePos pos, ExprPtr object, std::string name)
        : Expr(ExprKind::GetAttr, pos), object(std::move(object)), name(std::move(name)) {}
    ExprPtr object;
    std::string name;
};

struct GetItemExpr : Expr {
    GetItemExpr(SourcePos pos, ExprPtr object, ExprPtr index)
        : Expr(ExprKind::GetItem, pos), object(std::move(object)), index(std::move(index)) {}
    ExprPtr object;
    ExprPtr index;
};

struct SliceExpr : Expr {
    SliceExpr(SourcePos pos, ExprPtr object) : Expr(ExprKind::Slice, pos), object(std::move(object)) {}
    ExprPtr object;
    ExprPtr start, stop, step;  // each may be null
};

struct CallArgExprs {
    std::vector<ExprPtr> positional;
    std::vector<std::pair<std::string, ExprPtr>> keyword;
};

struct CallExpr : Expr {
    CallExpr(SourcePos pos, ExprPtr callee) : Expr(ExprKind::Call, pos), callee(std::move(callee)) {}
    ExprPtr callee;
    CallArgExprs args;
};

// Also used for tests: `operand is not name(args)` has negated = true.
struct FilterExpr : Expr {
    FilterExpr(ExprKind kind, SourcePos pos, ExprPtr operand, std::string name)
        : Expr(kind, pos), operand(std::move(operand)), name(std::move(name)) {}
    ExprPtr operand;
    std::string name;
    CallArgExprs args;
    bool negated = false;
};

struct UnaryExpr : Expr {
    UnaryExpr(SourcePos pos, std::string op, ExprPtr operand)
        : Expr(ExprKind::Unary, pos), op(std::move(op)), operand(std::move(operand)) {}
    std::string op;  // "not", "-", "+"
    ExprPtr operand;
};

struct BinaryExpr : Expr {
    BinaryExpr(SourcePos pos, std::string op, ExprPtr left, ExprPtr right)
        : Expr(ExprKind::Binary, pos), op(std::move(op)), left(std::move(left)), right(std::move(right)) {}
    std::string op;  // + - * / // % ** ~ and or
    ExprPtr left;
    ExprPtr right;
};

struct CompareExpr : Expr {
    CompareExpr(SourcePos pos, ExprPtr first) : Expr(ExprKind::Compare, pos), first(std::move(first)) {}
    ExprPtr first;
    std::vector<std::pair<std::string, ExprPtr>> rest;  // op: == != < > <= >= in notin
};

struct ConditionalExpr : Expr {
    ConditionalExpr(SourcePos pos, ExprPtr condition, ExprPtr if_true, ExprPtr if_false)
        : Expr(ExprKind::Conditional, pos),
          condition(std::move(condition)),
          if_true(std::move(if_true)),
          if_false(std::move(if_false)) {}
    ExprPtr condition;
    ExprPtr if_true;
    ExprPtr if_false;  // null: undefined
};

struct ListExpr : Expr {
    explicit ListExpr(SourcePos pos) : Expr(ExprKind::List, pos) {}
    std::vector<ExprPtr> items;
};

struct DictExpr : Expr {
    explicit DictExpr(SourcePos pos) : Expr(ExprKind::Dict, pos) {}
    std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

enum class NodeKind { Text, Output, If, For, Set, SetBlock, Macro, Break, Continue, Scope };

struct Node;
using NodePtr = std::unique_ptr<Node>;
using NodeList = std::vector<NodePtr>;

struct Node {
    Node(NodeKind kind, SourcePos pos) : kind(kind), pos(pos) {}
    virtual ~Node() = default;
    NodeKind kind;
    SourcePos pos;
};

struct TextNode : Node {
    TextNode(SourcePos pos, std::string text) : Node(NodeKind::Text, pos), text(std::move(text)) {}
    std::string text;
};

struct OutputNode : Node {
    OutputNode(SourcePos pos, ExprPtr expr) : Node(NodeKind::Output, pos), expr(std::move(expr)) {}
    ExprPtr expr;
};

// if, then each elif: the first branch whose condition holds renders; else_body otherwise.
// (A list, not nested nodes: a chain of 100,000 elifs must not make the tree that deep.)
struct IfNode : Node {
    struct Branch {
        ExprPtr condition;
        NodeList body;
    };
    explicit IfNode(SourcePos pos) : Node(NodeKind::If, pos) {}
    std::vector<Branch> branches;
    NodeList else_body;
};

struct ForNode : Node {
    explicit ForNode(SourcePos pos) : Node(NodeKind::For, pos) {}
    std::vector<std::string> targets;  // one name, or several to unpack
    ExprPtr iterable;
    ExprPtr filter;  // `for x in xs if cond`, may be null
    NodeList body;
    NodeList else_body;  // rendered when there were no iterations
};

// {% set a = expr %}, {% set a, b = expr %} or {% set ns.attr = expr %}.
struct SetNode : Node {
    explicit SetNode(SourcePos pos) : Node(NodeKind::Set, pos) {}
    std::vector<std::string> targets;
    std::string attribute;  // non-empty: targets[0] is a namespace
    ExprPtr value;
};

// {% set name %}body{% endset %}
struct SetBlockNode : Node {
    explicit SetBlockNode(SourcePos pos) : Node(NodeKind::SetBlock, pos) {}
    std::string target;
    NodeList body;
};

struct MacroNode : Node {
    explicit MacroNode(SourcePos pos) : Node(NodeKind::Macro, pos) {}
    std::string name;
    std::vector<std::string> params;
    std::vector<ExprPtr> defaults;  // aligned with params, null when required
    NodeList body;
};

// A body rendered in place ({% generation %}); kept for HF's assistant masks.
struct ScopeNode : Node {
    explicit ScopeNode(SourcePos pos) : Node(NodeKind::Scope, pos) {}
    NodeList body;
};

struct Template {
    NodeList body;
};

}  // namespace lmrun::jinja
