// Typed errors the engine throws. Rule: only bad configuration or a failing device throws, and the
// message names the field and the fix; NaN, inf and skipped steps are data, never errors.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace mpx {

// A setting the user gave cannot work; `field` names it (e.g. "scaler.growth_factor"). what() is
// "field: message"; message() is the text without the field, for callers that add context and
// rethrow without naming the field twice.
class ConfigError : public std::runtime_error {
public:
    ConfigError(std::string field, std::string message)
        : std::runtime_error(field.empty() ? message : field + ": " + message),
          m_field(std::move(field)),
          m_message(std::move(message)) {}
    const std::string& field() const { return m_field; }
    const std::string& message() const { return m_message; }

private:
    std::string m_field;
    std::string m_message;
};

// The device (GPU, driver, memory) failed; the message says what to do instead.
class DeviceError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A file could not be read or written.
class IoError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace mpx
