// Cursor over lexer tokens shared by the expression and statement parsers,
// with a nesting guard so hostile templates cannot overflow the stack.
#pragma once

#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/result.h"
#include "tokenizer/jinja/lexer.h"

namespace lmrun::jinja {

class TokenStream {
  public:
    static constexpr int kMaxNesting = 200;

    explicit TokenStream(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

    const Token& peek(size_t ahead = 0) const {
        const size_t index = index_ + ahead;
        return index < tokens_.size() ? tokens_[index] : tokens_.back();
    }
    const Token& next() {
        const Token& token = peek();
        if (index_ + 1 < tokens_.size()) ++index_;
        return token;
    }
    bool at(TokenKind kind) const { return peek().kind == kind; }
    bool at_operator(std::string_view op, size_t ahead = 0) const {
        return peek(ahead).kind == TokenKind::Operator && peek(ahead).text == op;
    }
    bool at_name(std::string_view name, size_t ahead = 0) const {
        return peek(ahead).kind == TokenKind::Name && peek(ahead).text == name;
    }
    bool accept_operator(std::string_view op) {
        if (!at_operator(op)) return false;
        next();
        return true;
    }
    bool accept_name(std::string_view name) {
        if (!at_name(name)) return false;
        next();
        return true;
    }

    Error error_at(const Token& token, const std::string& message) const {
        return make_error("line {}, column {}: {}", token.pos.line, token.pos.column, message);
    }
    // Past kMaxNesting: a limit of the parser, not a syntax error.
    Error too_deep(std::string_view what) const {
        Error error =
            error_at(peek(), fmt::format("{} nested too deeply (more than {} levels)", what, kMaxNesting));
        error.kind = ErrorKind::ResourceExhausted;
        return error;
    }
    Error unexpected(std::string_view expected) const {
        return error_at(peek(), fmt::format("expected {}, got {}", expected, describe(peek())));
    }
    Status expect_operator(std::string_view op) {
        if (!accept_operator(op)) return unexpected(fmt::format("'{}'", op));
        return ok_status();
    }
    Status expect(TokenKind kind, std::string_view what) {
        if (!at(kind)) return unexpected(what);
        next();
        return ok_status();
    }
    Result<std::string> expect_name() {
        if (!at(TokenKind::Name)) return unexpected("a name");
        return next().text;
    }

    static std::string describe(const Token& token) {
        switch (token.kind) {
            case TokenKind::Text:
                return "template text";
            case TokenKind::VariableBegin:
                return "'{{'";
            case TokenKind::VariableEnd:
                return "'}}'";
            case TokenKind::BlockBegin:
                return "'{%'";
            case TokenKind::BlockEnd:
                return "'%}'";
            case TokenKind::Name:
            case TokenKind::Integer:
            case TokenKind::Float:
            case TokenKind::Operator:
                return fmt::format("'{}'", token.text);
            case TokenKind::String:
                return "a string";
            case TokenKind::End:
                return "end of template";
        }
        return "token";
    }

    // RAII nesting counter; check ok() after constructing.
    class NestingGuard {
      public:
        explicit NestingGuard(TokenStream& stream) : stream_(stream) { ++stream_.nesting_; }
        ~NestingGuard() { --stream_.nesting_; }
        NestingGuard(const NestingGuard&) = delete;
        NestingGuard& operator=(const NestingGuard&) = delete;
        bool ok() const { return stream_.nesting_ <= kMaxNesting; }

      private:
        TokenStream& stream_;
    };

  private:
    std::vector<Token> tokens_;  // always ends with an End token
    size_t index_ = 0;
    int nesting_ = 0;
};

}  // namespace lmrun::jinja
