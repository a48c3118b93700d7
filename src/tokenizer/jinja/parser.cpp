#include "tokenizer/jinja/parser.h"

#include <initializer_list>

#include "tokenizer/jinja/expression_parser.h"
#include "tokenizer/jinja/token_stream.h"

namespace lmrun::jinja {
namespace {

class StatementParser {
  public:
    explicit StatementParser(std::vector<Token> tokens) : stream_(std::move(tokens)) {}

    Result<std::unique_ptr<Template>> run() {
        auto result = std::make_unique<Template>();
        std::string end_keyword;
        LMRUN_RETURN_IF_ERROR(parse_body({}, result->body, end_keyword));
        return result;
    }

  private:
    // Parses nodes until `{% <one of end_keywords>`; consumes the keyword and
    // stores it in `end_keyword`. Empty end_keywords: parse to the end.
    Status parse_body(std::initializer_list<std::string_view> end_keywords, NodeList& body,
                      std::string& end_keyword, SourcePos opened_at = {}) {
        TokenStream::NestingGuard guard(stream_);
        if (!guard.ok()) return stream_.too_deep("blocks");
        while (!stream_.at(TokenKind::End)) {
            const Token& token = stream_.peek();
            if (token.kind == TokenKind::Text) {
                body.push_back(std::make_unique<TextNode>(token.pos, stream_.next().text));
            } else if (token.kind == TokenKind::VariableBegin) {
                stream_.next();
                LMRUN_ASSIGN_OR_RETURN(ExprPtr expr, parse_tuple(stream_));
                LMRUN_RETURN_IF_ERROR(stream_.expect(TokenKind::VariableEnd, "'}}'"));
                body.push_back(std::make_unique<OutputNode>(token.pos, std::move(expr)));
            } else if (token.kind == TokenKind::BlockBegin) {
                const Token& keyword = stream_.peek(1);
                for (const std::string_view end : end_keywords) {
                    if (keyword.kind == TokenKind::Name && keyword.text == end) {
                        stream_.next();
                        end_keyword = stream_.next().text;
                        return ok_status();
                    }
                }
                stream_.next();
                LMRUN_ASSIGN_OR_RETURN(NodePtr node, parse_statement());
                if (node) body.push_back(std::move(node));
            } else {
                return stream_.unexpected("template text or a tag");
            }
        }
        if (end_keywords.size() == 0) return ok_status();
        return make_error("line {}, column {}: unexpected end of template, expected '{}' to close this tag",
                          opened_at.line, opened_at.column, *(end_keywords.end() - 1));
    }

    Status expect_block_end() { return stream_.expect(TokenKind::BlockEnd, "'%}'"); }

    Result<NodePtr> parse_statement() {
        const Token keyword = stream_.peek();
        if (keyword.kind != TokenKind::Name) return stream_.unexpected("a statement name");
        stream_.next();
        const std::string& name = keyword.text;
        if (name == "if") return parse_if(keyword.pos);
        if (name == "for") return parse_for(keyword.pos);
        if (name == "set") return parse_set(keyword.pos);
        if (name == "macro") return parse_macro(keyword.pos);
        if (name == "generation") return parse_scope(keyword.pos, "endgeneration");
        if (name == "break" || name == "continue") {
            if (loop_depth_ == 0)
                return stream_.error_at(keyword, fmt::format("'{}' outside of a loop", name));
            LMRUN_RETURN_IF_ERROR(expect_block_end());
            return std::make_unique<Node>(name == "break" ? NodeKind::Break : NodeKind::Continue,
                                          keyword.pos);
        }
        return stream_.error_at(keyword, fmt::format("unknown or unsupported tag '{}'", name));
    }

    Result<NodePtr> parse_if(SourcePos pos) {
        auto node = std::make_unique<IfNode>(pos);
        std::string end = "elif";
        while (end == "elif") {  // the if itself, then every elif: a loop, however long the chain
            IfNode::Branch& branch = node->branches.emplace_back();
            LMRUN_ASSIGN_OR_RETURN(branch.condition, parse_tuple(stream_, false));
            LMRUN_RETURN_IF_ERROR(expect_block_end());
            LMRUN_RETURN_IF_ERROR(parse_body({"elif", "else", "endif"}, branch.body, end, pos));
        }
        if (end == "else") {
            LMRUN_RETURN_IF_ERROR(expect_block_end());
            LMRUN_RETURN_IF_ERROR(parse_body({"endif"}, node->else_body, end, pos));
        }
        LMRUN_RETURN_IF_ERROR(expect_block_end());
        return NodePtr(std::move(node));
    }

    Result<std::vector<std::string>> parse_targets() {
        std::vector<std::string> targets;
        const bool parenthesized = stream_.accept_operator("(");
        do {
            LMRUN_ASSIGN_OR_RETURN(std::string name, stream_.expect_name());
            targets.push_back(std::move(name));
        } while (stream_.accept_operator(","));
        if (parenthesized) LMRUN_RETURN_IF_ERROR(stream_.expect_operator(")"));
        return targets;
    }

    Result<NodePtr> parse_for(SourcePos pos) {
        auto node = std::make_unique<ForNode>(pos);
        LMRUN_ASSIGN_OR_RETURN(node->targets, parse_targets());
        if (!stream_.accept_name("in")) return stream_.unexpected("'in'");
        LMRUN_ASSIGN_OR_RETURN(node->iterable, parse_tuple(stream_, false));
        if (stream_.accept_name("if")) {
            LMRUN_ASSIGN_OR_RETURN(node->filter, parse_expression(stream_));
        }
        if (stream_.at_name("recursive"))
            return stream_.error_at(stream_.peek(), "recursive loops are not supported");
        LMRUN_RETURN_IF_ERROR(expect_block_end());
        std::string end;
        ++loop_depth_;
        const Status body_status = parse_body({"else", "endfor"}, node->body, end, pos);
        --loop_depth_;
        LMRUN_RETURN_IF_ERROR(body_status);
        if (end == "else") {
            LMRUN_RETURN_IF_ERROR(expect_block_end());
            LMRUN_RETURN_IF_ERROR(parse_body({"endfor"}, node->else_body, end, pos));
        }
        LMRUN_RETURN_IF_ERROR(expect_block_end());
        return NodePtr(std::move(node));
    }

    Result<NodePtr> parse_set(SourcePos pos) {
        LMRUN_ASSIGN_OR_RETURN(std::string first, stream_.expect_name());
        if (stream_.accept_operator(".")) {
            auto node = std::make_unique<SetNode>(pos);
            node->targets.push_back(std::move(first));
            LMRUN_ASSIGN_OR_RETURN(node->attribute, stream_.expect_name());
            LMRUN_RETURN_IF_ERROR(stream_.expect_operator("="));
            LMRUN_ASSIGN_OR_RETURN(node->value, parse_tuple(stream_));
            LMRUN_RETURN_IF_ERROR(expect_block_end());
            return NodePtr(std::move(node));
        }
        if (stream_.at(TokenKind::BlockEnd)) {
            stream_.next();
            auto node = std::make_unique<SetBlockNode>(pos);
            node->target = std::move(first);
            std::string end;
            LMRUN_RETURN_IF_ERROR(parse_body({"endset"}, node->body, end, pos));
            LMRUN_RETURN_IF_ERROR(expect_block_end());
            return NodePtr(std::move(node));
        }
        auto node = std::make_unique<SetNode>(pos);
        node->targets.push_back(std::move(first));
        while (stream_.accept_operator(",")) {
            LMRUN_ASSIGN_OR_RETURN(std::string name, stream_.expect_name());
            node->targets.push_back(std::move(name));
        }
        LMRUN_RETURN_IF_ERROR(stream_.expect_operator("="));
        LMRUN_ASSIGN_OR_RETURN(node->value, parse_tuple(stream_));
        LMRUN_RETURN_IF_ERROR(expect_block_end());
        return NodePtr(std::move(node));
    }

    Result<NodePtr> parse_macro(SourcePos pos) {
        auto node = std::make_unique<MacroNode>(pos);
        LMRUN_ASSIGN_OR_RETURN(node->name, stream_.expect_name());
        LMRUN_RETURN_IF_ERROR(stream_.expect_operator("("));
        while (!stream_.at_operator(")")) {
            LMRUN_ASSIGN_OR_RETURN(std::string param, stream_.expect_name());
            ExprPtr default_value;
            if (stream_.accept_operator("=")) {
                LMRUN_ASSIGN_OR_RETURN(default_value, parse_expression(stream_));
            } else if (!node->defaults.empty() && node->defaults.back()) {
                return stream_.error_at(stream_.peek(), "non-default argument follows default argument");
            }
            node->params.push_back(std::move(param));
            node->defaults.push_back(std::move(default_value));
            if (!stream_.accept_operator(",")) break;
        }
        LMRUN_RETURN_IF_ERROR(stream_.expect_operator(")"));
        LMRUN_RETURN_IF_ERROR(expect_block_end());
        // A macro body is a new function: loop controls of an enclosing loop do not apply.
        const int saved_loop_depth = loop_depth_;
        loop_depth_ = 0;
        std::string end;
        const Status body_status = parse_body({"endmacro"}, node->body, end, pos);
        loop_depth_ = saved_loop_depth;
        LMRUN_RETURN_IF_ERROR(body_status);
        LMRUN_RETURN_IF_ERROR(expect_block_end());
        return NodePtr(std::move(node));
    }

    Result<NodePtr> parse_scope(SourcePos pos, std::string_view end_keyword) {
        auto node = std::make_unique<ScopeNode>(pos);
        LMRUN_RETURN_IF_ERROR(expect_block_end());
        std::string end;
        LMRUN_RETURN_IF_ERROR(parse_body({end_keyword}, node->body, end, pos));
        LMRUN_RETURN_IF_ERROR(expect_block_end());
        return NodePtr(std::move(node));
    }

    TokenStream stream_;
    int loop_depth_ = 0;
};

}  // namespace

Result<std::unique_ptr<Template>> parse_template(std::string_view source) {
    if (source.size() > kMaxTemplateBytes)
        return make_error(ErrorKind::ResourceExhausted, "template is {} bytes, more than the limit of {}",
                          source.size(), kMaxTemplateBytes);
    LMRUN_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source));
    return StatementParser(std::move(tokens)).run();
}

}  // namespace lmrun::jinja
